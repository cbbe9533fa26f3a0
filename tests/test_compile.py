import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluator.compile import Compiler, Toolchain, ToolchainError, first_error, parse_ptxas
from genome import Genome, Patch
from templates import get_space

SPACE = get_space("sm90_cutlass")
SMALL = dict(SPACE.default_params(), schedule="pingpong", tile_m=64, tile_n=64, tile_k=64)


def test_parse_ptxas_detects_spills_and_serialised_wgmma():
    text = ("ptxas info    : Used 168 registers, used 2 barriers\n"
            "    0 bytes stack frame, 24 bytes spill stores, 16 bytes spill loads\n"
            "ptxas warning : (C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized\n")
    report = parse_ptxas(text)
    assert report.max_registers == 168 and report.spill_bytes == 40 and report.serialised_wgmma
    clean = parse_ptxas("ptxas info : Used 90 registers\n 0 bytes spill stores, 0 bytes spill loads")
    assert clean.spill_bytes == 0 and not clean.serialised_wgmma
    assert "error" in first_error("a\nfoo.cu(3): error: bad thing\nb")


def test_missing_nvcc_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("EVOGEMM_NVCC", raising=False)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    with pytest.raises(ToolchainError, match="nvcc not found"):
        Toolchain.discover()


def test_invalid_genome_costs_no_build(tmp_path):
    bad = Genome.make("sm90_cutlass", dict(SMALL, schedule="cooperative"))
    result = Compiler.default(tmp_path).build(bad)
    assert not result.ok and "cooperative-tile-m" in result.reason and result.seconds == 0


@pytest.mark.nvcc
def test_real_sm90_build_cache_and_rejections(kernel_cache):
    compiler = Compiler.default(kernel_cache)
    genome = SPACE.validate(Genome.make("sm90_cutlass", SMALL))
    first = compiler.build(genome)
    assert first.ok, first.reason
    assert Path(first.library).exists() and first.seconds > 1 and not first.cached
    assert first.registers and first.spill_bytes == 0
    out = subprocess.run(["nm", "-D", first.library], capture_output=True, text=True).stdout
    for symbol in ("evogemm_run", "evogemm_workspace_size", "evogemm_can_implement", "evogemm_abi_version"):
        assert symbol in out
    log = Path(first.log).read_text()
    assert "-DNDEBUG" in log and "compute_90a" in log and "C7510" not in log

    start = time.monotonic()
    again = compiler.build(genome.with_params(raster="along_m", swizzle=4))
    assert again.ok and again.cached and again.build_key == first.build_key
    assert again.knobs == (1, 4, 1, 0, 0)
    assert time.monotonic() - start < 2

    # a patch that breaks the code fails with the compiler's message, and the failure is cached
    broken = genome.with_patch(Patch("kernel", "this is not C++;"))
    failed = compiler.build(broken)
    assert not failed.ok and failed.reason.startswith("compile error") and Path(failed.log).exists()
    assert compiler.build(broken).cached


@pytest.mark.nvcc
def test_cli_compile_reports_cache_hit(kernel_cache, tmp_path):
    path = tmp_path / "g.json"
    SPACE.validate(Genome.make("sm90_cutlass", SMALL)).save(path)
    cmd = [sys.executable, "-m", "experiments.cli", "compile", str(path), "--cache", str(kernel_cache)]
    a = subprocess.run(cmd, capture_output=True, text=True)
    b = subprocess.run(cmd, capture_output=True, text=True)
    assert a.returncode == 0, a.stdout + a.stderr
    assert "kernel.so" in b.stdout and "cache hit" in b.stdout


FAKE_NVCC = """#!/usr/bin/env python3
import sys, time, pathlib
args = sys.argv[1:]
out = pathlib.Path(args[args.index("-o") + 1])
with open(pathlib.Path(sys.argv[0]).with_suffix(".calls"), "a") as fh:
    fh.write(" ".join(a for a in args if not a.startswith("-I")) + "\\n")
with open(pathlib.Path(sys.argv[0]).with_suffix(".nice"), "a") as fh:
    import os
    fh.write(f"{os.nice(0)}\\n")
time.sleep(0.4)
out.write_bytes(b"not really a library")
print("ptxas info    : Used 96 registers, used 1 barriers")
print("    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads")
"""


def fake_compiler(tmp_path, families=None) -> Compiler:
    nvcc = tmp_path / "fake-nvcc"
    nvcc.write_text(FAKE_NVCC)
    nvcc.chmod(0o755)
    tools = Toolchain(nvcc=str(nvcc), nvcc_version="fake 1.0", include_dirs=(), cutlass_version="fake")
    return Compiler(cache_dir=tmp_path / "cache", toolchain=tools, jobs=2, families=families)


def test_submit_runs_one_nvcc_per_build_key_in_a_pool(tmp_path):
    compiler = fake_compiler(tmp_path)
    a = SPACE.validate(Genome.make("sm90_cutlass", SMALL))
    a_knobs = a.with_params(raster="along_m", swizzle=4)           # same source, other runtime knobs
    b = SPACE.validate(Genome.make("sm90_cutlass", dict(SMALL, tile_n=128)))
    start = time.monotonic()
    futures = [compiler.submit(g) for g in (a, a_knobs, b, a)]
    results = [f.result() for f in futures]
    took = time.monotonic() - start
    assert [r.genome_id for r in results] == [a.id, a_knobs.id, b.id, a.id]
    assert all(r.ok for r in results)
    assert results[0].build_key == results[1].build_key != results[2].build_key
    assert results[1].knobs == (1, 4, 1, 0, 0) and results[0].knobs == (0, 1, 1, 0, 0)
    calls = (tmp_path / "fake-nvcc.calls").read_text().splitlines()
    assert len(calls) == 2, calls                                  # two distinct sources, two nvcc runs
    assert took < 0.4 * 2 * 0.9 + 0.5                              # in parallel, not one after another
    assert compiler.nvcc_runs == 2
    assert all("-gencode=arch=compute_90a,code=sm_90a" in c and "-DNDEBUG" in c for c in calls)
    assert compiler.submit(b).result().ok                          # joined or served: never rebuilt
    assert len((tmp_path / "fake-nvcc.calls").read_text().splitlines()) == 2
    compiler.close()


def test_family_flags_and_architecture_come_from_the_family(tmp_path):
    import dataclasses

    from templates import family_registry
    reg = family_registry()
    base = reg.resolve("sm90_cutlass")
    other = dataclasses.replace(base, name="sm90_flags", make_space=lambda: dataclasses.replace(
        base.make_space(), family="sm90_flags"), nvcc_flags=(*base.nvcc_flags, "-DEVOGEMM_PLUGIN=1"))
    reg.register("sm90_flags", other)
    compiler = fake_compiler(tmp_path, families=reg)
    g = Genome.make("sm90_flags", SPACE.validate(Genome.make("sm90_cutlass", SMALL)).param_dict)
    assert compiler.build(g).ok
    (call,) = (tmp_path / "fake-nvcc.calls").read_text().splitlines()
    assert "-DEVOGEMM_PLUGIN=1" in call
    compiler.close()


def test_nvcc_runs_below_the_gpu_workers_cpu_priority(tmp_path):
    """Builds run `nice`d (evaluator.compile.BUILD_NICENESS), so that the GPU worker timing a kernel
    while a round's or another shape's builds run on every core keeps its CPU."""
    import os
    import shutil

    from evaluator.compile import BUILD_NICENESS
    if shutil.which("nice") is None:
        pytest.skip("no `nice` on this machine: builds run at the campaign's priority")
    compiler = fake_compiler(tmp_path)
    assert compiler.build(SPACE.validate(Genome.make("sm90_cutlass", SMALL))).ok
    (niceness,) = (tmp_path / "fake-nvcc.nice").read_text().split()
    assert int(niceness) == min(19, os.nice(0) + BUILD_NICENESS)
    compiler.close()


def test_a_relative_cache_folder_works(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    compiler = fake_compiler(tmp_path)
    compiler.cache_dir = Path("rel-cache")
    compiler.__post_init__()
    assert compiler.cache_dir.is_absolute()
    result = compiler.build(SPACE.validate(Genome.make("sm90_cutlass", SMALL)))
    assert result.ok, result.reason
    compiler.close()


def test_the_build_seconds_prior_is_what_builds_took_on_this_machine(tmp_path, monkeypatch):
    import json
    import socket
    from evaluator.compile import BuildResult, Compiler
    assert Compiler.default(tmp_path / "cache").build_seconds_prior() is None
    here = socket.gethostname()
    entries = [(True, 10.0, here), (True, 30.0, here), (True, 20.0, here), (False, 99.0, here), (True, 0.0, here),
               (True, 80.0, "the-cpu-machine"), (True, 70.0, None)]   # carried from elsewhere, or untagged
    for i, (ok, seconds, host) in enumerate(entries):
        entry = tmp_path / "cache" / f"k{i}" / f"k{i}key"
        entry.mkdir(parents=True)
        (entry / "meta.json").write_text(json.dumps({"ok": ok, "seconds": seconds, "host": host}))
    (tmp_path / "cache" / "zz" / "broken").mkdir(parents=True)
    (tmp_path / "cache" / "zz" / "broken" / "meta.json").write_text("{not json")
    c = Compiler.default(tmp_path / "cache")
    assert c.build_seconds_prior() == 20.0
    elsewhere = tmp_path / "carried" / "k0" / "k0key"   # only builds from other machines: theirs
    elsewhere.mkdir(parents=True)
    (elsewhere / "meta.json").write_text(json.dumps({"ok": True, "seconds": 75.0, "host": "the-cpu-machine"}))
    assert Compiler.default(tmp_path / "carried").build_seconds_prior() == 75.0
    # once this session has built, its own builds say it
    monkeypatch.setattr(c, "build", lambda g: BuildResult("g", "k", ok=True, seconds=5.0, host=here))
    c._timed_build(None)
    assert c.build_seconds_prior() == 5.0


def test_an_entry_left_without_its_meta_by_a_killed_build_is_replaced_not_fatal(tmp_path):
    """A build killed (kill -9 of a campaign, a Ray worker whose driver died) after its folder was published and
    before its meta.json was written used to leave an entry that made every later build of the key raise."""
    compiler = fake_compiler(tmp_path)
    g = SPACE.validate(Genome.make("sm90_cutlass", SMALL))
    entry = compiler.entry_dir(compiler.key_of(g))
    entry.mkdir(parents=True)
    (entry / "kernel.so").write_bytes(b"half a kernel")
    (entry / "build.log").write_text("")
    result = compiler.build(g)
    assert result.ok, result.reason
    assert (entry / "meta.json").exists() and Path(result.library) == entry / "kernel.so"
    assert (entry / "kernel.so").read_bytes() != b"half a kernel"                  # the new build's
    assert not [p for p in entry.parent.iterdir() if p.name.startswith(".")]   # no work or stale folder left
    again = fake_compiler(tmp_path)                                            # another process: a cache hit
    hit = again.build(g)
    assert hit.ok and hit.cached
    assert len((tmp_path / "fake-nvcc.calls").read_text().splitlines()) == 1
    compiler.close()
    again.close()


def test_a_published_entry_already_holds_its_meta(tmp_path, monkeypatch):
    """The folder is renamed into place with meta.json inside: no moment shows an entry without it."""
    import os

    import evaluator.cache_entry as cache_entry
    seen = []
    real_rename = os.rename

    def rename(src, dst):
        if not Path(src).name.endswith(".stale") and Path(dst).parent.parent == tmp_path / "cache":
            seen.append((Path(src) / "meta.json").exists())
        return real_rename(src, dst)
    monkeypatch.setattr(cache_entry.os, "rename", rename)
    compiler = fake_compiler(tmp_path)
    assert compiler.build(SPACE.validate(Genome.make("sm90_cutlass", SMALL))).ok
    assert seen == [True]
    compiler.close()


def test_publish_entry_keeps_a_whole_entry_and_replaces_an_incomplete_one(tmp_path):
    from evaluator.cache_entry import publish_entry

    def work_folder(text):
        work = tmp_path / f".w{len(list(tmp_path.iterdir()))}"
        work.mkdir()
        (work / "meta.json").write_text(text)
        return work
    final = tmp_path / "ab" / "abcd"
    final.parent.mkdir()
    assert publish_entry(work_folder("first"), final)                      # nothing there: published
    second = work_folder("second")
    assert not publish_entry(second, final) and not second.exists()        # a whole entry stays, ours goes
    assert (final / "meta.json").read_text() == "first"
    (final / "meta.json").unlink()                                         # as a build killed half-way left it
    assert publish_entry(work_folder("third"), final)
    assert (final / "meta.json").read_text() == "third"
    assert [p.name for p in final.parent.iterdir()] == ["abcd"]            # the incomplete one is gone
