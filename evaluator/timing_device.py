"""Device time in the GPU worker (../shared/MEASURE.md): each candidate's launches are captured
back to back in a CUDA graph rotating over input sets (>= 3x L2 in total), all graphs are warmed
up round robin, then timed in interleaved rounds in a shuffled order (each candidate between two
replays of the run's reference, when it names one), back to back; one more, untimed replay of each
graph then re-checks its output. A call's first launch depends fully on the previous call (a
programmatic dependent launch's edge is made full, worker_cuda.full_dependencies): no call overlaps
the previous one. The figure is the median time per launch over the rounds, with min/max, and the
samples of every round in order: two candidates' samples of one round were taken within one round
of each other, so their ratios pair out clock and power drift (evaluator/paired.py).
"""

from __future__ import annotations

import random
import sys
import time
from typing import TYPE_CHECKING

from .timing_stats import last_set_index, launches_per_replay, rotation_set_count, summary
from .worker_candidates import Candidate, alive
from .worker_cuda import KernelFault
from .worker_gate import recheck_output
from .worker_inputs import InputSet, Problem, make_sets, poison

if TYPE_CHECKING:  # only for annotations: the worker imports this module, not the other way
    from .gpu_worker import Worker


def rotation_sets(w: "Worker", cands: "list[Candidate]", p: Problem, cfg: dict, rng: random.Random,
                  need_wt: bool) -> "list[InputSet]":
    """The input sets that timing rotates over (none when no candidate is left to time)."""
    n_sets = rotation_set_count(w.l2_bytes, p.set_bytes, cfg["l2_multiple"]) if alive(cands) else 0
    return make_sets(w.torch, p, n_sets, rng, need_wt)


def measure_device_time(w: "Worker", cands: "list[Candidate]", sets: "list[InputSet]", cfg: dict,
                        rng: random.Random) -> "tuple[dict, dict]":
    """Capture, warm up and time every live candidate; record their device figures. Returns the
    clocks (SM MHz, power, temperature) just before and just after the timed rounds."""
    capture_graphs(w, alive(cands), sets, cfg)
    live = alive(cands)
    warm_up(w, live, cfg["warmup_s"])
    clocks_before = w.clocks()
    timed_rounds(w, live, sets, cfg, rng)
    clocks_after = w.clocks()
    record_device_results(cands)
    return clocks_before, clocks_after


def capture_graphs(w: "Worker", live: "list[Candidate]", sets: "list[InputSet]", cfg: dict) -> None:
    """One graph per candidate, of enough launches for a replay of about target_replay_ms; a
    candidate whose capture fails is reported as unsupported."""
    n_sets = len(sets)
    for cand in live:
        try:
            w.running(cand.id, "capture")
            est_ms = min(w.cuda.timed_once_ms(lambda: cand.enqueue(sets[0])) for _ in range(3))
            launches = launches_per_replay(est_ms, n_sets, cfg["target_replay_ms"], int(cfg["max_launches"]))
            cand.launches = launches
            before = w.cuda.edges_made_full
            cand.graph, cand.exe = w.cuda.capture(lambda i: cand.enqueue(sets[i % n_sets]), launches)
            made_full = w.cuda.edges_made_full - before
            if made_full:  # a dependent launch: timed as after any other kernel
                print(f"evogemm worker: {cand.id}: {made_full} programmatic edges of its graph made full "
                      "dependencies", file=sys.stderr)
        except KernelFault:
            raise
        except Exception as exc:
            cand.alive = False
            cand.result.update(status="unsupported", reason=f"graph capture failed: {type(exc).__name__}: {exc}")


def warm_up(w: "Worker", live: "list[Candidate]", warmup_s: float) -> None:
    """Replay every graph round robin for at least warmup_s seconds (clocks up, caches settled)."""
    if not live:
        return
    t0 = time.monotonic()
    while time.monotonic() - t0 < warmup_s:
        for cand in live:
            w.running(cand.id, "warmup")
            w.cuda.replay_ms(cand.exe)


def timed_rounds(w: "Worker", live: "list[Candidate]", sets: "list[InputSet]", cfg: dict,
                 rng: random.Random) -> None:
    """`repeats` rounds, each replaying every graph once in a fresh shuffled order; one sample
    per replay (us per launch). With a reference (cfg["reference"], a live candidate's id), the
    round is R c1 R c2 R ... cn R: each other candidate's replay sits between two replays of the
    reference, whose samples are kept with it (`ref_samples` before, `ref_after` after): the pair
    is a few milliseconds apart however many candidates a round holds, and the reference on both
    sides cancels a clock that drifts steadily across the pair (paired.py uses their geometric
    mean). The rounds run back to back; after them one more replay of each graph, not timed, has
    the set it writes last poisoned first and its output checked after: the timed graph must
    still be right. (Checking inside the last timed round left the GPU idle between replays, and
    the clock boosts after idle: that round's pairs were the outliers of every A/A figure above
    1 ms.)"""
    repeats = int(cfg["repeats"])
    reference = next((c for c in live if c.id == cfg.get("reference")), None)
    if reference is not None and len(live) < 2:
        reference = None
    for _ in range(repeats):
        order = [c for c in live if c is not reference]
        rng.shuffle(order)
        before = _timed_replay(w, reference) if reference is not None else None
        for cand in order:
            _timed_replay(w, cand)
            if reference is not None:
                after = _timed_replay(w, reference)
                cand.ref_samples.append(before)
                cand.ref_after.append(after)
                before = after
    for cand in live:
        final = sets[last_set_index(cand.launches, len(sets))]
        poison(w.torch, final)  # the replay must write every element again
        w.running(cand.id, "recheck")
        w.cuda.replay_ms(cand.exe)
        recheck_output(w.torch, cand, final, cfg["tolerance"])


def _timed_replay(w: "Worker", cand: Candidate) -> float:
    """One timed replay of a candidate's graph: its sample (us per launch), recorded."""
    w.running(cand.id, "time")
    us = w.cuda.replay_ms(cand.exe) * 1000.0 / cand.launches
    cand.samples.append(us)
    return us


def record_device_results(cands: "list[Candidate]") -> None:
    """The device figure of each candidate timed and still right; its status becomes ok unless set."""
    for cand in cands:
        if cand.samples and cand.alive:
            cand.result["device"] = {**summary(cand.samples), "samples_us": [round(x, 4) for x in cand.samples]}
            if cand.ref_samples:
                cand.result["device"]["ref_samples_us"] = [round(x, 4) for x in cand.ref_samples]
            if cand.ref_after:
                cand.result["device"]["ref_after_us"] = [round(x, 4) for x in cand.ref_after]
            cand.result["launches_per_replay"] = cand.launches
            cand.result.setdefault("status", "ok")
