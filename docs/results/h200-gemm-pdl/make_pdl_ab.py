"""The pdl A/B: for each public shape, its record kernel(s) and their gemm_pdl twins, as a pseudo campaign
folder (hall_of_fame/<shape>.json) for `evogemm bench --per-shape`; builds them into the cache given."""
import glob, json, sys, time
sys.path.insert(0, '/work/main')
from genome import Genome
from evaluator.compile import Compiler
from pathlib import Path

PICK = {
 "64x64x4096": ["9a567b67"], "128x128x128": ["ae53e10f"], "256x4096x256": ["b5806447"],
 "1024x1024x1024": ["7667f7ab"], "128x4096x4096": ["441f4f68"], "2048x2048x2048": ["9a69bf1a"],
 "256x12288x4096": ["21f49f79"], "4096x1024x1024": ["972e407a"], "8192x64x8192": ["b91a590d"],
 "16x6144x4096": ["fa870b8d"], "16x4096x14336": ["d0fb942b"], "128x28672x4096": ["3dca24b0"],
 "128x4096x14336": ["d477883e"], "1024x6144x4096": ["972e407a"], "1000x1000x1000": ["8198793e", "d4b47749"],
 "96x3072x768": ["df809790"],
}

def find(prefixes):
    found = {}
    for f in glob.glob('/work/main/docs/results/**/*.json', recursive=True):
        try: d = json.load(open(f))
        except Exception: continue
        stack = [d]
        while stack:
            x = stack.pop()
            if isinstance(x, dict):
                if 'family' in x and 'params' in x and isinstance(x.get('id'), str):
                    for p in prefixes:
                        if x['id'].startswith(p) and p not in found: found[p] = Genome.from_dict(x)
                else: stack.extend(x.values())
            elif isinstance(x, list): stack.extend(x)
    return found

if __name__ == '__main__':
    out = Path(sys.argv[1]); cache = sys.argv[2]
    pre = sorted({p for v in PICK.values() for p in v})
    g = find(pre)
    assert len(g) == len(pre), set(pre) - set(g)
    twins = {p: g[p].with_params(gemm_pdl=1) for p in pre}
    (out / 'hall_of_fame').mkdir(parents=True, exist_ok=True)
    for shape, ps in PICK.items():
        entries = [{"genome": x.to_dict()} for p in ps for x in (g[p], twins[p])]
        (out / 'hall_of_fame' / f'{shape}.json').write_text(json.dumps(entries, indent=1) + '\n')
    for p in pre: print(p, g[p].family, '->', twins[p].id)
    gs = [g[p] for p in pre] + [twins[p] for p in pre]
    if sys.argv[3:] == ['--no-build']: sys.exit(0)
    c = Compiler.default(cache, jobs=2)
    t0 = time.monotonic()
    res = c.build_many(gs)
    bad = [(x.id, r.reason) for x, r in zip(gs, res) if not r.ok]
    print(f'{len(gs) - len(bad)} ok, {len(bad)} failed, {time.monotonic() - t0:.0f} s', flush=True)
    for b in bad: print('FAILED', *b)
