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


def make_sets(torch, p: Problem, n_sets: int, rng: random.Random, need_wt: bool) -> "list[InputSet]":
    """`n_sets` input sets, each from its own seed drawn from `rng`, ready on the device."""
    sets = [make_set(torch, p, seed=rng.randrange(1 << 30), need_wt=need_wt) for _ in range(n_sets)]
    torch.cuda.synchronize()
    return sets


def poison(torch, s: InputSet) -> None:
    raw = s.c_flat.view(torch.int16)
    raw.fill_(CANARY_FP16)
    s.c.view(torch.int16).fill_(NAN_FP16)
    torch.cuda.synchronize()  # the kernel under test runs on another stream


def reference(torch, s: InputSet):
    """The fp32 product of this set's inputs, on the GPU."""
    return torch.matmul(s.a.float(), s.w.float().t())
