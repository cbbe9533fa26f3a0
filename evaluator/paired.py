"""Paired ratios of interleaved timings (MEASURE.md, "a fitness that sees 2%").

The GPU worker times every candidate once per round, rounds in shuffled order, so sample r of a
kernel and sample r of a baseline (or of the kernel's own twin) were taken within one round of
each other, under nearly the same clock and power state. The ratio of each such pair cancels the
drift that moves both; the median of the ratios, with their range, is the figure to quote. An
A/A pair (a kernel against a twin of itself) shows how far that figure moves with nothing changed.

A round of many candidates can last long enough for the clock to move within it, so a run may
name a reference: the worker then times every other candidate between two replays of the
reference and keeps those samples with it (`Timing.ref_samples_us`, before, and `ref_after_us`,
after); pairs are then milliseconds apart, a steady drift across the pair cancels in the geometric
mean of the two, and two candidates compare through their samples normalised by the reference's.

The figure is the median of the per-round ratios. Its spread is quoted two ways: the range of the
ratios (smallest to largest, which widens as rounds are added) and a distribution-free confidence
interval of the median from the order statistics (`median_interval`: the narrowest pair of order
statistics that covers the median with at least 95% probability; at 5 rounds no pair reaches 95%,
and the range, 94%, is the interval), which narrows as rounds are added.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from .api import Timing


# the confidence of the interval of the median that a paired figure quotes
MEDIAN_CONFIDENCE = 0.95


@dataclass(frozen=True)
class PairedRatio:
    median: float   # median over rounds of reference time / candidate time (> 1: candidate faster)
    low: float      # smallest and largest per-round ratio
    high: float
    rounds: int
    ci_low: "float | None" = None   # the median's confidence interval (median_interval); None in
    ci_high: "float | None" = None  # figures stored before it was kept

    @property
    def spread(self) -> float:
        """(high - low) / median, as the spread of a Timing."""
        return (self.high - self.low) / self.median

    @property
    def ci_spread(self) -> float:
        """The median's confidence interval relative to it (the range where it was not kept)."""
        if self.ci_low is None or self.ci_high is None:
            return self.spread
        return (self.ci_high - self.ci_low) / self.median

    def to_dict(self) -> dict:
        return asdict(self)


def _median(xs: "list[float]") -> float:
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def median_interval(xs: "list[float]", confidence: float = MEDIAN_CONFIDENCE) -> "tuple[float, float]":
    """A distribution-free confidence interval of the median of `xs`: the order statistics
    x(k) and x(n+1-k) (1-based, sorted) with the largest k whose coverage, 1 - 2 P(Binomial(n, 1/2)
    <= k - 1), is at least `confidence`; the range (k = 1) when no k reaches it (n <= 5 at 95%).
    It assumes only that the rounds are independent draws of one distribution."""
    ys = sorted(xs)
    n = len(ys)
    if n == 0:
        raise ValueError("no samples")

    def coverage(k: int) -> float:   # 1 - 2 P(B <= k - 1), B ~ Binomial(n, 1/2)
        return 1.0 - 2.0 * sum(math.comb(n, i) for i in range(k)) / 2.0 ** n

    k = 1
    while k + 1 <= (n + 1) // 2 and coverage(k + 1) >= confidence:
        k += 1
    return ys[k - 1], ys[n - k]


def _references(t: Timing) -> "list[float] | None":
    """The reference sample each of t's samples is paired with: the geometric mean of the
    reference's replays right before and right after it, or the one before (older figures)."""
    before, after = t.ref_samples_us, t.ref_after_us
    if before and after and len(after) == len(before):
        return [math.sqrt(b * a) if b > 0 and a > 0 else 0.0 for b, a in zip(before, after)]
    return before


def _ratios(reference: Timing, candidate: Timing) -> "list[float] | None":
    """reference / candidate, pair by pair. Timed in alternation with a reference (every other
    candidate's sample sits between two of the reference's, kept in `ref_samples_us` and
    `ref_after_us`), a candidate's sample is first divided by its reference sample (`_references`);
    the one timing of a run without `ref_samples_us` is then the reference itself. Otherwise the
    samples of one round pair up (the same number of rounds each)."""
    a, b = reference.samples_us, candidate.samples_us
    ra, rb = _references(reference), _references(candidate)
    if not a or not b:
        return None
    if ra and rb:        # both alternated with the reference: compare their normalised samples
        if len(a) != len(ra) or len(b) != len(rb) or len(a) != len(b):
            return None
        return [(x / rx) / (y / ry) for x, rx, y, ry in zip(a, ra, b, rb) if min(x, rx, y, ry) > 0]
    if rb:               # `reference` is the alternation reference: its sample right before ours
        return [rx / y for rx, y in zip(rb, b) if rx > 0 and y > 0] if len(rb) == len(b) else None
    if ra:               # `candidate` is the alternation reference
        return [x / rx for x, rx in zip(a, ra) if x > 0 and rx > 0] if len(ra) == len(a) else None
    if len(a) != len(b):
        return None
    return [x / y for x, y in zip(a, b) if x > 0 and y > 0]


def paired_ratio(reference: "Timing | None", candidate: "Timing | None") -> "PairedRatio | None":
    """reference / candidate, pair by pair (see `_ratios`); None when either has no per-round
    samples (the simulator's) or they cannot be paired."""
    if reference is None or candidate is None:
        return None
    ratios = _ratios(reference, candidate)
    if not ratios:
        return None
    ci_low, ci_high = median_interval(ratios)
    return PairedRatio(_median(ratios), min(ratios), max(ratios), len(ratios), ci_low, ci_high)


# Bounds on the reference within a run. Its samples taken right before a kernel's may differ from
# its own median in the run by at most ADJACENT_TOLERANCE, and that median from its median when the
# shape started by at most START_TOLERANCE; beyond them the pairs are not trusted. Beyond the second
# the kernel's raw median stands, which is pessimistic when the clock itself swung that far (an
# x2 host slowed a reference 1.9x and the kernel beside it 1.55x: the pairs said 166 us, the raw
# median 317 us, the bench later 198 us; only a repeat is right there): a kernel may be lost, a
# fake winner is not admitted. On the H200 a
# torch_tn reference took 221 us through one worker run where it had taken 101 us at the shape's
# start and 106 us in the next run: paired with it, a 109 us kernel read as 50 us, twice as fast
# as the vendor, and entered a hall of fame through its confirming measurement.
ADJACENT_TOLERANCE = 1.25
START_TOLERANCE = 1.5


def _within(ratio: float, tolerance: float) -> bool:
    return 1.0 / tolerance <= ratio <= tolerance


def _unpaired(t: Timing) -> Timing:
    return replace(t, ref_samples_us=None, ref_after_us=None)


def paired_figure(reference: str, reference_start_us: float, reference_timing: "Timing | None",
                  kernel_timing: "Timing | None") -> "dict | None":
    """A kernel against the shape's reference baseline timed in the same rounds, as stored in
    Measurement.paired; `effective_us` is the kernel's time scaled to the reference's time when
    the shape's baselines were measured (what the search ranks by).

    `pairing` says what the scaling used: "adjacent" (the reference's samples taken right around
    the kernel's; the default), "run" (the reference's own samples of the run, round by round,
    when the adjacent ones' median is off its run median by more than ADJACENT_TOLERANCE; their
    median is kept as `adjacent_us`) or "raw" (none: `effective_us` is the kernel's own median,
    when the reference's run median is off its start median by more than START_TOLERANCE). The
    ratio fields are always those of the pairs."""
    if reference_timing is None or kernel_timing is None or not reference_start_us or reference_start_us <= 0:
        return None
    pairing, extra = "adjacent", {}
    adjacent = _references(kernel_timing)
    if adjacent and reference_timing.median_us > 0:
        local = _median(adjacent)
        if not _within(local / reference_timing.median_us, ADJACENT_TOLERANCE):
            pairing, extra = "run", {"adjacent_us": local}
            kernel_timing, reference_timing = _unpaired(kernel_timing), _unpaired(reference_timing)
    ratio = paired_ratio(reference_timing, kernel_timing)
    if ratio is None:
        return None
    effective = float(reference_start_us) / ratio.median
    if not _within(reference_timing.median_us / float(reference_start_us), START_TOLERANCE):
        pairing, effective = "raw", kernel_timing.median_us
    return {"reference": reference, "reference_start_us": float(reference_start_us),
            "reference_us": reference_timing.median_us, **ratio.to_dict(),
            "effective_us": effective, "pairing": pairing, **extra}
