"""The screen's pairs: each stream_wgmma kernel with a cluster along K against its twin that splits K as many ways
through the workspace (same rows, tile_s, pieces, stages), per shape, and the best of each kind against the best
vendor baseline and the best kernel of the record's halls. Usage: python pairs.py bench.json"""
import json
import sys
from statistics import geometric_mean

d = json.load(open(sys.argv[1]))
ratios = []
print("| shape | rows x tile_s, pieces, stages | c | cluster (us) | ksplit twin (us) | twin / cluster |")
print("|---|---|---|---|---|---|")
best_lines = []
for s in d["shapes"]:
    shape = s["problem"]
    vendor = min(b["median_us"] for b in s["baselines"]["device"].values())
    sw, other = {}, []
    for k in s["kernels"]:
        g, m = k["genome"], k["measurement"]
        if m["status"] != "ok":
            print(f"| {shape} | {g['family']} {g['params']} | | {m['status']}: {m.get('reason')} | | |")
            continue
        t = m["device"]["median_us"]
        if g["family"] == "stream_wgmma":
            p = g["params"]
            c, ks = p.get("cluster_k", 1), p["ksplit"]
            sw[(p["rows"], p["tile_s"], p["pieces"], p["stages"], max(c, ks), c > 1)] = (t, g["id"][:8])
        else:
            other.append((t, g["id"][:8], g["family"]))
    for key, (t, gid) in sorted(sw.items()):
        if not key[-1]:
            continue
        twin = sw.get(key[:-1] + (False,))
        r = twin[0] / t if twin else None
        if r:
            ratios.append(r)
        print(f"| {shape} | {key[0]} x {key[1]}, {key[2]}, {key[3]} | {key[4]} | {t:.2f} ({gid}) | "
              f"{f'{twin[0]:.2f}' if twin else '-'} | {f'{r:.3f}' if r else '-'} |")
    bc = min(((t, gid) for k, (t, gid) in sw.items() if k[-1]), default=None)
    bt = min(((t, gid) for k, (t, gid) in sw.items() if not k[-1]), default=None)
    bo = min(other, default=None)
    best_lines.append(f"| {shape} | {vendor:.2f} | {bc[0]:.2f} ({bc[1]}) | "
                      f"{f'{bt[0]:.2f} ({bt[1]})' if bt else '-'} | {f'{bo[0]:.2f} ({bo[1]}, {bo[2]})' if bo else '-'} |")
print(f"\ntwin / cluster over {len(ratios)} pairs: geomean {geometric_mean(ratios):.3f}, "
      f"range {min(ratios):.3f}-{max(ratios):.3f}\n")
print("| shape | best vendor (us) | best cluster kernel | best ksplit twin | best record kernel |")
print("|---|---|---|---|---|")
print("\n".join(best_lines))
