"""clusters.md from the two benches of device-call-C.sh: per shape, the best vendor baseline, the best of
the reference kernels (the halls' best, `ref-*`), and the best of the cluster variants, each with its
speedup against the best vendor baseline of that same bench.  python clusters.py > clusters.md"""
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
names = {json.loads(f.read_text())["id"]: f.stem for f in HERE.glob("kernels/*/*.json")}
print("| shape | best vendor (us) | best reference kernel | vs vendor | best cluster variant | vs vendor | variant / reference |")
print("|---|---|---|---|---|---|---|")
for bench in ("benchTiny", "benchMid"):
    for s in json.loads((HERE / bench / "bench.json").read_text())["shapes"]:
        vendor = min(t["median_us"] for t in s["baselines"]["device"].values())
        ok = sorted((k["measurement"]["device"]["median_us"], names[k["genome"]["id"]]) for k in s["kernels"]
                    if (k.get("measurement") or {}).get("status") == "ok")
        ref = next(x for x in ok if x[1].startswith("ref-"))
        new = next(x for x in ok if not x[1].startswith("ref-"))
        print(f"| {s['problem']} | {vendor:.2f} | `{ref[1]}` {ref[0]:.2f} | {vendor / ref[0]:.3f} | `{new[1]}` {new[0]:.2f} | "
              f"{vendor / new[0]:.3f} | {ref[0] / new[0]:.3f} |")
