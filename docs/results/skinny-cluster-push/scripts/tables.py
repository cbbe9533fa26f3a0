"""Tables of this folder's runs (python scripts/tables.py > tables.md, from the folder)."""
import json, math
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def times(bench):
    out = {}
    for s in json.loads((HERE / bench).read_text())["shapes"]:
        base = [v["median_us"] for v in s.get("baselines", {}).get("device", {}).values()
                if isinstance(v, dict) and v.get("median_us")]
        t = {k["genome"]["id"]: k["measurement"]["device"]["median_us"] for k in s["kernels"]
             if k["measurement"].get("status") == "ok"}
        out[s["problem"]] = (min(base) if base else None, t)
    return out


def ids(folder, tag=None):
    res = {}
    for f in sorted((HERE / "kernels" / folder).glob("*.json")):
        g = json.loads(f.read_text())
        res[g["id"]] = f.stem.rsplit("-", 1)[1][:8] if tag else g["id"][:8]
    return res


def old_twins(bench):
    """{id of an old-reduction genome: its unpatched twin's id[:8]}, from the bench's own genomes (the old ones are
    patched with the template's blocks of before, note 'the cluster reduction before session 60 ...')."""
    gs = {k["genome"]["id"]: k["genome"] for s in json.loads((HERE / bench).read_text())["shapes"] for k in s["kernels"]}
    plain = {json.dumps(g["params"], sort_keys=True): i for i, g in gs.items() if not g.get("patches")}
    return {i: plain[json.dumps(g["params"], sort_keys=True)][:8] for i, g in gs.items()
            if g.get("patches") and g["patches"][0].get("note", "").startswith("the cluster reduction before session 60")}


def ab(bench, title):
    print(f"## {title}\n")
    new, old = ids("new"), old_twins(bench)
    data = times(bench)
    print("| shape | best vendor (us) | " + " | ".join(sorted(new.values())) + " |")
    print("|---|---|" + "---|" * len(new))
    logs = {}
    for shape, (bv, t) in data.items():
        cells = []
        for nid, short in sorted(new.items(), key=lambda x: x[1]):
            oid = next((o for o, s in old.items() if s == short), None)
            if nid in t and oid in t:
                cells.append(f"{t[oid]:.2f} -> {t[nid]:.2f} ({t[oid] / t[nid]:.3f})")
                logs.setdefault(short, []).append(math.log(t[oid] / t[nid]))
            else:
                cells.append("-")
        print(f"| {shape} | {bv:.2f} | " + " | ".join(cells) + " |")
    print("\nold -> new us (old / new); geomean old / new by kernel: " +
          ", ".join(f"{k} {math.exp(sum(v) / len(v)):.3f}" for k, v in sorted(logs.items())) + "\n")


def tweak():
    print("## The committed reduction (base) against cluster_reduce through ld.shared (tweak) and inlined (inl)\n")
    base = ids("tw/base"); tw = ids("tw/tweak", tag=True); inl = ids("tw/inl", tag=True)
    data = times("tweak/bench.json")
    logs = {"tweak": [], "inl": []}
    print("| shape | kernel | base (us) | tweak | inl |\n|---|---|---|---|---|")
    for shape, (bv, t) in data.items():
        for bid, short in sorted(base.items(), key=lambda x: x[1]):
            row = [f"{t[bid]:.2f}"]
            for name, m in (("tweak", tw), ("inl", inl)):
                vid = next(v for v, s in m.items() if s == short)
                row.append(f"{t[vid]:.2f} ({t[bid] / t[vid]:.3f})"); logs[name].append(math.log(t[bid] / t[vid]))
            print(f"| {shape} | {short} | " + " | ".join(row) + " |")
    print("\ngeomean base / variant: " + ", ".join(f"{k} {math.exp(sum(v) / len(v)):.4f} ({len(v)} pairs)"
                                              for k, v in logs.items()) + "\n")


def tiny():
    print("## The record's kernel set at six small public shapes, before and after (same bench command)\n")
    print("| shape | before: best vendor / best kernel (us), speedup | after |\n|---|---|---|")
    b, a = times("tiny-before/bench.json"), times("tiny-after/bench.json")
    for shape in b:
        cells = []
        for d in (b, a):
            bv, t = d[shape]; best = min(t.values())
            cells.append(f"{bv:.2f} / {best:.2f}, {bv / best:.3f}x")
        print(f"| {shape} | " + " | ".join(cells) + " |")
    print()


def ablation():
    print("## Where 9a567b67's time goes at 64x64x4096 (ablate.py, graph replay, L2 flushed; not GEMMs but full)\n")
    r = json.loads((HERE / "ablation/ablate.json").read_text())["results"]
    print("| variant | us a call (median of 30 rounds) |\n|---|---|")
    for k, v in sorted(r.items()):
        print(f"| {k} | {v['median_us']:.3f} |")
    print()


ab("ab-final/bench.json", "The record's nine skinny_mma kernels, old reduction (patched) -> as committed, one bench")
ab("ab-s60/bench.json", "The same with the first version (one kernel, the reduction inline), one bench")
tweak()
tiny()
ablation()
