"""One row a shape of a bench of this folder: the best vendor baseline, then the best kernel of each group against it
(vendor time / kernel time): the mirror `189b3521`, its neighbours (kernels/), the split-K variants (kernels-streamk/),
the skinny_tma and skinny_mma seeds (refs/) and the public shapes' recorded best (../h200-public-10/selection).
usage: groups.py BENCH_JSON > TABLE_MD"""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
NOTES = json.loads((HERE / "notes.json").read_text())


def ids(folder: str) -> "set[str]":
    return {json.loads(f.read_text())["id"][:8] for f in (HERE / folder).glob("*.json")}


SELECTION = HERE.parent / "h200-public-10" / "selection" / "hall_of_fame"
GROUPS = {"mirror 189b3521": {"189b3521"}, "its neighbours": ids("kernels") - {"189b3521"},
          "split-K variants": ids("kernels-streamk"),
          "recorded best": {g["id"][:8] for f in SELECTION.glob("*.json") for g in json.loads(f.read_text())}}


def group_of(kernel: dict) -> str:
    gid, family = kernel["genome"]["id"][:8], kernel["genome"]["family"]
    for name, members in GROUPS.items():
        if gid in members:
            return name
    return family + " seeds"


def describe(kernel: dict) -> str:
    gid, family = kernel["genome"]["id"][:8], kernel["genome"]["family"]
    change = NOTES.get(f"{family}-{gid}", {}).get("change")
    return f"`{gid}`" + (f" {json.dumps(change, separators=(',', ':'))}" if change else "")


bench = json.loads(Path(sys.argv[1]).read_text())
order = ["mirror 189b3521", "its neighbours", "split-K variants", "skinny_tma seeds", "skinny_mma seeds", "recorded best"]
print(f"{bench['meta'].get('device', '')}, {bench['meta'].get('date', '')}\n")
print("| shape | best vendor (us) | " + " | ".join(order) + " | fastest kernel |")
print("|---" * (len(order) + 3) + "|")
for shape in bench["shapes"]:
    vendor = min(b["median_us"] for b in shape["baselines"]["device"].values())
    best: "dict[str, tuple[float, dict]]" = {}
    for kernel in shape["kernels"]:
        m = kernel["measurement"]
        if m["status"] != "ok":
            continue
        t, g = m["device"]["median_us"], group_of(kernel)
        if g not in best or t < best[g][0]:
            best[g] = (t, kernel)
    cells = [f"{vendor / best[g][0]:.3f}" if g in best else "" for g in order]
    top = min(best.values(), key=lambda x: x[0])
    print(f"| {shape['problem']} | {vendor:.1f} | " + " | ".join(cells)
          + f" | {top[0]:.1f} us, {describe(top[1])} |")
