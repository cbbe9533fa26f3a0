"""README's table from bench/bench.json and the two shape maps: python picks.py > picks.md"""
import json
import math
from pathlib import Path

HERE = Path(__file__).parent
first = json.loads((HERE / "first-round-by-shape.json").read_text())
picks = json.loads((HERE / "model-picks-by-shape.json").read_text())
every_first = {g for ids in first.values() for g in ids}
every_pick = {g for ids in picks.values() for g in ids}
bench = json.loads((HERE / "bench" / "bench.json").read_text())
arms = {"own first round": lambda s: set(first[s]), "own first round + own picks": lambda s: set(first[s]) | set(picks[s]),
        "every shape's first round": lambda s: every_first,
        "every shape's first round and picks": lambda s: every_first | every_pick}
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
    print(f"| {shape} ({len(first[shape])} + {len(picks[shape])}) | {vendor:.2f} | " + " | ".join(cells) + " |")
n = len(bench["shapes"])
print("| geomean vs best vendor | | " + " | ".join(f"{math.exp(v / n):.3f}" for v in logs.values()) + " |")
print(f"\n{len(every_first)} distinct first-round genomes, {len(every_pick)} model picks.")


def cross_arm(count: int) -> float:
    """The own first round plus `count` first-round genomes of the other shapes, nearest shape first, rank by
    rank (the rule of cross-screen/cross_screen.patch, on the proposal lists of first-round-by-shape.json)."""
    from evolution.seeding import shape_distance
    from genome import Problem
    total = 0.0
    for s in bench["shapes"]:
        shape = s["problem"]
        vendor = min(b["median_us"] for b in s["baselines"]["device"].values() if b)
        t = {k["genome"]["id"]: k["measurement"]["device"]["median_us"] for k in s["kernels"] if k["measurement"].get("device")}
        own = list(dict.fromkeys(first[shape]))
        others = sorted((o for o in first if o != shape), key=lambda o: shape_distance(Problem.parse(shape), Problem.parse(o)))
        extra: list = []
        for rank in range(max(len(first[o]) for o in others)):
            for o in others:
                if rank < len(first[o]) and first[o][rank] not in own + extra and first[o][rank] in t:
                    extra.append(first[o][rank])
        total += math.log(vendor / min(t[g] for g in own + extra[:count] if g in t))
    return math.exp(total / len(bench["shapes"]))


print("\nThe own first round plus N of the other shapes' first-round genomes, nearest shape first: "
      + ", ".join(f"N={n} {cross_arm(n):.3f}" for n in (0, 4, 8, 16, 32)))
