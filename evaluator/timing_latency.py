"""The GPU worker's two latency figures beside device time (../shared/MEASURE.md): server mode
(one launch after a random idle gap with L2 flushed, device time with the host launch cost gated
out) and call latency (wall time of one synchronised call from Python).
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING

from .timing_stats import summary
from .worker_candidates import Candidate
from .worker_inputs import InputSet

if TYPE_CHECKING:  # only for annotations: the worker imports this module, not the other way
    from .gpu_worker import Worker


def server_mode(w: "Worker", live: "list[Candidate]", sets: "list[InputSet]", cfg: dict, rng: random.Random) -> None:
    """`server_samples` rounds in shuffled order: flush L2, sleep an exponential gap of mean
    server_gap_ms, then time one gated launch on a random input set."""
    torch = w.torch
    samples: "dict[str, list[float]]" = {c.id: [] for c in live}
    flag = torch.zeros(1, dtype=torch.int32, device="cuda")
    gated = True
    for _ in range(int(cfg["server_samples"])):
        order = live[:]
        rng.shuffle(order)
        for cand in order:
            s = sets[rng.randrange(len(sets))]
            flag.zero_()
            w.flush_buf.zero_()  # evict L2
            torch.cuda.synchronize()
            time.sleep(rng.expovariate(1.0 / (cfg["server_gap_ms"] / 1000.0)))
            w.running(cand.id, "server")
            ms, was_gated = w.cuda.gated_once_ms(lambda: cand.enqueue(s), flag.data_ptr())
            gated = gated and was_gated
            samples[cand.id].append(1000.0 * ms)
    for cand in live:
        cand.result["server"] = summary(samples[cand.id])
        cand.result["server_gated"] = gated


def call_latency(w: "Worker", live: "list[Candidate]", sets: "list[InputSet]", cfg: dict, rng: random.Random) -> None:
    """`call_samples` rounds: wall time of one enqueue plus stream synchronisation, in us."""
    samples: "dict[str, list[float]]" = {c.id: [] for c in live}
    for _ in range(int(cfg["call_samples"])):
        for cand in live:
            s = sets[rng.randrange(len(sets))]
            w.running(cand.id, "call")
            t = time.perf_counter()
            cand.enqueue(s)
            w.cuda.sync()
            samples[cand.id].append((time.perf_counter() - t) * 1e6)
    for cand in live:
        cand.result["call"] = summary(samples[cand.id])
