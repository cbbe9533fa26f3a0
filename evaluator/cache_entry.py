"""One entry of the kernel build cache on disk: where it lives, its files, and how it is published.

An entry is a folder `<cache>/<key[:2]>/<key>` holding kernel.so (when the build succeeded), build.log and
meta.json (the BuildResult). It is written in a hidden work folder beside it and renamed into place whole,
meta.json inside, so that no process ever sees an entry without its meta.json; an entry without one (left by
a build killed half-way before entries were published whole, or by a foreign tool) is replaced.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

ENTRY_FILES = ("kernel.so", "build.log", "meta.json")


def entry_path(cache_dir: Path, key: str) -> Path:
    """The folder of the entry of build key `key` in `cache_dir`."""
    return cache_dir / key[:2] / key


def work_folder(final: Path) -> Path:
    """A fresh hidden folder beside the entry `final`, to write it in before it is published."""
    final.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))


def entry_files(entry: Path) -> "dict[str, bytes]":
    """The files of a published entry (to ship it to another machine's cache)."""
    return {name: (entry / name).read_bytes() for name in ENTRY_FILES if (entry / name).exists()}


def publish_entry(work: Path, final: Path) -> bool:
    """Rename a finished entry (a folder holding meta.json) into place; False, with `work` removed, when a
    whole entry is there already (another process built the same key). An entry without meta.json is moved
    aside and replaced."""
    for _ in range(2):
        try:
            os.rename(work, final)
            return True
        except OSError:
            if (final / "meta.json").exists() or not final.exists():
                break
            stale = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".stale", dir=final.parent))
            try:
                os.rename(final, stale / "entry")
            except OSError:
                pass  # someone else moved it meanwhile
            shutil.rmtree(stale, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    return False


def publish_files(cache_dir: Path, key: str, files: "dict[str, bytes]") -> bool:
    """Write a shipped entry under `key`; False when the entry was already there (another build of the same
    key, or a shared cache folder)."""
    final = entry_path(cache_dir, key)
    if (final / "meta.json").exists():
        return False
    work = work_folder(final)
    for name, data in files.items():
        (work / name).write_bytes(data)
    return publish_entry(work, final)
