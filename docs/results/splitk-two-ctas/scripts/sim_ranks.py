"""How well the simulator ranks a bench's kernels, at one or more model revisions (evaluator.sim_fit.rank_report):
the mean over the shapes of the Spearman correlation of simulated against measured device time, and the measured
time of the model's pick over the measured best (geomean and worst over the shapes).

usage (repository root): python docs/results/splitk-two-ctas/scripts/sim_ranks.py BENCH_JSON DEVICE REVISIONS
  e.g. ... docs/results/h200-occupancy-prefetch/call1/occ/bench.json h200 5,6
"""
import json
import sys
from dataclasses import replace

from evaluator.sim_device import get_device
from evaluator.sim_fit import rank_report


def records(bench: dict) -> list[dict]:
    return [{"genome": k["genome"], "problem": s["problem"], "time_us": k["measurement"]["device"]["median_us"]}
            for s in bench["shapes"] for k in s.get("kernels", [])
            if k["measurement"].get("status") == "ok" and k["measurement"].get("device")]


def main() -> None:
    runs, device = records(json.load(open(sys.argv[1]))), get_device(sys.argv[2])
    for revision in (int(r) for r in sys.argv[3].split(",")):
        r = rank_report(runs, device=replace(device, model_revision=revision))
        print(f"revision {revision}: {r['shapes']} shapes, mean Spearman {r['spearman_within_shape_mean']:.3f}, "
              f"pick / best geomean {r['best_pick_ratio_geomean']:.3f}, worst {r['best_pick_ratio_worst']:.3f}")


if __name__ == "__main__":
    main()
