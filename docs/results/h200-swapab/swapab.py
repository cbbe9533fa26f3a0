"""swapab.md from the two benches of device-call-1.sh: per shape, the best vendor baseline, the best of the
reference kernels (the public halls' best, `ref-*`), and the best sm90_swapab kernel, each with its speedup
against the best vendor baseline of that same bench; then each swapab kernel's geomean over the shapes
(its time against the best reference kernel of the shape).  python swapab.py > swapab.md"""
import json
import math
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
names = {json.loads(f.read_text())["id"]: f.stem for f in HERE.glob("kernels/*/*.json")}
print("| shape | best vendor (us) | best reference kernel | vs vendor | best sm90_swapab kernel | vs vendor | "
      "swapab / reference |")
print("|---|---|---|---|---|---|---|")
per_kernel = defaultdict(dict)
ratios = []
for bench in ("benchSmall", "benchBig"):
    path = HERE / bench / "bench.json"
    if not path.is_file():
        continue
    for s in json.loads(path.read_text())["shapes"]:
        vendor = min(t["median_us"] for t in s["baselines"]["device"].values())
        ok = sorted((k["measurement"]["device"]["median_us"], names[k["genome"]["id"]]) for k in s["kernels"]
                    if (k.get("measurement") or {}).get("status") == "ok")
        ref = next(x for x in ok if x[1].startswith("ref-"))
        new = next(x for x in ok if x[1].startswith("swapab-"))
        ratios.append(ref[0] / new[0])
        for t, name in ok:
            if name.startswith("swapab-"):
                per_kernel[name][s["problem"]] = ref[0] / t
        print(f"| {s['problem']} | {vendor:.2f} | `{ref[1]}` {ref[0]:.2f} | {vendor / ref[0]:.3f} | `{new[1]}` "
              f"{new[0]:.2f} | {vendor / new[0]:.3f} | {ref[0] / new[0]:.3f} |")
print(f"\nbest swapab / best reference: geomean {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f} over "
      f"{len(ratios)} shapes, swapab ahead at {sum(r > 1.0 for r in ratios)}, by more than 1% at "
      f"{sum(r > 1.01 for r in ratios)}\n")
print("| sm90_swapab kernel | shapes timed | geomean vs the shape's best reference | best shape |")
print("|---|---|---|---|")
for name, by_shape in sorted(per_kernel.items(), key=lambda kv: -sum(map(math.log, kv[1].values())) / len(kv[1])):
    g = math.exp(sum(map(math.log, by_shape.values())) / len(by_shape))
    best = max(by_shape, key=by_shape.get)
    print(f"| `{name}` | {len(by_shape)} | {g:.3f} | {best} {by_shape[best]:.3f} |")
