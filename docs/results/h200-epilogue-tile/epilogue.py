"""epilogue.md from bench/bench.json (device-call-3.sh): each patched kernel (a larger epilogue subtile) against
its own unpatched build with the same runtime knobs (`ref-<id>`), per shape and as a geomean over the 13 shapes;
then per shape the best kernel of each kind against the best vendor baseline.  python epilogue.py > epilogue.md"""
import json
import math
from pathlib import Path

HERE = Path(__file__).resolve().parent
names = {json.loads(f.read_text())["id"]: f.stem for f in HERE.glob("kernels/*/*.json")}
shapes = json.loads((HERE / "bench" / "bench.json").read_text())["shapes"]
times, vendor = {}, {}
for s in shapes:
    vendor[s["problem"]] = min(t["median_us"] for t in s["baselines"]["device"].values())
    times[s["problem"]] = {names[k["genome"]["id"]]: k["measurement"]["device"]["median_us"] for k in s["kernels"]
                           if (k.get("measurement") or {}).get("status") == "ok"}
variants = sorted({n for t in times.values() for n in t if n.startswith("epi")})
print("Patched kernel against its own unpatched build (time of `ref-<id>` / time of the patch; > 1: the patch is faster):\n")
print("| patched kernel | " + " | ".join(times) + " | geomean |")
print("|---|" + "---|" * (len(times) + 1))
for v in variants:
    base = "ref-" + v.split("-")[-1]
    r = [times[p][base] / times[p][v] if v in times[p] and base in times[p] else None for p in times]
    ok = [x for x in r if x]
    g = math.exp(sum(map(math.log, ok)) / len(ok))
    print(f"| `{v}` | " + " | ".join(f"{x:.3f}" if x else "-" for x in r) + f" | **{g:.3f}** |")
print("\nPer shape, against the best vendor baseline of the same bench:\n")
print("| shape | best vendor (us) | best unpatched | vs vendor | best patched | vs vendor |")
print("|---|---|---|---|---|---|")
for p, t in times.items():
    ref = min((u, n) for n, u in t.items() if n.startswith("ref-"))
    epi = min((u, n) for n, u in t.items() if n.startswith("epi"))
    print(f"| {p} | {vendor[p]:.1f} | `{ref[1]}` | {vendor[p] / ref[0]:.3f} | `{epi[1]}` | {vendor[p] / epi[0]:.3f} |")
