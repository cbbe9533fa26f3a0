"""The first-round A/B of h200-knob-fit: each seed and its knob-fitted twin, as timed in one bench.

    python docs/results/h200-knob-fit/pairs.py asrun [per-shape]   # the fit as it ran in device call 1
    python docs/results/h200-knob-fit/pairs.py final               # the fit of commit 86d3dab

"asrun": skinny_mma fitting cluster_k and no per-split reduction term in the split-K model, as the
pairs were chosen; "final": the shipped models, over the pairs of the same bench that they still fit."""
import json, math, collections, sys, dataclasses
import evaluator.sim_splitk as sks
from genome import Genome, Problem
from evolution.seeding import fit_shape_knobs, model_order
from templates import family_registry
reg=family_registry()
asrun = sys.argv[1]=="asrun"
if asrun: sks.REDUCE_LOAD_US=0.0
def space(f):
    s=reg.space(f)
    return dataclasses.replace(s, shape_knobs=("cluster_k",)) if asrun and f=="skinny_mma" else s
fam=collections.defaultdict(list); per=collections.defaultdict(list)
for f in ("docs/results/h200-knob-fit/first-round-ab/unseen/bench.json","docs/results/h200-knob-fit/first-round-ab/public/bench.json"):
    d=json.load(open(f))
    for s in d["shapes"]:
        pr=Problem.parse(s["problem"]); price=model_order(pr)
        t={}
        for k in s["kernels"]:
            m=k.get("measurement") or {}
            if m.get("status")!="ok": continue
            g=Genome.from_dict(k["genome"]); t[g.id]=(m["device"]["median_us"],g)
        for gid,(us,g) in t.items():
            f_=fit_shape_knobs(g,pr,space(g.family),price)
            if f_.id!=g.id and f_.id in t:
                fam[g.family].append(us/t[f_.id][0]); per[s["problem"]].append(us/t[f_.id][0])
def row(k,v): return f"| {k} | {len(v)} | {math.exp(sum(map(math.log,v))/len(v)):.3f} | {sum(r>1.01 for r in v)} | {sum(r<0.99 for r in v)} | {min(v):.3f} | {max(v):.2f} |"
print("| family | pairs | geomean seed / fitted | fitted faster (>1%) | fitted slower (>1%) | worst | best |")
print("|---|---|---|---|---|---|---|")
for k,v in sorted(fam.items()): print(row(k,v))
allv=[x for v in fam.values() for x in v]; print(row("all",allv))
if len(sys.argv)>2:
    print(); print("| shape | pairs | geomean | faster | slower | worst | best |"); print("|---|---|---|---|---|---|---|")
    for k,v in per.items(): print(row(k,v))
