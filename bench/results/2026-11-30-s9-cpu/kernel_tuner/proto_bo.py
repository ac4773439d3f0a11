"""Session 9 experiment (not part of kpilot): a plain sequential Bayesian optimizer over a space file,
to find which ingredient separates a Bayesian optimizer from kpilot's generator on the tuning spaces.
Run with the Kernel Tuner venv's python (numpy, scipy): proto_bo.py SPACES(comma) VARIANTS(comma) SEEDS.
Results: proto_bo.txt."""
import json, sys, math, random, itertools
import numpy as np
from multiprocessing import Pool

def load(path):
    d = json.load(open(path))
    names = list(d['configs'][0]['params'].keys())
    vals = {n: [] for n in names}
    # value order from task.toml if available
    try:
        import tomllib, os
        t = tomllib.load(open(os.path.join(d['task_dir'], 'task.toml'), 'rb'))
        for n in names: vals[n] = [str(v) for v in t['params'][n]] if not isinstance(t['params'][n], dict) else [str(v) for v in t['params'][n]['values']]
    except Exception as e:
        for c in d['configs']:
            for n in names:
                if c['params'][n] not in vals[n]: vals[n].append(c['params'][n])
        for n in names:
            try: vals[n].sort(key=float)
            except: pass
    idx = np.array([[vals[n].index(c['params'][n]) for n in names] for c in d['configs']])
    sp = np.array([float(c['speedup']) if c['status'] == 'passed' else 0.0 for c in d['configs']])
    return names, vals, idx, sp

def coords(idx, vals, names, mode):
    lens = np.array([len(vals[n]) for n in names], float)
    if mode == 'kt':
        eps = 1.0 / lens.max()
        return idx * eps + 0.5 * eps
    return idx / np.maximum(lens - 1, 1)

def k_matern32(A, B, ell):
    d = np.sqrt(((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)) / ell
    return (1 + math.sqrt(3) * d) * np.exp(-math.sqrt(3) * d)

def k_ours(A, B, la=0.4, lp=0.5, w=0.5):
    D = A[:, None, :] - B[None, :, :]
    add = np.exp(-D ** 2 / (2 * la * la)).mean(-1)
    prod = np.exp(-(D ** 2).sum(-1) / (2 * lp * lp))
    return (1 - w) * add + w * prod

def gp(X, y, Xs, kern, noise):
    m, s = y.mean(), y.std() or 1.0
    z = (y - m) / s
    K = kern(X, X) + noise * np.eye(len(X))
    L = np.linalg.cholesky(K)
    a = np.linalg.solve(L.T, np.linalg.solve(L, z))
    Ks = kern(Xs, X)
    mu = Ks @ a
    v = np.linalg.solve(L, Ks.T)
    var = np.clip(1.0 - (v * v).sum(0), 1e-12, None)  # kernels have k(x,x)=1
    return mu * s + m, np.sqrt(var) * s

from scipy.stats import norm
def run(args):
    path, seed, budget, V = args
    names, vals, idx, sp = load(path)
    X = coords(idx, vals, names, V.get('coords', 'kt'))
    rng = np.random.default_rng(seed)
    n = len(sp); best = sp.max()
    seen = []
    ninit = V.get('init', 6)
    # random init (LHS-ish not needed for a first test)
    order = rng.permutation(n)
    for i in order:
        if len(seen) >= ninit: break
        seen.append(i)
    if V.get('kern') == 'ours': kern = lambda A, B: k_ours(A, B)
    else:
        ell = V.get('ell', 1.5); kern = lambda A, B: k_matern32(A, B, ell)
    noise = V.get('noise', 1e-6)
    while len(seen) < budget:
        ok = [i for i in seen if sp[i] > 0]
        if V.get('target') == 'log':
            y = np.log(sp[ok])  # maximize
        else:
            y = -1.0 / sp[ok]   # maximize -time
        if V.get('fail') == 'worst':
            bad = [i for i in seen if sp[i] <= 0]
            ok = ok + bad; y = np.concatenate([y, np.full(len(bad), y.min())])
        lag = V.get('lag', 0)
        if lag:  # the last `lag` picks have not come back: believe their predicted means
            known = seen[:len(seen)-lag]
            ok = [i for i in known if sp[i] > 0]
            y = np.log(sp[ok]) if V.get('target') == 'log' else -1.0 / sp[ok]
            if V.get('fail') == 'worst':
                bad = [i for i in known if sp[i] <= 0]
                ok = ok + bad; y = np.concatenate([y, np.full(len(bad), y.min())])
            Xk, yk = X[ok], y
            for p in seen[len(seen)-lag:]:
                m1, _ = gp(Xk, yk, X[[p]], kern, noise)
                Xk = np.vstack([Xk, X[[p]]]); yk = np.append(yk, m1[0])
        else:
            Xk, yk = X[ok], y
        for _ in range(V.get('batch', 1)):
            if len(seen) >= budget: break
            taken = set(seen)
            cand = np.array([i for i in range(n) if i not in taken])
            mu, sd = gp(Xk, yk, X[cand], kern, noise)
            fb = yk.max() if not lag else y.max()
            if V.get('acq', 'ei') == 'ei':
                z = (mu - fb) / (sd + 1e-12)
                a = (mu - fb) * norm.cdf(z) + sd * norm.pdf(z)
            else:
                a = mu + V.get('kappa', 1.0) * sd
            if V.get('feas'):
                known = seen[:len(seen)-lag] if lag else seen
                fy = np.array([1.0 if sp[i] > 0 else 0.0 for i in known])
                if fy.min() < 1:
                    K = kern(X[known], X[known]) + 0.1 * np.eye(len(known))
                    pm = 0.9 + kern(X[cand], X[known]) @ np.linalg.solve(K, fy - 0.9)
                    a = a * np.clip(pm, 0.02, 1.0)
            j = int(np.argmax(a)); p = int(cand[j])
            seen.append(p)
            Xk = np.vstack([Xk, X[[p]]]); yk = np.append(yk, mu[j])
    curve = np.maximum.accumulate(sp[seen]) / best
    return curve

OURS = {'kern': 'ours', 'coords': 'ours', 'target': 'log', 'noise': 0.01}
V = {
 'o_worst': dict(OURS, fail='worst'),
 'o_feas': dict(OURS, feas=1),
 'o_b2': dict(OURS, batch=2),
 'o_b2lag2': dict(OURS, batch=2, lag=2),
 'o_ucb': dict(OURS, acq='ucb'),
 'o_all': dict(OURS, fail='worst', batch=2, lag=2, acq='ucb'),
 'kt': {},
 'kt_log': {'target': 'log'},
 'kt_ourcoords': {'coords': 'ours'},
 'ours_kern': {'kern': 'ours', 'coords': 'ours', 'target': 'log', 'noise': 0.01},
 'ours_kern_time': {'kern': 'ours', 'coords': 'ours', 'noise': 0.01},
 'kt_init6': {'init': 6},
 'kt_ucb': {'acq': 'ucb'},
 'kt_ell05': {'ell': 0.5},
 'kt_noise01': {'noise': 0.01},
}
if __name__ == '__main__':
    spaces = sys.argv[1].split(','); vs = sys.argv[2].split(','); seeds = int(sys.argv[3])
    with Pool(2) as p:
        for v in vs:
            row = [v]
            tot = []
            for s in spaces:
                names, vals, idx, sp = load(s); n = len(sp); b = round(0.1 * n)
                cs = p.map(run, [(s, seed, b, V[v]) for seed in range(seeds)])
                f = [np.mean([c[min(k, len(c)) - 1] for c in cs]) for k in (round(0.01*n), round(0.05*n), b)]
                tot.append(f)
                row.append('%s %.3f/%.3f/%.3f' % (s.split('/')[-1][:-5], *f))
            row.append('MEAN %.3f/%.3f/%.3f' % tuple(np.mean(tot, 0)))
            print(' | '.join(row), flush=True)
