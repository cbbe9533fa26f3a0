"""A GEMM problem: the shape and layout a kernel is evolved for.

C[M,N] = A[M,K] @ W[N,K]^T (layout "tn", the layout of a linear layer) is the default;
fp16 inputs and output, fp32 accumulation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LAYOUTS = ("tn",)  # A row-major (M,K); W row-major (N,K); C row-major (M,N)

_SHAPE_RE = re.compile(r"^\s*(\d+)\s*[xX,\s]\s*(\d+)\s*[xX,\s]\s*(\d+)\s*$")


@dataclass(frozen=True, order=True)
class Problem:
    """One GEMM problem. Frozen and hashable, so it keys dictionaries and databases."""

    m: int
    n: int
    k: int
    layout: str = "tn"

    def __post_init__(self) -> None:
        for name in ("m", "n", "k"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"problem {name.upper()} must be an int, got {value!r}")
            if value <= 0:
                raise ValueError(f"problem {name.upper()} must be positive, got {value}")
            if value > 1 << 20:
                raise ValueError(f"problem {name.upper()}={value} is larger than 2^20")
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout {self.layout!r} is not supported; supported: {', '.join(LAYOUTS)}")

    @classmethod
    def parse(cls, text: "str | list | tuple | Problem") -> "Problem":
        """Accept '4096x4096x1024', '4096,4096,1024', [M, N, K] or a Problem."""
        if isinstance(text, Problem):
            return text
        if isinstance(text, (list, tuple)):
            if len(text) != 3:
                raise ValueError(f"a shape is [M, N, K]; got {list(text)!r}")
            return cls(*(int(v) if not isinstance(v, bool) else v for v in text))
        match = _SHAPE_RE.match(str(text))
        if not match:
            raise ValueError(f"cannot read shape {text!r}; write it as MxNxK, e.g. 4096x4096x1024")
        return cls(*(int(g) for g in match.groups()))

    @property
    def name(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def min_bytes(self) -> int:
        """Fewest bytes that must cross device memory: A and W read once, C written once (fp16)."""
        return 2 * (self.m * self.k + self.n * self.k + self.m * self.n)

    def __str__(self) -> str:
        return self.name
