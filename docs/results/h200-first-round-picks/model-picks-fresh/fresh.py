"""The model picks at the six fresh shapes of ../cross-screen (device call 6: call 5's first rounds and the picks,
every kernel at every shape): python fresh.py"""
import json
import math
from pathlib import Path

HERE = Path(__file__).parent
first = json.loads((HERE.parent / "cross-screen" / "first-round-A-by-shape.json").read_text())
picks = json.loads((HERE / "model-picks-by-shape.json").read_text())
every_first = {g for ids in first.values() for g in ids}
every_pick = {g for ids in picks.values() for g in ids}
arms = {"own first round": lambda s: set(first[s]), "own first round + own picks": lambda s: set(first[s]) | set(picks[s]),
        "every shape's first round": lambda s: every_first,
        "every shape's first round and picks": lambda s: every_first | every_pick}
bench = json.loads((HERE / "bench" / "bench.json").read_text())
logs = dict.fromkeys(arms, 0.0)
print("| shape | best vendor (us) | " + " | ".join(arms) + " |")
print("|---|---|" + "---|" * len(arms))
for s in bench["shapes"]:
    shape = s["problem"]
    vendor = min(b["median_us"] for b in s["baselines"]["device"].values() if b)
    t = {k["genome"]["id"]: k["measurement"]["device"]["median_us"] for k in s["kernels"] if k["measurement"].get("device")}
    cells = []
    for arm, ids in arms.items():
        best = min(t[g] for g in ids(shape) if g in t)
        logs[arm] += math.log(vendor / best)
        cells.append(f"{best:.2f} ({vendor / best:.3f})")
    print(f"| {shape} | {vendor:.2f} | " + " | ".join(cells) + " |")
print("| geomean vs best vendor | | " + " | ".join(f"{math.exp(v / len(bench['shapes'])):.3f}" for v in logs.values()) + " |")
