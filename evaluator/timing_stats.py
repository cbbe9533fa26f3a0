"""The arithmetic of device timing: how many rotated input sets, how many launches per graph
replay, which set a replay writes last, and the summary (median, min, max) of repeated samples.

Pure Python (no torch, no CUDA), so it is unit-tested on machines without a GPU.
"""

from __future__ import annotations

import math

# Rotated input sets never take more than this much device memory in total (unless 2 sets do).
MAX_ROTATION_BYTES = 8 << 30
# Nor are there more sets than this: a replay launches once per set, and every launch is captured
# one by one. Only sets under 3 x L2 / 65536 bytes (2.9 KB on an H200, 5x3x33 is 558 bytes) are
# capped by it; their rotation covers less than 3 x L2 (65536 x 558 bytes = 37 MB).
MAX_ROTATION_SETS = 1 << 16


def rotation_set_count(l2_bytes: int, set_bytes: int, l2_multiple: float) -> int:
    """Input sets to rotate over: together >= l2_multiple x L2 when one set fits in L2, at least 2,
    and no more than MAX_ROTATION_BYTES worth or MAX_ROTATION_SETS (but still at least 2)."""
    n_sets = max(2, math.ceil(l2_multiple * l2_bytes / set_bytes))
    return min(n_sets, MAX_ROTATION_SETS, max(2, int(MAX_ROTATION_BYTES // set_bytes)))


def rotation_multiple(l2_bytes: int, set_bytes: int, l2_multiple: float) -> "float | None":
    """The rotation's total as a multiple of L2 where it falls short of `l2_multiple` though one
    set fits in L2 (sets capped by MAX_ROTATION_SETS: a figure below the protocol), else None."""
    if set_bytes >= l2_bytes:
        return None
    total = rotation_set_count(l2_bytes, set_bytes, l2_multiple) * set_bytes
    return total / l2_bytes if total < l2_multiple * l2_bytes else None


def autotune_launches(n_sets: int, most: int) -> int:
    """Launches a graph of the cuBLASLt autotuner replays for each algorithm it tries: one per
    rotated set (at least 10), but no more than `most`: past it (sets under 3 x L2 / most bytes)
    the algorithms are screened over the first `most` sets and the fastest few timed again over
    all of them (worker_baselines.autotune)."""
    return max(min(n_sets, int(most)), 10)


def launches_per_replay(est_ms: float, n_sets: int, target_replay_ms: float, max_launches: int) -> int:
    """Back-to-back launches captured in one graph: enough for a replay of about target_replay_ms
    (at most max_launches), never fewer than one per input set; a small count is rounded up to a
    whole number of passes over the sets."""
    launches = max(n_sets, min(int(max_launches), math.ceil(target_replay_ms / max(est_ms, 1e-3))))
    return int(math.ceil(launches / n_sets) * n_sets) if launches <= 4 * n_sets else launches


def last_set_index(launches: int, n_sets: int) -> int:
    """The input set written by the last launch of a replay (launch i uses set i % n_sets)."""
    return (launches - 1) % n_sets


def summary(samples: "list[float]") -> dict:
    """Median (mean of the two middle values for an even count), min, max and count, in us."""
    xs = sorted(samples)
    n = len(xs)
    median = xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])
    return {"median_us": median, "min_us": xs[0], "max_us": xs[-1], "repeats": n}


def upper_median(samples: "list[float]") -> float:
    """The middle value, the upper one of the two for an even count (the autotuner's pick)."""
    return sorted(samples)[len(samples) // 2]
