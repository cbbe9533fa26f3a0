"""How well the simulator (revision 6, with the calibration campaigns use: evaluator/calibration/h200.json, or the
built-in defaults with --defaults) ranks every recorded H200 bench's kernels when its load latencies
(SimParams.load_latency_us and miss_latency_us) are scaled: per bench evaluator.sim_fit.rank_report, then the mean
Spearman within a shape and the geomean of the measured time of the model's pick over the measured best, each
weighted by the bench's shapes. Every bench.json under docs/results/ whose device is an H200, with 20 or more passing
kernel runs (files over 60 MB skipped). Measures nothing on a GPU.

usage (repository root): python docs/results/h200-tilek128/scripts/latency_ranks.py [--defaults] [SCALE ...]
       (default scales 1 1.5 2 2.5 3)
"""
import glob
import json
import math
import os
import sys
import warnings
from dataclasses import replace
from pathlib import Path

from evaluator.sim_device import SimParams, resolve_calibration
from evaluator.sim_fit import rank_report

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "splitk-two-ctas/scripts"))
from sim_ranks import records  # noqa: E402  (a bench's passing kernel runs as rank_report records)


def benches() -> list[tuple[str, list[dict]]]:
    out = []
    for f in sorted(glob.glob("docs/results/**/bench*.json", recursive=True)):
        if os.path.getsize(f) > 60e6:
            continue
        try:
            d = json.load(open(f))
        except ValueError:
            continue
        if not isinstance(d, dict) or "shapes" not in d or "H200" not in json.dumps(d.get("meta", {}).get("device", "")):
            continue
        recs = records(d)
        if len(recs) >= 20:
            out.append((f, recs))
    return out


def main() -> None:
    warnings.filterwarnings("ignore")
    args = sys.argv[1:]
    defaults = "--defaults" in args
    scales = [float(x) for x in args if x != "--defaults"] or [1.0, 1.5, 2.0, 2.5, 3.0]
    found = benches()
    base, name = (SimParams(), "built-in defaults") if defaults else resolve_calibration(None)
    print(f"{len(found)} H200 benches, {sum(len(r) for _, r in found)} kernel runs; parameters: {name} "
          f"(load_latency_us {base.load_latency_us:g}, miss_latency_us {base.miss_latency_us:g})")
    for scale in scales:
        sp = replace(base, load_latency_us=base.load_latency_us * scale, miss_latency_us=base.miss_latency_us * scale)
        spearman = log_pick = 0.0
        shapes = 0
        for _, recs in found:
            try:
                r = rank_report(recs, params=sp, device="h200")
            except ValueError:
                continue
            if math.isnan(r["spearman_within_shape_mean"]):
                continue
            shapes += r["shapes"]
            spearman += r["spearman_within_shape_mean"] * r["shapes"]
            log_pick += math.log(r["best_pick_ratio_geomean"]) * r["shapes"]
        print(f"latencies x{scale:g}: mean Spearman within a shape {spearman / shapes:.4f}, "
              f"pick / best geomean {math.exp(log_pick / shapes):.4f} ({shapes} bench-shapes)", flush=True)


if __name__ == "__main__":
    main()
