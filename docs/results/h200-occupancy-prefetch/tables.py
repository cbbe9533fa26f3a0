"""The tables of README.md from the benches and Nsight Compute reports of this folder: python tables.py > tables.md"""
import json
import re
from pathlib import Path

HERE = Path(__file__).parent


def names(folder: str) -> dict:
    out = {}
    for f in (HERE / "kernels" / folder).glob("*.json"):
        out[json.loads(f.read_text())["genome"]["id"] if "genome" in json.loads(f.read_text())
            else json.loads(f.read_text())["id"]] = f.stem
    return out


def times(bench: Path) -> "dict[str, tuple[float, dict[str, float]]]":
    d = json.loads(bench.read_text())
    out = {}
    for s in d["shapes"]:
        vendor = min(b["median_us"] for b in s["baselines"]["device"].values() if b)
        out[s["problem"]] = (vendor, {k["genome"]["id"]: k["measurement"]["device"]["median_us"]
                                      for k in s["kernels"] if k["measurement"].get("device")})
    return out


def occupancy_table() -> None:
    ids = {**names("occ"), **names("occ2")}
    print("| shape | best vendor (us) | best reference (us, kernel) | vs vendor | best 3-4-stage tile (us, kernel) | vs vendor | new / reference |")
    print("|---|---|---|---|---|---|---|")
    for shape, (vendor, ts) in times(HERE / "call1" / "occ" / "bench.json").items():
        rows = sorted((t, ids[g]) for g, t in ts.items())
        ref = next(r for r in rows if r[1].startswith("ref"))
        new = next(r for r in rows if not r[1].startswith("ref"))
        print(f"| {shape} | {vendor:.2f} | {ref[0]:.2f} {ref[1]} | {vendor / ref[0]:.3f} | {new[0]:.2f} {new[1].rsplit('-', 1)[0]} "
              f"| {vendor / new[0]:.3f} | {ref[0] / new[0]:.3f} |")


def prefetch_table() -> None:
    ids = names("pfbench")
    by_name = {v: k for k, v in ids.items()}
    pairs = [(n, re.sub(r"^pf\d+-", "", n).rsplit("-", 1)[0] if n.count("-") > 2 else re.sub(r"^pf\d+-", "", n).rsplit("-", 1)[0])
             for n in sorted(by_name) if n.startswith("pf")]
    pairs = [(p, b if b in by_name else b.rsplit("-", 1)[0]) for p, b in pairs]
    print("| shape | " + " | ".join(p.rsplit("-", 1)[0] for p, _ in pairs) + " |")
    print("|---|" + "---|" * len(pairs))
    for shape, (vendor, ts) in times(HERE / "call2" / "pf" / "bench.json").items():
        print(f"| {shape} | " + " | ".join(f"{ts[by_name[p]] / ts[by_name[b]]:.3f}" for p, b in pairs) + " |")


def ncu_table() -> None:
    keys = ["Duration", "SM Frequency", "Elapsed Cycles", "SM Active Cycles", "lts__t_bytes.sum", "L2 Cache Throughput",
            "DRAM Throughput", "Compute (SM) Throughput", "Grid Size", "Cluster Size", "Block Size",
            "Registers Per Thread", "Dynamic Shared Memory Per Block", "Warp Cycles Per Issued Instruction"]
    files = sorted((HERE / "call1" / "ncu").glob("ncu-*.txt"))
    print("| metric | " + " | ".join(f.stem[4:] for f in files) + " |")
    print("|---|" + "---|" * len(files))
    vals = {}
    for f in files:
        for line in f.read_text().splitlines():
            for k in keys:
                m = re.match(rf"\s+{re.escape(k)}\s+(\S+(?:/\S+)?)?\s+([\d,.]+)\s*$", line)
                if m and k not in vals.setdefault(f.stem, {}):
                    vals[f.stem][k] = f"{m.group(2)} {m.group(1) or ''}".strip()
    for k in keys:
        print(f"| {k} | " + " | ".join(vals.get(f.stem, {}).get(k, "") for f in files) + " |")


def warmcold_table() -> None:
    d = json.loads((HERE / "call2" / "warmcold.json").read_text())
    print("| shape | kernel | warm (us a call) | cold (us a call) |")
    print("|---|---|---|---|")
    for shape, res in d.items():
        for name in dict.fromkeys(k.split("/")[0] for k in res):
            print(f"| {shape} | {name} | {res[name + '/warm']:.2f} | {res[name + '/cold']:.2f} |")


if __name__ == "__main__":
    print("## Two or more CTAs an SM (call 1)\n")
    occupancy_table()
    print("\n## L2 prefetch ahead of the TMA loads: time / time of the same kernel without it (call 2)\n")
    prefetch_table()
    print("\n## Nsight Compute, one launch each, caches flushed, clocks not fixed (call 1)\n")
    ncu_table()
    print("\n## Back-to-back graph replay, inputs warm in L2 or rotated (call 2)\n")
    warmcold_table()
