"""One-wave sm90_lean tiles against the first rounds as shipped at the twelve unseen shapes (device call 7):
python wave.py"""
import json
import math
from pathlib import Path

HERE = Path(__file__).parent
first = {**json.loads((HERE.parent / "first-round-by-shape.json").read_text()),
         **json.loads((HERE.parent / "cross-screen" / "first-round-A-by-shape.json").read_text())}
wave = json.loads((HERE / "wave-fit-by-shape.json").read_text())
bench = json.loads((HERE / "bench" / "bench.json").read_text())
logs = [0.0, 0.0]
print("| shape | best vendor (us) | own first round | two one-wave tiles (128 x N, CTAs) | both | gain |")
print("|---|---|---|---|---|---|")
for s in bench["shapes"]:
    shape = s["problem"]
    m, n = (int(x) for x in shape.split("x")[:2])
    vendor = min(b["median_us"] for b in s["baselines"]["device"].values() if b)
    t = {k["genome"]["id"]: k["measurement"]["device"]["median_us"] for k in s["kernels"] if k["measurement"].get("device")}
    tile_n = {k["genome"]["id"]: k["genome"]["params"]["tile_n"] for k in s["kernels"]}
    own = min(t[g] for g in first[shape] if g in t)
    waves = [(t[g], tile_n[g]) for g in wave[shape] if g in t]
    both = min([own] + [w for w, _ in waves])
    logs[0] += math.log(vendor / own)
    logs[1] += math.log(vendor / both)
    cells = ", ".join(f"{w:.2f} (128x{tn}, {math.ceil(m / 128) * math.ceil(n / tn)})" for w, tn in waves) or "none fits"
    print(f"| {shape} | {vendor:.2f} | {own:.2f} ({vendor / own:.3f}) | {cells} | {both:.2f} ({vendor / both:.3f}) "
          f"| {own / both:.3f} |")
k = len(bench["shapes"])
print(f"| geomean vs best vendor | | {math.exp(logs[0] / k):.3f} | | {math.exp(logs[1] / k):.3f} | |")
