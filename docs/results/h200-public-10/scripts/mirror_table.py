"""h100-s48/pub/bench.json per public shape: the best vendor baseline against the best of the selection (each
shape's own recorded kernels), the best of the 18 vendor mirrors (../public-mirrors, timed at every shape), and the
best of both. Reads JSON, measures nothing. usage: python mirror_table.py > ../h100-s48/mirrors.md"""
import json
import math
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def main() -> None:
    bench = json.loads((HERE / "h100-s48/pub/bench.json").read_text())
    mirrors = {p.stem.split("-")[1] for p in (HERE / "public-mirrors").glob("*.json")}
    print("| shape | best vendor (us) | selection | mirrors | both |")
    print("|---|---|---|---|---|")
    cols = ([], [], [])
    for shape in bench["shapes"]:
        vendor = min(b["median_us"] for b in shape["baselines"]["device"].values() if b)
        runs = [(k["measurement"]["device"]["median_us"], k["genome"]["id"][:8]) for k in shape["kernels"]
                if k["measurement"].get("status") == "ok"]
        sel = vendor / min(t for t, i in runs if i not in mirrors)
        mir = vendor / min(t for t, i in runs if i in mirrors)
        for col, v in zip(cols, (sel, mir, max(sel, mir))):
            col.append(v)
        mark = " **" if mir > sel else ""
        print(f"| {shape['problem']} | {vendor:.1f} | {sel:.3f} | {mir:.3f}{mark} | {max(sel, mir):.3f} |")
    g = [math.exp(sum(map(math.log, c)) / len(c)) for c in cols]
    print(f"| geomean | | {g[0]:.4f} | {g[1]:.4f} | {g[2]:.4f} |")


if __name__ == "__main__":
    main()
