"""Session 11 experiment: does a model that also sees each config's compile-time resources
(registers, spills, shared memory: known after compiling, before timing) find the best sooner?
Run with a python that has numpy and scipy: proto_feat.py SPACES(comma) VARIANTS(comma) SEEDS. Results: feat50.txt."""
import json, os, sys, math
import numpy as np
# kpilot's kernel and the GP, from session 9's prototype
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '2026-11-30-s9-cpu', 'kernel_tuner'))
from proto_bo import k_ours, gp  # noqa: E402
from multiprocessing import Pool
from scipy.stats import norm

def load(path):
    d = json.load(open(path))
    names = list(d['configs'][0]['params'].keys())
    import tomllib, os
    t = tomllib.load(open(os.path.join(d['task_dir'], 'task.toml'), 'rb'))
    vals = {}
    for n in names:
        v = t['params'][n]
        v = v['values'] if isinstance(v, dict) else v
        vals[n] = [str(x) for x in v]
    idx = np.array([[vals[n].index(c['params'][n]) for n in names] for c in d['configs']])
    sp = np.array([float(c['speedup']) if c['status'] == 'passed' else 0.0 for c in d['configs']])
    F = []
    for c in d['configs']:
        rs = c.get('resources') or []
        reg = max([r['registers'] for r in rs] or [0])
        sp_b = sum(r['spill_store_bytes'] + r['spill_load_bytes'] for r in rs)
        sm = max([r['shared_bytes'] for r in rs] or [0])
        mix = rs[0].get('mix', {}) if rs else {}
        tot = mix.get('total', 0)
        F.append([reg / 256.0, math.log2(1 + sp_b) / 12.0, math.log2(1 + sm) / 17.0, math.log2(1 + tot) / 14.0])
    return names, vals, idx, sp, np.array(F)

def coords(idx, vals, names):
    lens = np.array([len(vals[n]) for n in names], float)
    return idx / np.maximum(lens - 1, 1)

def ei(mu, sd, fb):
    z = (mu - fb) / (sd + 1e-12)
    return (mu - fb) * norm.cdf(z) + sd * norm.pdf(z)

def run(args):
    path, seed, budget, V = args
    names, vals, idx, sp, F = load(path)
    C = coords(idx, vals, names)
    fsel = V.get('feats', [])
    Xf = np.hstack([C, F[:, fsel] * V.get('fscale', 1.0)]) if fsel else C
    rng = np.random.default_rng(seed)
    n = len(sp); best = sp.max()
    seen = list(rng.permutation(n)[:6])
    kern = lambda A, B: k_ours(A, B, V.get('la', 0.4), V.get('lp', 0.5), V.get('w', 0.5))
    compiled = set(seen)
    while len(seen) < budget:
        ok = [i for i in seen if sp[i] > 0]
        y = np.log(sp[ok])
        taken = set(seen)
        cand = np.array([i for i in range(n) if i not in taken])
        topk = V.get('topk', 0)
        if topk:
            mu, sd = gp(C[ok], y, C[cand], kern, 0.01)
            a = ei(mu, sd, y.max())
            order = np.argsort(-a, kind='stable')[:topk]
            cand = cand[order]
            compiled.update(cand.tolist())
        mu, sd = gp(Xf[ok], y, Xf[cand], kern, 0.01)
        a = ei(mu, sd, y.max())
        p = int(cand[int(np.argmax(a))])
        seen.append(p)
    curve = np.maximum.accumulate(sp[seen]) / best
    return curve, len(compiled) if V.get('topk') else n

V = {
 'base': {},
 'reg': {'feats': [0]},
 'reg_spill': {'feats': [0, 1]},
 'rss': {'feats': [0, 1, 2]},
 'all4': {'feats': [0, 1, 2, 3]},
 'rss_k16': {'feats': [0, 1, 2], 'topk': 16},
 'rss_k32': {'feats': [0, 1, 2], 'topk': 32},
 'rss_x2': {'feats': [0, 1, 2], 'fscale': 2.0},
}
if __name__ == '__main__':
    spaces = sys.argv[1].split(','); vs = sys.argv[2].split(','); seeds = int(sys.argv[3])
    with Pool(2) as p:
        for v in vs:
            row = [v]; tot = []
            for s in spaces:
                n = len(json.load(open(s))['configs']); b = round(0.1 * n)
                res = p.map(run, [(s, seed, b, V[v]) for seed in range(seeds)])
                cs = [r[0] for r in res]
                f = [np.mean([c[min(k, len(c)) - 1] for c in cs]) for k in (round(0.01*n), round(0.02*n), round(0.05*n), b)]
                reach = np.mean([c[-1] >= 0.95 for c in cs])
                f.append(reach); tot.append(f)
                row.append('%s %.3f/%.3f/%.3f/%.3f/%d%% c%d' % (s.split('/')[-1][:-5], *f[:4], 100*f[4], np.mean([r[1] for r in res])))
            m = np.mean(tot, 0)
            row.append('MEAN %.3f/%.3f/%.3f/%.3f/%d%%' % (*m[:4], 100*m[4]))
            print(' | '.join(row), flush=True)
