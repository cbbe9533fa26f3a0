"""Per shape of a bench.json: the best vendor baseline, and the fastest kernel of each group against it
(sm90_swapab_splitk by its K split, the sm90_swapab neighbourhood, the skinny_tma / skinny_mma seeds, the public
shape's recorded best). Reads JSON, measures nothing. usage: python groups.py BENCH.json > groups.md"""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
NEIGHBOURS = {json.loads(p.read_text())["id"] for p in (HERE.parent / "skinny-swapab" / "kernels").glob("*.json")}
REFS = {json.loads(p.read_text())["id"] for p in (HERE.parent / "skinny-swapab" / "refs").glob("*.json")}


def group(genome: dict) -> str:
    if genome["family"] == "sm90_swapab_splitk":
        return f"swapab_splitk k{genome['params']['ksplit']}"
    if genome["id"] in NEIGHBOURS:
        return "swapab neighbours"
    if genome["id"] in REFS:
        return "skinny seeds"
    return "recorded best"


def main(path: str) -> None:
    data = json.loads(Path(path).read_text())
    cols = ["swapab_splitk k2", "swapab_splitk k4", "swapab_splitk k8", "swapab neighbours", "skinny seeds",
            "recorded best"]
    print(f"device: {data['meta']['device']}; date {data['meta']['date']}\n")
    print("| shape | best vendor (us) | " + " | ".join(cols) + " | fastest kernel |")
    print("|---" * (len(cols) + 3) + "|")
    for shape in data["shapes"]:
        vendor = min(v["median_us"] for v in shape["baselines"]["device"].values())
        best: dict[str, tuple[float, str]] = {}
        for k in shape["kernels"]:
            m = k["measurement"]
            if m.get("status") != "ok" or not isinstance(m.get("device"), dict):
                continue
            g, us = k["genome"], m["device"]["median_us"]
            name = group(g)
            if name not in best or us < best[name][0]:
                best[name] = (us, g["id"][:8])
        cells = [f"{vendor / best[c][0]:.3f}" if c in best else "-" for c in cols]
        top = min(best.items(), key=lambda kv: kv[1][0])
        print(f"| {shape['problem']} | {vendor:.1f} | " + " | ".join(cells) +
              f" | {top[1][0]:.1f} us, {top[0]} `{top[1][1]}` |")


if __name__ == "__main__":
    main(sys.argv[1])
