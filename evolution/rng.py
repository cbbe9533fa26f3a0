"""Seeds derived from the campaign seed: every random choice of a campaign draws from one."""

from __future__ import annotations

import hashlib
from typing import Any


def derive_seed(*parts: Any) -> int:
    """A 63-bit seed from the campaign seed and names (stable across processes and Python versions)."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)
