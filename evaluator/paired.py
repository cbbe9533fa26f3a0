"""Paired ratios of interleaved timings (MEASURE.md, "a fitness that sees 2%").

The GPU worker times every candidate once per round, rounds in shuffled order, so sample r of a
kernel and sample r of a baseline (or of the kernel's own twin) were taken within one round of
each other, under nearly the same clock and power state. The ratio of each such pair cancels the
drift that moves both; the median of the ratios, with their range, is the figure to quote. An
A/A pair (a kernel against a twin of itself) shows how far that figure moves with nothing changed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .api import Timing


@dataclass(frozen=True)
class PairedRatio:
    median: float   # median over rounds of reference time / candidate time (> 1: candidate faster)
    low: float      # smallest and largest per-round ratio
    high: float
    rounds: int

    @property
    def spread(self) -> float:
        """(high - low) / median, as the spread of a Timing."""
        return (self.high - self.low) / self.median

    def to_dict(self) -> dict:
        return asdict(self)


def _median(xs: "list[float]") -> float:
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def paired_ratio(reference: "Timing | None", candidate: "Timing | None") -> "PairedRatio | None":
    """reference / candidate, round by round; None when either has no per-round samples (the
    simulator's) or they were not timed in the same rounds."""
    if reference is None or candidate is None:
        return None
    a, b = reference.samples_us, candidate.samples_us
    if not a or not b or len(a) != len(b):
        return None
    ratios = [x / y for x, y in zip(a, b) if x > 0 and y > 0]
    if len(ratios) != len(a):
        return None
    return PairedRatio(_median(ratios), min(ratios), max(ratios), len(ratios))


def paired_figure(reference: str, reference_start_us: float, reference_timing: "Timing | None",
                  kernel_timing: "Timing | None") -> "dict | None":
    """A kernel against the shape's reference baseline timed in the same rounds, as stored in
    Measurement.paired; `effective_us` is the kernel's time scaled to the reference's time when
    the shape's baselines were measured (what the search ranks by)."""
    ratio = paired_ratio(reference_timing, kernel_timing)
    if ratio is None or not reference_start_us or reference_start_us <= 0:
        return None
    return {"reference": reference, "reference_start_us": float(reference_start_us),
            "reference_us": reference_timing.median_us, **ratio.to_dict(),
            "effective_us": float(reference_start_us) / ratio.median}
