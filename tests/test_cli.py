import json
import subprocess
import sys
from pathlib import Path

from genome import Genome
from templates import get_space


def run(*args):
    return subprocess.run([sys.executable, "-m", "experiments.cli", *args], capture_output=True, text=True)


def test_help_lists_commands():
    out = run("--help")
    assert out.returncode == 0
    for command in ("space", "compile", "render"):
        assert command in out.stdout


def test_version(monkeypatch):
    import importlib.metadata
    import re
    from experiments import cli
    out = run("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"evogemm {cli.package_version()}"
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?\S*", cli.package_version())
    # from a source tree that is not installed: pyproject.toml's version

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    text = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    assert cli.package_version() == re.search(r'^version = "(.+)"', text, re.M).group(1)


def test_every_command_says_what_it_does():
    import argparse
    from experiments.cli import build_parser
    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    listed = {a.dest: a.help for a in sub._choices_actions}
    assert {"space", "render", "compile", "bench", "validate", "run", "resume", "extend", "status",
            "ablate"} <= set(sub.choices)
    for name, p in sub.choices.items():
        assert p.description and p.description.strip(), f"`evogemm {name} --help` has no description"
        assert "\n" not in p.description.strip() and listed.get(name), name
    out = run("resume", "--help")
    assert out.returncode == 0 and "Continue a stopped or killed campaign" in out.stdout and "--backend" in out.stdout


def test_space_prints_size_and_rules():
    out = run("space", "sm90_cutlass")
    assert out.returncode == 0, out.stderr
    assert "valid compile-time configurations" in out.stdout
    assert "cooperative-tile-m" in out.stdout and "pingpong-streamk" in out.stdout
    bad = run("space", "nope")
    assert bad.returncode == 2 and "unknown template family 'nope'" in bad.stderr


def test_compile_errors_are_one_clear_line(tmp_path):
    missing = run("compile", str(tmp_path / "none.json"))
    assert missing.returncode == 2 and "no such genome file" in missing.stderr
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    out = run("compile", str(garbage))
    assert out.returncode == 2 and "not valid JSON" in out.stderr
    space = get_space("sm90_cutlass")
    invalid = tmp_path / "invalid.json"
    Genome.make("sm90_cutlass", dict(space.default_params(), schedule="cooperative", tile_m=64)).save(invalid)
    out = run("compile", str(invalid))
    assert out.returncode == 2 and "cooperative schedule needs tile M >= 128" in out.stderr
    ok = tmp_path / "ok.json"
    Genome.make("sm90_cutlass", dict(space.default_params(), schedule="pingpong")).save(ok)
    out = run("compile", str(ok), "--shape", "100x100x99")
    assert out.returncode == 2 and "K=99" in out.stderr


def test_render_writes_source(tmp_path):
    space = get_space("sm90_cutlass")
    path = tmp_path / "g.json"
    Genome.make("sm90_cutlass", dict(space.default_params(), schedule="pingpong")).save(path)
    out = run("render", str(path), "-o", str(tmp_path / "k.cu"))
    assert out.returncode == 0 and "evogemm_run" in (tmp_path / "k.cu").read_text()


def test_bad_input_is_one_line_and_exit_2_never_a_traceback(tmp_path):
    nope = tmp_path / "nope.json"
    nope.write_text('{"family": "nope", "params": {}}')
    good = tmp_path / "good.json"
    space = get_space("sm90_cutlass")
    Genome.make("sm90_cutlass", dict(space.default_params(), schedule="pingpong")).save(good)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "campaign.db").write_bytes(b"")
    edited = tmp_path / "edited.json"  # a saved genome edited by hand: its id is stale and its tile_m not allowed
    data = json.loads(good.read_text())
    data["params"]["tile_m"] = 999
    edited.write_text(json.dumps(data))
    renamed = tmp_path / "renamed.json"  # the family edited: that it is unknown comes first, not the stale id
    renamed.write_text(json.dumps({**json.loads(good.read_text()), "family": "nofam"}))
    boolean = tmp_path / "boolean.json"
    boolean.write_text('{"family": "sm90_cutlass", "params": {"tile_m": true}}')
    cases = [
        (("render", str(edited)), "tile_m=999 is not allowed"),
        (("compile", str(edited)), "remove the 'id' key"),
        (("render", str(renamed)), "unknown template family 'nofam'"),
        (("bench", "--shapes", "64x64x64", "--kernels", str(boolean), "--backend", "simulator"), "boolean.json: "),
        (("bench", "--shapes", "64x64x64", "--out", str(good), "--backend", "simulator"), "is a file"),
        (("bench", "--shapes", "64x64x64", "--out", str(good / "sub"), "--backend", "simulator"), "cannot be made"),
        (("bench", "--shapes", "64x64x64", "--peak-tflops", "nan", "--backend", "simulator"), "--peak-tflops"),
        (("bench", "--shapes", "64x64x64", "--groups", "decode", "--backend", "simulator"), "give --suite too"),
        (("compile", str(nope)), "unknown template family 'nope'"),
        (("render", str(nope)), "unknown template family 'nope'"),
        (("compile", str(good), "--shape", "12x"), "cannot read shape '12x'"),
        (("bench", "--shapes", "64x64x64", "--kernels", str(nope), "--backend", "simulator"), "unknown template family"),
        (("bench", "--shapes", "64x64x64", "--timing", "{bad", "--backend", "simulator"), "--timing is not a JSON object"),
        (("bench", "--shapes", "64x64x64", "--timing", '{"repeat": 3}', "--backend", "simulator"), "unknown timing option"),
        (("bench", "--shapes", "64x64x64", "--modes", "bogus", "--backend", "simulator"), "--modes"),
        (("status", str(empty)), "error"),
    ]
    for args, words in cases:
        out = run(*args)
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert "Traceback" not in out.stderr and words in out.stderr, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1, (args, out.stderr)


def test_bench_of_kernels_none_of_which_runs_exits_1_and_a_shape_named_twice_is_timed_once(tmp_path):
    data = {"family": "sm90_cutlass", "params": dict(get_space("sm90_cutlass").default_params(), tile_m=999)}
    (tmp_path / "k.json").write_text(json.dumps(data))
    out = run("bench", "--shapes", "256x256x256", "256x256x256", "--kernels", str(tmp_path / "k.json"),
              "--backend", "simulator", "--out", str(tmp_path / "b"))
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "no kernel was timed at any shape" in out.stderr and "tile_m=999" in out.stdout
    assert "1 shape(s) named twice are timed once" in out.stdout
    assert len(json.loads((tmp_path / "b" / "bench.json").read_text())["shapes"]) == 1
