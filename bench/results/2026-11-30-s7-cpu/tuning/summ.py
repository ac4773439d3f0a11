import json,sys,glob,os
# usage: summ.py DIR...  -> per tag: per space 5%/10%/reach for each policy row (not "best seen")
for d in sys.argv[1:]:
    tag=os.path.basename(d.rstrip('/'))
    cells=[]; agg={}
    for sp in ['s1','s2','s3','s4','s5','s6','gemm_bf16','row_softmax']:
        f=os.path.join(d,sp,'results.json')
        if not os.path.exists(f): continue
        j=json.load(open(f))
        for r in j['rows']:
            if 'best seen' in r['name'] or not r['name'].startswith('kpilot'): continue
            pol=r['name'].split()[1]
            runs=[x for x in j['runs'] if x['policy']==pol]
            reach=sum(1 for x in runs if x['evals_to_95'] is not None and x['evals_to_95']<=j['budgets'][-1][1])/len(runs)
            m5=r['at']['0.05']['mean']; m10=r['at']['0.1']['mean']; m1=r['at']['0.01']['mean']
            cells.append(f"{sp}:{pol} {m1:.3f}/{m5:.3f}/{m10:.3f}/{reach:.0%}")
            if sp.startswith('s'): agg.setdefault(pol,[]).append((m1,m5,m10,reach))
    print(tag)
    for c in cells: print('  ',c)
    for pol,v in agg.items():
        n=len(v); print(f"   synth mean {pol}: {sum(x[0] for x in v)/n:.3f}/{sum(x[1] for x in v)/n:.3f}/{sum(x[2] for x in v)/n:.3f}/{sum(x[3] for x in v)/n:.0%}")
