"""The in-kernel A/B off one of call_ik.sh's benches: per shape and base tile (schedule, tile, splits) the time of
each kind of genome: in-kernel; in-kernel without the cooperative attribute (call 2's diagnostic patch); the
reduction-launch twins, serial (no pdl) and the launch variant (pdl + grouped for ping-pong, grouped for
cooperative); then the geomean of the ratios and the best of each kind per shape.
Usage: python pairs.py BENCH_JSON > pairs.md"""
import json
import math
import sys

KINDS = ("inkernel", "nocoop", "serial", "launch")
data = json.load(open(sys.argv[1]))


def kind(g):
    if g["family"] != "sm90_splitk":
        return "record"
    reduce = g["params"].get("reduce", "serial")
    if reduce == "inkernel" or g["params"].get("fixup") == "inkernel":   # calls 1-3 named it reduce: inkernel
        return "nocoop" if g.get("patches") else "inkernel"
    return "launch" if reduce == "grouped" else "serial"


def fmt(x):
    return f"{x:.2f}" if x < math.inf else ""


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


print("| shape | best vendor (us) | schedule, tile, splits | " + " | ".join(f"{k} (us)" for k in KINDS)
      + " | serial / in-kernel | launch / in-kernel |")
print("|---|---|---|" + "---|" * (len(KINDS) + 2))
ratios = {"serial": [], "launch": [], "nocoop": []}
best_rows = []
for s in data["shapes"]:
    vendor = min(v["median_us"] for v in s["baselines"]["device"].values())
    by, best = {}, {}
    for k in s["kernels"]:
        m = k["measurement"]
        if m["status"] != "ok":
            continue
        t, kd, p = m["device"]["median_us"], kind(k["genome"]), k["genome"]["params"]
        best[kd] = min(best.get(kd, math.inf), t)
        if kd != "record":
            key = (p["schedule"], f"{p['tile_m']}x{p['tile_n']}x{p['tile_k']}", p["ksplit"])
            by.setdefault(key, {})[kd] = t
    for key, t in sorted(by.items()):
        if "inkernel" not in t:
            continue
        for kd in ratios:
            if kd in t:
                ratios[kd].append(t[kd] / t["inkernel"])
        r = [f"{t[kd] / t['inkernel']:.3f}" if kd in t else "" for kd in ("serial", "launch")]
        print(f"| {s['problem']} | {vendor:.2f} | {key[0]} {key[1]}, {key[2]} | "
              + " | ".join(fmt(t.get(kd, math.inf)) for kd in KINDS) + f" | {r[0]} | {r[1]} |")
    best_rows.append((s["problem"], vendor, best))
print()
for kd, r in ratios.items():
    if r:
        print(f"- {kd} / in-kernel over {len(r)} pairs: geomean {geomean(r):.3f}, range {min(r):.3f}-{max(r):.3f}")
print("\n| shape | best vendor | best in-kernel | best serial | best launch variant | record's best | "
      "vendor / best in-kernel | vendor / best other |")
print("|---|---|---|---|---|---|---|---|")
for shape, vendor, best in best_rows:
    other = min(best.get(k, math.inf) for k in ("serial", "launch", "record"))
    ik = best.get("inkernel", math.inf)
    print(f"| {shape} | {vendor:.2f} | {fmt(ik)} | {fmt(best.get('serial', math.inf))} | "
          f"{fmt(best.get('launch', math.inf))} | {fmt(best.get('record', math.inf))} | {vendor / ik:.3f} | "
          f"{vendor / other:.3f} |")
