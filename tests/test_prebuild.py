"""`evogemm prebuild`: a campaign's first-round kernels, found on the simulator, built into the cache
(a fake nvcc here: tests/test_compile.py's)."""

from __future__ import annotations

import yaml

from engine_helpers import small_config
from evaluator import compile as compile_mod
from evaluator.compile import Compiler, Toolchain
from experiments.cli import main
from experiments.prebuild import first_round_genomes
from test_compile import FAKE_NVCC


def _campaign(tmp_path):
    data = small_config(shapes=["1024x1024x1024", "128x4096x4096"], budget={"evaluations_per_shape": 12},
                        population={"size": 4, "islands": 1, "offspring": 2, "elite": 1, "migration_size": 1},
                        evaluator={"backend": "gpu", "timing": {"repeats": 3}})
    data["budget"]["wall_seconds"] = 60   # a GPU campaign's wall budget: the simulated run goes without it
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _fake_compilers(monkeypatch, tmp_path):
    nvcc = tmp_path / "fake-nvcc"
    nvcc.write_text(FAKE_NVCC)
    nvcc.chmod(0o755)
    tools = Toolchain(nvcc=str(nvcc), nvcc_version="fake 1.0", include_dirs=(), cutlass_version="fake")
    monkeypatch.setattr(compile_mod.Compiler, "default", classmethod(
        lambda cls, cache_dir=None, jobs=None, **kw: Compiler(cache_dir=cache_dir, toolchain=tools, jobs=jobs or 2)))
    return nvcc.with_suffix(".calls")


def test_prebuild_builds_the_first_round_once_and_then_finds_it_in_the_cache(tmp_path, monkeypatch, capsys):
    path = _campaign(tmp_path)
    calls = _fake_compilers(monkeypatch, tmp_path)
    pairs = first_round_genomes(path)
    assert {shape for shape, _ in pairs} == {"1024x1024x1024", "128x4096x4096"}
    cache = tmp_path / "cache"
    keys = {Compiler.default(cache).key_of(g) for _, g in pairs}
    assert main(["prebuild", str(path), "--cache", str(cache), "--list"]) == 0
    out = capsys.readouterr().out
    assert f"{len(pairs)} first-round genomes over 2 shapes" in out and f"{len(keys)} builds, 0 in" in out
    assert all(key in out for key in keys) and not calls.exists()        # --list builds nothing
    assert main(["prebuild", str(path), "--cache", str(cache)]) == 0
    out = capsys.readouterr().out
    assert f"{len(keys)} built, 0 failed" in out
    assert len(calls.read_text().splitlines()) == len(keys)              # one nvcc run per distinct build
    assert main(["prebuild", str(path), "--cache", str(cache)]) == 0     # all in the cache now: no build
    assert f"{len(keys)} in {cache}, 0 to build" in capsys.readouterr().out
    assert len(calls.read_text().splitlines()) == len(keys)


def test_prebuild_of_a_missing_or_bad_campaign_is_a_clear_error(tmp_path, capsys):
    assert main(["prebuild", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nshapes: [12x12]\n")
    assert main(["prebuild", str(bad)]) == 2
    assert "12x12" in capsys.readouterr().err
