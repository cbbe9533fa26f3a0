"""How well the simulator ranks a bench's kernels, at one or more model revisions: for each shape, the Spearman
correlation of simulated against measured device time over the kernels that ran, and the measured time of the
simulator's pick over the measured best; then their mean and geomean over the shapes.

usage (repository root): python docs/results/splitk-two-ctas/scripts/sim_ranks.py BENCH_JSON DEVICE REVISIONS [-v]
  e.g. ... docs/results/h200-occupancy-prefetch/call1/occ/bench.json h200 5,6
"""
import json
import math
import sys
from dataclasses import replace

from scipy.stats import spearmanr

from evaluator.sim_device import get_device
from evaluator.simulator import simulate_time_us
from genome import Genome


def ranks(bench: dict, device, verbose: bool) -> tuple[float, float, float, int]:
    rhos, picks = [], []
    for shape in bench["shapes"]:
        runs = [(k["measurement"]["device"]["median_us"],
                 simulate_time_us(Genome.from_dict(k["genome"]), shape["problem"], device=device))
                for k in shape["kernels"] if k["measurement"].get("status") == "ok" and k["measurement"].get("device")]
        if len(runs) < 3:
            continue
        rho = spearmanr([m for m, _ in runs], [s for _, s in runs]).correlation
        pick = min(runs, key=lambda r: r[1])[0] / min(m for m, _ in runs)
        rhos.append(rho)
        picks.append(pick)
        if verbose:
            print(f"  {shape['problem']:>16} kernels {len(runs):3d} Spearman {rho:.2f} pick / best {pick:.3f}")
    geomean = math.exp(sum(map(math.log, picks)) / len(picks))
    return sum(rhos) / len(rhos), geomean, max(picks), len(picks)


def main() -> None:
    path, device = sys.argv[1], get_device(sys.argv[2])
    for revision in (int(r) for r in sys.argv[3].split(",")):
        rho, geomean, worst, n = ranks(json.load(open(path)), replace(device, model_revision=revision),
                                       "-v" in sys.argv)
        print(f"revision {revision}: {n} shapes, mean Spearman {rho:.3f}, pick / best geomean {geomean:.3f}, "
              f"worst {worst:.3f}")


if __name__ == "__main__":
    main()
