"""Best of each group in a bench of ../kernels and bedab432: `python summary.py ../h100-s67/bench.json`.

Groups: bedab432 (ws 64x16, tile K 128, 4x1 cluster), the cooperative 128x16 builds with the stream_k decomposition,
and the same builds with the heuristic one (no K split at these shapes). Each cell: the group's fastest median in
microseconds, its ratio to the best vendor baseline, and the genome id.
"""
import json
import sys


def main(path: str) -> None:
    bench = json.load(open(path))
    print("| shape | best vendor (us) | bedab432 | stream_k, best | heuristic (cooperative), best |")
    print("|---|---|---|---|---|")
    for shape in bench["shapes"]:
        vendor = min(b["median_us"] for b in shape["baselines"]["device"].values())
        best: dict[str, tuple[float, str]] = {}
        for kernel in shape["kernels"]:
            genome, measurement = kernel["genome"], kernel["measurement"]
            if measurement["status"] != "ok":
                continue
            median = measurement["device"]["median_us"]
            if genome["id"].startswith("bedab432"):
                group = "bedab432"
            else:
                group = genome["params"]["decomposition"]
            if group not in best or median < best[group][0]:
                best[group] = (median, genome["id"][:8])
        cells = []
        for group in ("bedab432", "stream_k", "heuristic"):
            if group in best:
                median, gid = best[group]
                cells.append(f"{median:.1f} ({vendor / median:.3f}x, `{gid}`)")
            else:
                cells.append("-")
        print(f"| {shape['problem']} | {vendor:.1f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
