"""Per shape of the session-45 bench: the best vendor baseline, the best skinny_mma and the best skinny_tma seed,
each family's best against the vendor, and the achieved TB/s of the large operand.
usage: python compare_s45.py bench.json > compare.md"""
import json
import math
import sys

d = json.load(open(sys.argv[1]))
print("| shape | best vendor (us) | best skinny_mma (us) | best skinny_tma (us) | its seed | skinny_mma vs vendor | "
      "skinny_tma vs vendor | skinny_tma TB/s |")
print("|---|---|---|---|---|---|---|---|")
logs = {"mma": [], "tma": []}
for s in d["shapes"]:
    m, n, k = map(int, s["problem"].split("x"))
    base = s["baselines"]["device"]
    vendor = min(b["median_us"] for b in base.values() if isinstance(b, dict) and b.get("median_us"))
    best = {}
    for kern in s["kernels"]:
        meas, g = kern["measurement"], kern["genome"]
        if meas.get("status") != "ok" or not meas.get("device"):
            continue
        t = meas["device"]["median_us"]
        fam = g["family"]
        if fam not in best or t < best[fam][0]:
            best[fam] = (t, g["id"][:8], g["params"])
    tm, tt = best.get("skinny_mma"), best.get("skinny_tma")
    if tm:
        logs["mma"].append(math.log(vendor / tm[0]))
    if tt:
        logs["tma"].append(math.log(vendor / tt[0]))
    seed = (f"{tt[1]} r{tt[2]['rows']} p{tt[2]['pieces']} s{tt[2]['stages']} w{tt[2]['consumer_warps']} "
            f"c{tt[2]['ctas_per_sm']}") if tt else "-"
    tbps = 2.0 * max(m, n) * k / tt[0] / 1e6 if tt else float("nan")
    print(f"| {s['problem']} | {vendor:.2f} | {tm[0] if tm else float('nan'):.2f} | {tt[0] if tt else float('nan'):.2f} | "
          f"{seed} | {vendor / tm[0] if tm else float('nan'):.3f} | {vendor / tt[0] if tt else float('nan'):.3f} | "
          f"{tbps:.2f} |")
for f, v in logs.items():
    if v:
        print(f"\n- skinny_{f} vs best vendor: geomean {math.exp(sum(v) / len(v)):.3f} over {len(v)} shapes")
