"""streamk.md from bench/bench.json (../h200-prune-ab/device-call-4.sh): per shape, the best vendor baseline,
the best of the reference kernels (the public halls' best builds, `ref-*`), and the best stream-K kernel
(sm90_cutlass cooperative with the stream-K scheduler, `sk-*`: decomposition stream_k with either reduction,
or CUTLASS's heuristic), each against the best vendor baseline of that same bench; then each stream-K kernel's
geomean against the shape's best reference.  python streamk.py > streamk.md"""
import json
import math
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
names = {json.loads(f.read_text())["id"]: f.stem for f in HERE.glob("kernels/*/*.json")}
print("| shape | best vendor (us) | best reference | vs vendor | best stream-K kernel | vs vendor | stream-K / reference |")
print("|---|---|---|---|---|---|---|")
per = defaultdict(dict)
for s in json.loads((HERE / "bench" / "bench.json").read_text())["shapes"]:
    vendor = min(t["median_us"] for t in s["baselines"]["device"].values())
    ok = sorted((k["measurement"]["device"]["median_us"], names[k["genome"]["id"]]) for k in s["kernels"]
                if (k.get("measurement") or {}).get("status") == "ok")
    ref = next(x for x in ok if x[1].startswith("ref-"))
    sk = next(x for x in ok if x[1].startswith("sk-"))
    for t, n in ok:
        if n.startswith("sk-"):
            per[n][s["problem"]] = ref[0] / t
    print(f"| {s['problem']} | {vendor:.1f} | `{ref[1]}` {ref[0]:.1f} | {vendor / ref[0]:.3f} | `{sk[1]}` {sk[0]:.1f} | "
          f"{vendor / sk[0]:.3f} | {ref[0] / sk[0]:.3f} |")
print("\n| stream-K kernel | geomean vs the shape's best reference | best shape |")
print("|---|---|---|")
for n, d in sorted(per.items(), key=lambda kv: -sum(map(math.log, kv[1].values())) / len(kv[1])):
    b = max(d, key=d.get)
    print(f"| `{n}` | {math.exp(sum(map(math.log, d.values())) / len(d)):.3f} | {b} {d[b]:.3f} |")
