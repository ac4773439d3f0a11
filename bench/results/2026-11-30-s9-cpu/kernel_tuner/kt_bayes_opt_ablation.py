"""Session 9 experiment (not part of kpilot): Kernel Tuner's bayes_opt with its strategy options varied,
through bench/kernel_tuner_compare.py's tune(). Run with the Kernel Tuner venv's python:
kt_bayes_opt_ablation.py SPACES(comma) VARIANTS(comma) SEEDS. Results: kt_bayes_opt_ablation_30seeds.txt."""
import sys, os, json, copy, multiprocessing as mp
sys.path.insert(0, '/work/main/bench')
import kernel_tuner_compare as ktc, search_efficiency as se
VARIANTS = {
 'default': {},
 'ei': {'method': 'ei'},
 'lcb': {'method': 'lcb'},
 'poi': {'method': 'poi'},
 'ei_fix': {'method': 'ei', 'methodparams': {'explorationfactor': 0.01}},
 'multi_fix': {'methodparams': {'explorationfactor': 0.01}},
 'multifast': {'method': 'multi-fast'},
 'pop10': {'popsize': 10},
 'x1000': {},   # times scaled by 1000
 'm52': {'covariancekernel': 'matern52'},
 'ls05': {'covariancelengthscale': 0.5},
}
def prep(space_path, scale, out):
    space, speedup, counts = se.load_space(space_path)
    keys = ktc.param_order(space)
    cache = ktc.to_cache(space, keys)
    if scale != 1:
        for e in cache['cache'].values():
            if isinstance(e['time'], float):
                e['time'] *= scale; e['times'] = [x*scale for x in e['times']]
    f = os.path.join(out, f'cache_{scale}.json')
    json.dump(cache, open(f, 'w'))
    return f, cache, speedup, max(speedup.values()), keys, len(space['configs'])
def job(args):
    cf, var, seed, budget = args
    cache = json.load(open(cf))
    opts = copy.deepcopy(VARIANTS[var])
    try:
        res = ktc.tune(cf, cache, 'bayes_opt', seed, budget, opts)
    except Exception as e:
        return None
    keys = cache['tune_params_keys']
    return [{k: str(r[k]) for k in keys} for r in res if r is not None]
if __name__ == '__main__':
    spaces = sys.argv[1].split(','); variants = sys.argv[2].split(','); seeds = int(sys.argv[3])
    for sp in spaces:
        out = f'/tmp/abl/{os.path.basename(sp)}'; os.makedirs(out, exist_ok=True)
        prepared = {}
        for s in (1, 1000):
            prepared[s] = prep(sp, s, out)
        line = [os.path.basename(sp)]
        for v in variants:
            cf, cache, speedup, best, keys, n = prepared[1000 if v == 'x1000' else 1]
            budget = round(0.1 * n); b1 = max(1, round(0.01*n)); b5 = round(0.05*n)
            with mp.Pool(2) as p:
                runs = p.map(job, [(cf, v, s, budget) for s in range(1, seeds+1)])
            fr = {b1: [], b5: [], budget: []}
            for r in runs:
                if r is None: continue
                res = []
                for pp in r:
                    e = cache['cache'][','.join(str(ktc.typed(pp[k])) for k in keys)]
                    res.append(dict(pp, time=e['time']) if isinstance(e['time'], float) else dict(pp, __error__=True))
                c = ktc.curve(res, keys, speedup)
                for b in fr: fr[b].append((c[min(b, len(c))-1] if c else 0)/best)
            line.append(f"{v}: " + "/".join(f"{sum(x)/max(1,len(x)):.3f}" for x in fr.values()) + f" (n={len(fr[budget])})")
        print(" | ".join(line), flush=True)
