"""Per public shape: the record before (session 55, h200-public.json as of commit e57354d) against this run, with each
run's best kernel and its family. Usage: python compare.py OLD.json NEW.json"""
import json
import math
import sys


def best(path):
    d = json.load(open(path))
    out = {}
    for s in d["shapes"]:
        ref = min(v["median_us"] for v in s["baselines"]["device"].values())
        ks = [k for k in s["kernels"] if (k["measurement"].get("device") or {}).get("median_us")]
        k = min(ks, key=lambda k: k["measurement"]["device"]["median_us"])
        out[s["problem"]] = (ref / k["measurement"]["device"]["median_us"], k["genome"]["id"][:8], k["genome"]["family"])
    return out


old, new = best(sys.argv[1]), best(sys.argv[2])
print("| shape | session 55 | its kernel | session 62 | its kernel | new / old |")
print("|---|---|---|---|---|---|")
for shape in new:
    o, n = old[shape], new[shape]
    print(f"| {shape} | {o[0]:.3f} | {o[1]} ({o[2]}) | {n[0]:.3f} | {n[1]} ({n[2]}) | {n[0] / o[0]:.3f} |")
g = lambda r: math.exp(sum(math.log(v[0]) for v in r.values()) / len(r))
print(f"\ngeomean: session 55 {g(old):.3f}, session 62 {g(new):.3f}")
