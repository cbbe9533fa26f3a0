"""`evogemm export`: choosing kernels from campaigns, the package it writes, and its loader on a
machine without a GPU (the GPU side is tests/test_gpu_export.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from engine_helpers import REPO, cli_env
from experiments.export import export
from experiments.export_select import ExportError, choose
from evaluator.kernel_abi import arch_runs_on

FAKE_ABI = r"""
#include <stddef.h>
#include <stdint.h>
int evogemm_abi_version(void) { return 1; }
const char* evogemm_family(void) { return "fake"; }
int evogemm_can_implement(int M, int N, int K, const int32_t* k, int n) { return (M > 0 && N > 0 && K > 0) ? 0 : 5; }
size_t evogemm_workspace_size(int M, int N, int K, const int32_t* k, int n) { return 1024; }
int evogemm_run(int M, int N, int K, const void* A, const void* B, void* C, void* ws, size_t b,
                const int32_t* k, int n, void* s) { return 0; }
"""

CAMPAIGN = """
name: tiny-export
seed: {seed}
shapes: [128x4096x4096, 64x64x4096]
budget: {{evaluations_per_shape: 12}}
population: {{size: 6, islands: 1, offspring: 3}}
evaluator: {{backend: simulator}}
"""


def evogemm(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments.cli", *args], cwd=str(REPO), env=cli_env(),
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory):
    base = tmp_path_factory.mktemp("export")
    out = []
    for seed in (3, 4):
        yaml = base / f"c{seed}.yaml"
        yaml.write_text(CAMPAIGN.format(seed=seed))
        folder = base / f"run{seed}"
        proc = evogemm("run", str(yaml), "--out", str(folder))
        assert proc.returncode == 0, proc.stderr
        out.append(folder)
    return out


@pytest.fixture(scope="module")
def fake_library(tmp_path_factory):
    base = tmp_path_factory.mktemp("fakelib")
    (base / "fake.c").write_text(FAKE_ABI)
    lib = base / "kernel.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(base / "fake.c")], check=True)
    return lib


def test_choose_takes_the_fastest_over_torch_across_campaigns(campaigns):
    one = choose([campaigns[0]])
    both = choose(campaigns)
    assert set(both) == {"128x4096x4096", "64x64x4096"}
    for shape, choice in both.items():
        assert choice.simulated and choice.source == "hall_of_fame"
        assert choice.speedup_vs_torch == pytest.approx(choice.torch_us / choice.time_us)
        assert choice.speedup_vs_torch >= one[shape].speedup_vs_torch
        assert len(choice.others) == 1  # the other campaign's candidate is on record


def test_export_writes_an_installable_package(campaigns, fake_library, tmp_path):
    pkg = tmp_path / "pkg"
    lines: list[str] = []
    table = export([str(c) for c in campaigns], pkg, name="my_kernels", include_simulated=True,
                   log=lines.append, library_of=lambda choice: fake_library)
    assert {e["shape"] for e in table["entries"]} | {e["shape"] for e in table["not_dispatched"]} == {
        "128x4096x4096", "64x64x4096"}
    for e in table["entries"]:
        assert e["speedup"] > 1.0 and e["simulated"] and e["arch"] == "90a"
        kdir = pkg / "my_kernels" / "kernels" / e["kernel"]
        assert (kdir / "kernel.so").is_file() and "evogemm_run" in (kdir / "kernel.cu").read_text()
        record = json.loads((kdir / f"measurements-{e['shape']}.json").read_text())
        assert record["baselines"]["device"]["torch_tn"]["median_us"] == pytest.approx(e["torch_us"])
        assert json.loads((kdir / "genome.json").read_text())["id"] == e["kernel"]
    prov = json.loads((pkg / "my_kernels" / "provenance.json").read_text())
    assert len(prov["campaigns"]) == 2 and all(f["simulated"] for f in prov["campaign_facts"])
    assert "my-kernels" in (pkg / "pyproject.toml").read_text()
    # it installs without evogemm on the path, and imports nothing of evogemm
    target = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(pkg)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    installed = target / "my_kernels"
    assert (installed / "dispatch.json").is_file() and (installed / "_abi.py").is_file()
    assert list(installed.glob("kernels/*/kernel.so"))
    for py in installed.glob("*.py"):
        text = py.read_text()
        for ours in ("from evaluator", "from evolution", "from genome", "from experiments", "import templates"):
            assert ours not in text, (py.name, ours)


def test_simulated_figures_do_not_dispatch_by_default(campaigns, fake_library, tmp_path):
    table = export([str(campaigns[0])], tmp_path / "pkg", log=lambda s: None, library_of=lambda c: fake_library)
    assert table["entries"] == []
    assert all("simulator" in e["why"] for e in table["not_dispatched"])


def test_export_errors_are_clear(campaigns, tmp_path):
    with pytest.raises(ExportError, match="not a campaign folder"):
        choose([tmp_path])
    proc = evogemm("export", str(campaigns[0]), "--out", str(tmp_path / "p"), "--no-build",
                   "--cache", str(tmp_path / "empty-cache"))
    assert proc.returncode == 2 and "no kernel could be exported" in proc.stderr and "not in the build cache" in proc.stderr
    assert not (tmp_path / "p").exists()  # nothing half-written
    (tmp_path / "taken").mkdir()
    proc = evogemm("export", str(campaigns[0]), "--out", str(tmp_path / "taken"))
    assert proc.returncode == 2 and "--force" in proc.stderr
    proc = evogemm("export", str(campaigns[0]), "--out", str(tmp_path / "q"), "--name", "not-a-name")
    assert proc.returncode == 2 and "package name" in proc.stderr


def test_export_never_replaces_a_campaign_or_a_folder_that_is_not_an_export(campaigns, fake_library, tmp_path):
    """--force replaced --out whatever it was: exporting a campaign onto itself deleted the campaign."""
    stub = lambda choice: fake_library  # noqa: E731
    for out in (campaigns[0], campaigns[0] / "pkg", campaigns[0].parent):
        with pytest.raises(ExportError, match="is, holds or lies inside the campaign"):
            export([str(campaigns[0])], out, force=True, log=lambda s: None, library_of=stub)
    assert (campaigns[0] / "campaign.db").is_file()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(ExportError, match="not an earlier export"):
        export([str(campaigns[0])], mine, force=True, log=lambda s: None, library_of=stub)
    assert (mine / "notes.txt").read_text() == "keep me"
    pkg = tmp_path / "pkg"
    export([str(campaigns[0])], pkg, include_simulated=True, log=lambda s: None, library_of=stub)
    export([str(campaigns[0])], pkg, include_simulated=True, force=True, log=lambda s: None, library_of=stub)
    assert (pkg / "pyproject.toml").is_file()                  # an earlier export is replaced


def test_abi_binding_reads_the_fake_library(fake_library):
    from evaluator.kernel_abi import EvoKernel
    kernel = EvoKernel(str(fake_library), [3, 1])
    assert kernel.family == "fake" and kernel.n_knobs == 2
    assert kernel.can_implement(8, 8, 8) == 0 and kernel.can_implement(0, 8, 8) == 5
    assert kernel.workspace_size(8, 8, 8) == 1024


@pytest.mark.parametrize("arch, cap, ok", [("90a", (9, 0), True), ("90a", (10, 0), False), ("80", (8, 6), True),
                                           ("80", (9, 0), False), ("86", (8, 0), False)])
def test_arch_rule(arch, cap, ok):
    assert arch_runs_on(arch, cap) is ok


def test_package_on_a_machine_without_gpu_falls_back_to_matmul(campaigns, fake_library, tmp_path):
    pytest.importorskip("torch")
    pkg = tmp_path / "pkg"
    export([str(c) for c in campaigns], pkg, name="cpu_kernels", include_simulated=True, log=lambda s: None,
           library_of=lambda c: fake_library)
    script = textwrap.dedent("""
        import sys, torch
        sys.path.insert(0, sys.argv[1])
        import cpu_kernels
        a, w = torch.randn(64, 4096).half(), torch.randn(64, 4096).half()
        assert torch.equal(cpu_kernels.hgemm(a, w), torch.matmul(a, w.t()))  # CPU tensors: the fallback
        x = torch.randn(3, 4096)
        layer = torch.nn.Linear(4096, 64)
        cpu_kernels.patch_linear()
        assert torch.nn.functional.linear is not cpu_kernels._op._PATCH.original
        assert torch.allclose(layer(x), x @ layer.weight.t() + layer.bias)
        cpu_kernels.unpatch_linear()
        print("ok", len(cpu_kernels.DISPATCH.entries))
    """)
    proc = subprocess.run([sys.executable, "-c", script, str(pkg)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("ok"), proc.stderr
    main = subprocess.run([sys.executable, "-m", "cpu_kernels"], cwd=str(pkg), capture_output=True, text=True,
                          timeout=120)
    assert main.returncode == 1 and "cannot be verified here" in main.stdout


def _stopped_copy(folder, dest, shapes=None):
    """A copy of a finished campaign as a `kill -9` mid-shape leaves it: those shapes (all by default) running,
    their hall-of-fame files not written yet."""
    import shutil
    import sqlite3
    shutil.copytree(folder, dest)
    db = sqlite3.connect(dest / "campaign.db")
    rows = [r[0] for r in db.execute("SELECT problem FROM shapes")]
    for shape in rows if shapes is None else shapes:
        db.execute("UPDATE shapes SET status='running', finished=NULL WHERE problem=?", (shape,))
        db.execute("DELETE FROM verified WHERE problem=?", (shape,))
        (dest / "hall_of_fame" / f"{shape}.json").unlink()
    db.commit()
    db.close()
    if shapes is None:
        (dest / "hall_of_fame").rmdir()
    return dest


def test_a_stopped_campaign_is_named_as_stopped_not_as_empty(campaigns, tmp_path):
    """A campaign killed before a shape finished has evaluations but no hall of fame: export and bench said it held
    no kernel ("did they run?"), which sent the user the wrong way; they say to resume it now."""
    stopped = _stopped_copy(campaigns[0], tmp_path / "stopped")
    proc = evogemm("export", str(stopped), "--out", str(tmp_path / "p"), "--no-build", "--include-simulated")
    assert proc.returncode == 2, proc.stderr
    assert "no shape has finished yet" in proc.stderr and f"evogemm resume {stopped}" in proc.stderr
    assert "evaluation(s) recorded at 2 shape(s)" in proc.stderr
    proc = evogemm("bench", "--kernels", str(stopped), "--shapes", "128x4096x4096", "--out", str(tmp_path / "b"))
    assert proc.returncode == 2 and "no hall of fame yet" in proc.stderr and "evogemm resume" in proc.stderr
    half = _stopped_copy(campaigns[0], tmp_path / "half", shapes=["64x64x4096"])
    logged = []
    from experiments.export_select import unfinished_shapes
    assert list(unfinished_shapes(half)) == ["64x64x4096"]
    with pytest.raises(ExportError):  # the finished shape goes on to the build (none here), the other is named
        export([str(half)], tmp_path / "q", build=False, include_simulated=True, cache=str(tmp_path / "c"),
               log=logged.append)
    assert any("64x64x4096" in line and "not finished" in line for line in logged), logged
    logged.clear()  # the shape finished in another campaign is exported from there: not "left out"
    with pytest.raises(ExportError):
        export([str(half), str(campaigns[1])], tmp_path / "q", build=False, include_simulated=True,
               cache=str(tmp_path / "c"), log=logged.append)
    assert not any("not finished" in line for line in logged), logged


def test_a_corrupt_hall_of_fame_file_is_named(campaigns, tmp_path):
    import shutil
    broken = tmp_path / "broken"
    shutil.copytree(campaigns[0], broken)
    hof = broken / "hall_of_fame" / "64x64x4096.json"
    hof.write_text(hof.read_text()[:40])
    with pytest.raises(ExportError, match="64x64x4096.json: cannot read this hall of fame"):
        choose([broken])
