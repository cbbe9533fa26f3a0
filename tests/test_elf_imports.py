"""A patched kernel whose library imports a forbidden function (system, fork, exec*, sockets that
send ...) is refused at build time, whatever name the source gave it; unpatched kernels are ours and
are not checked. The libraries here are built with the host C compiler (skipped without one)."""

import shutil
import subprocess

import pytest

from evaluator.compile import Compiler, Toolchain
from evaluator.elf_imports import FORBIDDEN_IMPORTS, forbidden_imports, imported_symbols
from genome import Genome, Patch
from templates import block_source, get_space

SPACE = get_space("sm90_cutlass")
SMALL = dict(SPACE.default_params(), schedule="pingpong", tile_m=64, tile_n=64, tile_k=64)
needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no host C compiler")

# the C source hides `system` behind an asm label, as a patch might
HIDDEN_SYSTEM = 'extern int run_cmd(const char*) __asm__("system");\nint go(void) { return run_cmd("true"); }\n'
HONEST = "#include <string.h>\nint go(const char* s) { return (int)strlen(s); }\n"

FAKE_NVCC = """#!/bin/sh
# copies the library named by $EVOGEMM_TEST_LIB to the -o path, as if nvcc had built it
out=""
while [ $# -gt 0 ]; do if [ "$1" = "-o" ]; then out="$2"; fi; shift; done
cp "$EVOGEMM_TEST_LIB" "$out"
echo "ptxas info    : Used 96 registers, used 1 barriers"
echo "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"
"""


def _library(tmp_path, name: str, source: str):
    src, lib = tmp_path / f"{name}.c", tmp_path / f"{name}.so"
    src.write_text(source)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True, capture_output=True)
    return lib


@needs_cc
def test_imported_symbols_sees_a_function_renamed_by_an_asm_label(tmp_path):
    hidden, honest = _library(tmp_path, "hidden", HIDDEN_SYSTEM), _library(tmp_path, "honest", HONEST)
    assert "system" in imported_symbols(hidden) and forbidden_imports(hidden) == ["system"]
    assert "strlen" in imported_symbols(honest) and forbidden_imports(honest) == []
    with pytest.raises(ValueError, match="not a 64-bit"):
        imported_symbols(tmp_path / "hidden.c")
    assert {"system", "popen", "execve", "fork", "getaddrinfo", "sendto"} <= FORBIDDEN_IMPORTS
    assert not {"getenv", "dlopen", "socket", "sendmsg", "syscall", "malloc"} & FORBIDDEN_IMPORTS  # static cudart's own


PUTS = "#include <stdio.h>\nint go(const char* s) { return puts(s); }\n"
MATH = "#include <math.h>\ndouble go(double x) { return sqrt(x) + floor(x); }\n"


@needs_cc
def test_a_patched_kernel_importing_a_forbidden_or_new_function_is_refused_at_build(tmp_path, monkeypatch):
    """Forbidden imports are refused outright; any other import that the unpatched twin does not make is
    refused too (`puts` here: no name list could hold every libc function a patch might declare)."""
    nvcc = tmp_path / "fake-nvcc"
    nvcc.write_text(FAKE_NVCC)
    nvcc.chmod(0o755)
    tools = Toolchain(nvcc=str(nvcc), nvcc_version="fake 1.0", include_dirs=(), cutlass_version="fake")
    compiler = Compiler(cache_dir=tmp_path / "cache", toolchain=tools, jobs=1)
    plain = SPACE.validate(Genome.make("sm90_cutlass", SMALL))
    patched = [plain.with_patch(Patch("kernel", block_source(plain, "kernel") + f"\n// patch {i}")) for i in range(4)]
    libs = {name: _library(tmp_path, name, src) for name, src in
            (("honest", HONEST), ("hidden", HIDDEN_SYSTEM), ("puts", PUTS), ("math", MATH))}
    try:
        monkeypatch.setenv("EVOGEMM_TEST_LIB", str(libs["hidden"]))
        first = compiler.submit(patched[0]).result()   # no unpatched kernel known yet: the forbidden list alone
        assert not first.ok and "forbidden calls: system" in first.reason and first.library is None
        monkeypatch.setenv("EVOGEMM_TEST_LIB", str(libs["honest"]))
        assert compiler.submit(plain).result().ok           # ours: not checked; its imports are the reference
        assert compiler.submit(patched[1]).result().ok      # imports what its twin imports
        monkeypatch.setenv("EVOGEMM_TEST_LIB", str(libs["puts"]))
        new = compiler.submit(patched[2]).result()
        assert not new.ok and "calls no unpatched sm90_cutlass kernel makes: puts" in new.reason
        again = compiler.build(patched[2])                   # a cache hit is checked again
        assert again.cached and not again.ok and again.library is None
        monkeypatch.setenv("EVOGEMM_TEST_LIB", str(libs["math"]))
        assert compiler.submit(patched[3]).result().ok      # math and memory helpers may be new
        # the Ray builder serves the driver's cache hits through the same check (it had served them as built)
        import threading
        from evaluator.ray_builder import BuildStats, RayBuilder
        ray_builder = object.__new__(RayBuilder)             # its cache-hit path needs no Ray
        ray_builder.compiler, ray_builder._lock, ray_builder.stats = compiler, threading.RLock(), BuildStats()
        ray_builder._spec = object()
        served = ray_builder.submit(patched[2]).result()
        assert not served.ok and "puts" in served.reason and ray_builder.stats.served_from_cache == 1
    finally:
        compiler.close()
