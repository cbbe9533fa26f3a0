"""Pairs of the split-K launch A/B (docs/results/h200-splitk-launch): each base genome against its pdl twin and its
pdl + grouped twin, as timed in one bench.   python docs/results/h200-splitk-launch/pairs.py BENCH.json"""
import json, math, sys, collections
d = json.load(open(sys.argv[1]))
def key(p): return json.dumps({k: v for k, v in p.items() if k not in ("pdl", "reduce")}, sort_keys=True)
rows = []; agg = collections.defaultdict(list)
for s in d["shapes"]:
    t = {}
    for k in s["kernels"]:
        m = k.get("measurement") or {}
        if m.get("status") != "ok": continue
        p = k["genome"]["params"]
        t[(key(p), int(p.get("pdl", 0)), p.get("reduce", "serial"))] = (m["device"]["median_us"], k["genome"]["id"], p)
    best_base = min((v[0] for kk, v in t.items() if kk[1] == 0), default=None)
    best_pdl = min((v[0] for kk, v in t.items() if kk[1] == 1 and kk[2] == "serial"), default=None)
    best_grp = min((v[0] for kk, v in t.items() if kk[2] == "grouped"), default=None)
    for (kp, pdl, red), (us, gid, p) in sorted(t.items()):
        if pdl or red != "serial": continue
        a = t.get((kp, 1, "serial")); b = t.get((kp, 1, "grouped"))
        rows.append((s["problem"], gid[:8], p["ksplit"], f'{p["tile_m"]}x{p["tile_n"]} {p["schedule"][:4]}', us,
                     a and a[0], b and b[0]))
        if a: agg["pdl"].append(us / a[0])
        if b: agg["pdl+grouped"].append(us / b[0])
        if a and b: agg["grouped given pdl"].append(a[0] / b[0])
    vendor = min(b["median_us"] for b in s["baselines"]["device"].values())
    print(f"{s['problem']}: best vendor {vendor:.2f} us; best base {best_base:.2f}, best pdl {best_pdl:.2f}, "
          f"best pdl + grouped {best_grp:.2f} us")
print("\n| shape | genome | ksplit | tile | base us | pdl us | pdl+grouped us | base/pdl | base/pdl+grouped |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.2f} | {r[5]:.2f} | {r[6]:.2f} | {r[4]/r[5]:.3f} | {r[4]/r[6]:.3f} |")
for k, v in agg.items():
    print(f"{k}: n={len(v)} geomean {math.exp(sum(map(math.log, v))/len(v)):.3f}, min {min(v):.3f}, max {max(v):.3f}")
