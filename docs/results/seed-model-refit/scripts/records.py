"""Every passing kernel run of every committed H200 device bench under docs/results, as evaluator.sim_fit
records: one per (genome, shape), its time the median of the bench medians that timed it. Kernels with
patches or a probe-only parameter are left out. Each shape goes to group A or B by a hash of its name, so a
fit on one half can be scored on the other. Reads JSON, measures nothing.
usage (repository root): python docs/results/seed-model-refit/scripts/records.py /tmp/h200_all.json"""
import hashlib
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "recorded-best-public"))
from best_recorded import PROBE_ONLY, bench_files  # noqa: E402


def half(problem: str) -> str:
    return "A" if int(hashlib.sha1(problem.encode()).hexdigest(), 16) % 2 == 0 else "B"


def main(out: str) -> None:
    times, genomes, benches = defaultdict(list), {}, 0
    for _, data in bench_files("H200"):
        benches += 1
        for shape in data["shapes"]:
            if not isinstance(shape, dict):
                continue
            for kernel in shape.get("kernels", []):
                m, g = kernel["measurement"], kernel["genome"]
                if m.get("status") != "ok" or not isinstance(m.get("device"), dict):
                    continue
                if g.get("patches") or any(p in g.get("params", {}) for p in PROBE_ONLY):
                    continue
                times[(g["id"], shape["problem"])].append(m["device"]["median_us"])
                genomes[g["id"]] = g
    records = [{"genome": genomes[gid], "problem": p, "time_us": statistics.median(v), "group": half(p)}
               for (gid, p), v in sorted(times.items())]
    print(f"{benches} H200 benches, {len(records)} records, {len({p for _, p in times})} shapes", file=sys.stderr)
    Path(out).write_text(json.dumps({"records": records}))


if __name__ == "__main__":
    main(sys.argv[1])
