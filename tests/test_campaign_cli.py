"""`evogemm run | resume | status | validate | ablate` from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

from engine_helpers import REPO, cli_env, fingerprint


def evogemm(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments.cli", *args], cwd=str(REPO), env=cli_env(),
                          capture_output=True, text=True, timeout=timeout)


def test_quickstart_end_to_end_under_two_minutes(tmp_path):
    out = tmp_path / "qs"
    t0 = time.monotonic()
    proc = evogemm("run", "experiments/campaigns/quickstart.yaml", "--out", str(out))
    seconds = time.monotonic() - t0
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert seconds < 120, f"quickstart took {seconds:.0f} s"
    text = proc.stdout
    assert "SIMULATED" in text and "ran on the SIMULATOR" in text
    for name in ("campaign.yaml", "campaign.db", "campaign.log", "policy.json", "report.md"):
        assert (out / name).exists(), name
    hofs = sorted(p.stem for p in (out / "hall_of_fame").glob("*.json"))
    assert hofs == sorted(["1024x1024x1024", "128x4096x4096", "2048x2048x2048", "4096x1024x1024"])
    report = (out / "report.md").read_text()
    assert "**Simulated.**" in report and "speedup (simulated)" in report
    fp = fingerprint(out)
    assert fp["counters"]["evaluations"] == 4 * 96
    # status, as a table and as JSON
    status = evogemm("status", str(out))
    assert status.returncode == 0 and "SIMULATED" in status.stdout and "4096x1024x1024" in status.stdout
    data = json.loads(evogemm("status", str(out), "--json").stdout)
    assert data["finished"] and data["simulated"] and len(data["shapes"]) == 4
    for shape in data["shapes"]:
        assert shape["evaluations"] == 96 and shape["best"]["time_us"] > 0 and shape["weights"]
        assert set(shape["speedups"]) == set(shape["baselines"]) and shape["speedup"] > 0
    # the folder's campaign.yaml is a runnable, resolved copy
    assert evogemm("validate", str(out / "campaign.yaml")).returncode == 0
    # running again into the same folder is refused; resume of a finished campaign changes nothing
    again = evogemm("run", "experiments/campaigns/quickstart.yaml", "--out", str(out))
    assert again.returncode == 2 and "already holds a campaign" in again.stderr and "evogemm resume" in again.stderr
    resumed = evogemm("resume", str(out))
    assert resumed.returncode == 0 and fingerprint(out) == fp


def test_validate_reports_errors_and_exit_status(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nshapes: [1024x1024x1024]\nbudget: {evaluations_per_shape: 8}\npopulation: {size: -3}\n")
    proc = evogemm("validate", str(bad))
    assert proc.returncode == 2
    assert "population.size: -3 is not allowed: must be >= 2" in proc.stderr
    ok = evogemm("validate", "experiments/campaigns/h200-public.yaml")
    assert ok.returncode == 0 and "28 shapes" in ok.stdout and "backend gpu" in ok.stdout


def test_seed_and_backend_overrides(tmp_path):
    camp = tmp_path / "c.yaml"
    camp.write_text(textwrap.dedent("""
        name: tiny
        seed: 1
        shapes: ["512x512x512"]
        budget: {evaluations_per_shape: 10}
        population: {size: 4, islands: 1, offspring: 2, elite: 1, migration_size: 1}
        evaluator: {backend: gpu}
    """))
    proc = evogemm("run", str(camp), "--out", str(tmp_path / "o"), "--seed", "9", "--backend", "simulator",
                   "--no-live")
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "o" / "campaign.yaml").read_text()
    assert "seed: 9" in text and "backend: simulator" in text
    missing = evogemm("status", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "not a campaign folder" in missing.stderr


def test_ablate_smoke(tmp_path):
    camp = tmp_path / "c.yaml"
    camp.write_text(textwrap.dedent("""
        name: abl
        seed: 0
        shapes: ["1024x1024x1024", "128x4096x4096"]
        budget: {evaluations_per_shape: 24}
        population: {size: 6, islands: 2, offspring: 3, elite: 1, migration_size: 1}
    """))
    out = tmp_path / "abl"
    proc = evogemm("ablate", str(camp), "--seeds", "2", "--out", str(out), "--budget", "20")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((out / "ablation.json").read_text())
    table = data["summary"]["table"]
    assert list(table) == ["evolution_rl", "evolution_uniform", "optuna_tpe", "random"]
    for row in table.values():
        assert row["runs"] == 2 and row["geomean_speedup_mean"] > 0 and len(row["geomean_per_seed"]) == 2
    for run in data["runs"]:
        assert all(len(s["curve"]) == 20 for s in run["shapes"].values())
    md = (out / "ablation.md").read_text()
    assert "Simulated" in md and "| evolution_rl |" in md and "| random |" in md
