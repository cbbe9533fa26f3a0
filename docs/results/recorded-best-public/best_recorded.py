"""For each shape of the public record (docs/results/h200-public.json): the highest ratio of the bench's best
vendor baseline to a kernel's device time that any device bench under docs/results/ recorded. Reads JSON,
measures nothing. The maximum over many noisy draws is biased upward: an upper bound of what choosing among
the kernels already measured could give, not a result. Only benches run on an H200 count (the record's GPU), and
kernels carrying a parameter today's spaces refuse (`gemm_pdl`, `l2_promotion`: probe-only parameters; PDL
between graph replays made `gemm_pdl` look faster than it is, ../h200-gemm-pdl/) are skipped.

    python docs/results/recorded-best-public/best_recorded.py > docs/results/recorded-best-public/table.md
"""

from __future__ import annotations

import json
import math
from pathlib import Path

RESULTS = Path(__file__).resolve().parent.parent


PROBE_ONLY = ("gemm_pdl", "l2_promotion")


def bench_files(device: str | None = None):
    """Every device bench JSON under docs/results/; with `device`, only those whose GPU name contains it."""
    for path in sorted(RESULTS.rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and isinstance(data.get("shapes"), list) and not (data.get("meta") or {}).get("simulated"):
            if device is None or device in str((data.get("meta") or {}).get("device", "")):
                yield path, data


def ratios_in(data: dict, shapes: set[str]):
    """(shape, ratio of the bench's best vendor time to the kernel's, the kernel's genome dict) for every passing
    kernel run at one of `shapes` in one bench's JSON."""
    for shape in data["shapes"]:
        if not isinstance(shape, dict) or shape.get("problem") not in shapes:
            continue
        vendor = [b["median_us"] for b in ((shape.get("baselines") or {}).get("device") or {}).values()
                  if isinstance(b, dict) and b.get("median_us")]
        if not vendor:
            continue
        for kernel in shape.get("kernels", []):
            m = kernel["measurement"]
            if m.get("status") != "ok" or not isinstance(m.get("device"), dict):
                continue
            yield shape["problem"], min(vendor) / m["device"]["median_us"], kernel["genome"]


def kernel_ratios(shapes: set[str], device: str | None = None):
    """(shape, ratio of the bench's best vendor time to the kernel's, the kernel's genome dict, the bench's path
    under docs/results) for every passing kernel run at one of `shapes` in every device bench (on `device`)."""
    for path, data in bench_files(device):
        for problem, ratio, genome in ratios_in(data, shapes):
            yield problem, ratio, genome, str(path.relative_to(RESULTS))


def best_ratios(shapes: set[str]) -> dict[str, tuple[float, str, str]]:
    best: dict[str, tuple[float, str, str]] = {}
    for problem, ratio, genome, bench in kernel_ratios(shapes, device="H200"):
        if any(genome.get("params", {}).get(k) for k in PROBE_ONLY):
            continue
        if ratio > best.get(problem, (0.0,))[0]:
            best[problem] = (ratio, genome["id"][:8], bench)
    return best


def main() -> None:
    record = json.loads((RESULTS / "h200-public.json").read_text())
    rec = {s["problem"]: s["speedups"]["best_vendor"] for s in record["shapes"]}
    best = best_ratios(set(rec))
    print("| shape | record (h200-public.json) | best in any device bench | kernel | bench |")
    print("|---|---|---|---|---|")
    logs = ([], [])
    for shape, r in rec.items():
        b = best.get(shape, (r, "-", "-"))
        top = max(b[0], r)
        logs[0].append(math.log(r))
        logs[1].append(math.log(top))
        print(f"| {shape} | {r:.3f} | {top:.3f} | {b[1]} | {b[2]} |")
    print(f"\ngeomean: record {math.exp(sum(logs[0]) / len(rec)):.4f}x, best in any bench "
          f"{math.exp(sum(logs[1]) / len(rec)):.4f}x over {len(rec)} shapes")


if __name__ == "__main__":
    main()
