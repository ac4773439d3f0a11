import json,sys,os
tags=sys.argv[1:]
sp=['s1','s2','s3','s4','s5','s6','gemm_bf16','row_softmax','conv2d','gauss_sum']
print('%-12s'%'space'+''.join('%28s'%t for t in tags))
agg={t:[] for t in tags}
for s in sp:
    row='%-12s'%s
    for t in tags:
        p=f'/tmp/tune/{t}/{s}/results.json'
        if not os.path.exists(p): row+='%28s'%'-'; continue
        d=json.load(open(p)); r=[x for x in d['rows'] if x['name'].startswith('kpilot ')][0]
        a=r['at']; ks=list(a)
        v=[a[k]['mean'] for k in ks]; reach=r['evals_to_95']['within_10pct_share']
        agg[t].append(v+[reach])
        row+='%28s'%(' '.join('%.3f'%x for x in v)+' %3.0f%%'%(100*reach))
    print(row)
row='%-12s'%'mean'
for t in tags:
    if agg[t]:
        n=len(agg[t]); m=[sum(x[i] for x in agg[t])/n for i in range(len(agg[t][0]))]
        row+='%28s'%(' '.join('%.3f'%x for x in m[:-1])+' %3.0f%%'%(100*m[-1]))
print(row)
