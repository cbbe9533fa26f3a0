"""Each arm's first-round best per shape, from call_fr9.sh's bench and make_first_rounds.py's first_rounds.json.
python first_rounds.py BENCH.json FIRST_ROUNDS.json > first-rounds.md"""
import json
import math
import sys

bench, rounds = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print("| shape | best vendor (us) | arm A's first round: best (us) | arm B's (us) | B's best from a cooperative one-wave seed | "
      "A vs best vendor | B vs best vendor |")
print("|---|---|---|---|---|---|---|")
ra, rb = [], []
for s in bench["shapes"]:
    shape = s["problem"]
    vendor = min(v["median_us"] for v in s["baselines"]["device"].values())
    us = {k["genome"]["id"]: k["measurement"]["device"]["median_us"] for k in s["kernels"]
          if k["measurement"]["status"] == "ok"}
    a = min(us[g] for g in rounds["a"][shape] if g in us)
    b, gb = min((us[g], g) for g in rounds["b"][shape] if g in us)
    extra = gb not in rounds["a"][shape]
    ra.append(vendor / a)
    rb.append(vendor / b)
    print(f"| {shape} | {vendor:.2f} | {a:.2f} | {b:.2f} | {'yes' if extra else 'no'} | {vendor / a:.3f} | {vendor / b:.3f} |")
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))  # noqa: E731
print(f"\n- geomean against the best vendor: arm A {gm(ra):.3f}, arm B {gm(rb):.3f} (B / A {gm(rb) / gm(ra):.3f})")
