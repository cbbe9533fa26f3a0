"""Shared pytest setup: `gpu` tests skip cleanly without a Hopper GPU, `nvcc` tests without nvcc."""

from __future__ import annotations

import shutil

import pytest


def _gpu_reason() -> "str | None":
    from evaluator.factory import gpu_available
    ok, why = gpu_available()
    return None if ok else why


def pytest_collection_modifyitems(config, items):
    gpu_items = [i for i in items if "gpu" in i.keywords]
    if gpu_items:
        reason = _gpu_reason()
        if reason:
            for item in gpu_items:
                item.add_marker(pytest.mark.skip(reason=f"needs a Hopper GPU: {reason}"))
    if not shutil.which("nvcc"):
        for item in items:
            if "nvcc" in item.keywords:
                item.add_marker(pytest.mark.skip(reason="nvcc not on PATH"))


@pytest.fixture(scope="session")
def kernel_cache(tmp_path_factory):
    """One kernel cache shared by the tests of a session (a real build costs ~30-45 s)."""
    return tmp_path_factory.mktemp("kcache")
