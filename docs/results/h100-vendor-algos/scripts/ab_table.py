"""The A/B of h100-s48/ab/bench.json: per shape, the best vendor baseline against the shape's own two campaign
mirrors (campaign-mirror-notes.json), its own two recorded best kernels (ref-notes.json), and the better of the two.
Reads JSON, measures nothing. usage: python ab_table.py > ../ab.md"""
import json
import math
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def owners(notes_file: str) -> dict[str, set[str]]:
    """shape -> the 8-hex ids of the genomes the notes file names for it."""
    out: dict[str, set[str]] = {}
    for name, lines in json.loads((HERE / notes_file).read_text()).items():
        for line in lines:
            out.setdefault(line.split(":")[0], set()).add(name.split("-")[1])
    return out


def geomean(values):
    return math.exp(sum(map(math.log, values)) / len(values))


def main() -> None:
    bench = json.loads((HERE / "h100-s48/ab/bench.json").read_text())
    mirrors, refs = owners("campaign-mirror-notes.json"), owners("ref-notes.json")
    print("| shape | best vendor (us) | its two mirrors | its two recorded best | the better of the four |")
    print("|---|---|---|---|---|")
    cols = ([], [], [])
    for shape in bench["shapes"]:
        vendor = min(b["median_us"] for b in shape["baselines"]["device"].values() if b)
        times = {k["genome"]["id"][:8]: k["measurement"]["device"]["median_us"] for k in shape["kernels"]
                 if k["measurement"].get("status") == "ok"}
        p = shape["problem"]
        m = vendor / min(times[i] for i in mirrors[p])
        r = vendor / min(times[i] for i in refs[p])
        for col, v in zip(cols, (m, r, max(m, r))):
            col.append(v)
        print(f"| {p} | {vendor:.2f} | {m:.3f} | {r:.3f} | {max(m, r):.3f} |")
    print(f"| geomean | | {geomean(cols[0]):.3f} | {geomean(cols[1]):.3f} | {geomean(cols[2]):.3f} |")


if __name__ == "__main__":
    main()
