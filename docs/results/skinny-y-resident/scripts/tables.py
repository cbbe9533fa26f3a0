"""Per shape of a probe bench: the vendor, skinny_tma's best without and with y_resident, the best other kernel.
Usage: python tables.py BENCH_JSON"""
import json
import sys

d = json.load(open(sys.argv[1]))
print("| shape | row blocks / SMs | best vendor (us) | skinny_tma, Y streamed | skinny_tma, y_resident | resident / streamed "
      "| best other kernel | best of all vs vendor |")
print("|---|---|---|---|---|---|---|---|")
for s in d["shapes"]:
    m, n, k = map(int, s["problem"].split("x"))
    base = s["baselines"]["device"]
    bv = min(v["median_us"] for v in base.values() if isinstance(v, dict) and v.get("median_us"))
    runs = []
    for kr in s["kernels"]:
        t = (kr["measurement"].get("device") or {}).get("median_us")
        if t:
            g = kr["genome"]
            runs.append((t, g["id"][:8], g["family"], g["params"].get("y_resident", 0)))
    tma0 = min((r for r in runs if r[2] == "skinny_tma" and not r[3]), default=None)
    tma1 = min((r for r in runs if r[2] == "skinny_tma" and r[3]), default=None)
    other = min((r for r in runs if r[2] != "skinny_tma"), default=None)
    best = min(runs)
    blocks = -(-max(m, n) // 16)
    f = lambda r: f"{r[0]:.2f} ({r[1]})" if r else "-"   # noqa: E731
    print(f"| {s['problem']} | {blocks} / 132 | {bv:.2f} | {f(tma0)} | {f(tma1)} | "
          f"{tma0[0] / tma1[0]:.3f} | {f(other)} {other[2] if other else ''} | {bv / best[0]:.3f} ({best[1]}) |")
