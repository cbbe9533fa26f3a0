"""Input sets of the GPU worker: fresh standard-normal fp16 A and W, and an output C inside
canary bands, poisoned with NaN before every checked run (../shared/MEASURE.md).

torch is passed in by the caller (the worker imports it), so importing this module needs no GPU.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

NAN_FP16 = 0x7E00
CANARY_FP16 = 0x7C01  # a signalling-NaN bit pattern no kernel produces by arithmetic
CANARY_ELEMS = 8192   # 16 KB before and after C


@dataclass
class Problem:
    m: int
    n: int
    k: int

    @property
    def set_bytes(self) -> int:
        return 2 * (self.m * self.k + self.n * self.k + self.m * self.n)


@dataclass
class InputSet:
    a: Any       # (M, K) fp16
    w: Any       # (N, K) fp16
    wt: Any      # (K, N) fp16, W^T contiguous (for the NN baselines); None unless asked for
    c_flat: Any  # fp16 [canary | C | canary]
    c: Any       # (M, N) view inside c_flat

    def c_ptr(self) -> int:
        return self.c.data_ptr()


def _normal(torch, shape, gen):
    return torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32).to(torch.float16)


def make_set(torch, p: Problem, seed: int, need_wt: bool) -> InputSet:
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    a = _normal(torch, (p.m, p.k), gen)
    w = _normal(torch, (p.n, p.k), gen)
    c_flat = torch.empty(p.m * p.n + 2 * CANARY_ELEMS, device="cuda", dtype=torch.float16)
    c = c_flat[CANARY_ELEMS:CANARY_ELEMS + p.m * p.n].view(p.m, p.n)
    wt = w.t().contiguous() if need_wt else None
    s = InputSet(a, w, wt, c_flat, c)
    poison(torch, s)
    return s


# More rotated sets than this are made in one batch (make_set_batch), not one by one: sets under
# 3 x L2 / 4096 bytes (38-46 KB with 50-60 MB of L2; no shape of either suite: 128^3 takes 1,920 sets),
# where one by one took minutes (5x3x33 on an H100: 281,876 sets, 35 s to make, and a graph of as many
# launches for every candidate). Shapes with fewer sets keep the sets their benches were measured with.
BATCH_SETS_FROM = 4096


def make_sets(torch, p: Problem, n_sets: int, rng: random.Random, need_wt: bool) -> "list[InputSet]":
    """`n_sets` input sets, ready on the device: each from its own seed drawn from `rng`, or, past
    BATCH_SETS_FROM of them (tiny sets: up to MAX_ROTATION_SETS), all from one seed in one batch."""
    if n_sets > BATCH_SETS_FROM:
        return make_set_batch(torch, p, n_sets, seed=rng.randrange(1 << 30), need_wt=need_wt)
    sets = [make_set(torch, p, seed=rng.randrange(1 << 30), need_wt=need_wt) for _ in range(n_sets)]
    torch.cuda.synchronize()
    return sets


def make_set_batch(torch, p: Problem, n_sets: int, seed: int, need_wt: bool,
                   chunk_elems: int = 1 << 24) -> "list[InputSet]":
    """`n_sets` input sets as views of one A, one W (and W^T) and one C buffer: a few dozen device
    calls however many sets (one by one, each set is a generator, two fills, a poison and a
    synchronisation: 5000 sets of 5x3x33 took 0.62 s on an H100). Every A, W, W^T and C starts on a SET_ALIGN-byte boundary, as its own
    allocation would (a kernel may refuse operands off 16 bytes); the C of each set has its canary
    bands, and neighbours share one."""
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)

    def slots(rows: int, cols: int):
        """(n_sets, rows, cols) views of one buffer, each set's slot starting on SET_ALIGN bytes."""
        buf = torch.empty((n_sets, _aligned(rows * cols)), device="cuda", dtype=torch.float16)
        return buf[:, :rows * cols].view(n_sets, rows, cols)

    def normal(rows: int, cols: int):
        out = slots(rows, cols)
        step = max(1, chunk_elems // (rows * cols))
        for first in range(0, n_sets, step):      # bounded fp32 scratch
            part = out[first:first + step]
            part.copy_(torch.randn(part.shape, generator=gen, device="cuda", dtype=torch.float32))
        return out

    a, w = normal(p.m, p.k), normal(p.n, p.k)
    wt = None
    if need_wt:
        wt = slots(p.k, p.n)
        wt.copy_(w.transpose(1, 2))
    mn, stride = p.m * p.n, _aligned(p.m * p.n + CANARY_ELEMS)
    c_all = torch.empty(n_sets * stride + CANARY_ELEMS, device="cuda", dtype=torch.float16)
    c_all.view(torch.int16).fill_(CANARY_FP16)
    c_all[:n_sets * stride].view(n_sets, stride)[:, CANARY_ELEMS:CANARY_ELEMS + mn].view(torch.int16).fill_(NAN_FP16)
    sets = []
    for i in range(n_sets):
        c_flat = c_all[i * stride:i * stride + CANARY_ELEMS + mn + CANARY_ELEMS]
        sets.append(InputSet(a[i], w[i], wt[i] if need_wt else None, c_flat,
                             c_flat[CANARY_ELEMS:CANARY_ELEMS + mn].view(p.m, p.n)))
    torch.cuda.synchronize()
    return sets


SET_ALIGN = 256  # bytes: where every operand of a batched set starts (torch's own allocations: 512)


def _aligned(elems: int) -> int:
    """fp16 elements rounded up to whole SET_ALIGN-byte slots."""
    per = SET_ALIGN // 2
    return -(-elems // per) * per


def poison(torch, s: InputSet) -> None:
    raw = s.c_flat.view(torch.int16)
    raw.fill_(CANARY_FP16)
    s.c.view(torch.int16).fill_(NAN_FP16)
    torch.cuda.synchronize()  # the kernel under test runs on another stream


def reference(torch, s: InputSet):
    """The fp32 product of this set's inputs, on the GPU."""
    return torch.matmul(s.a.float(), s.w.float().t())
