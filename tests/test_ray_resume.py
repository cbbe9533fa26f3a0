"""Resume on the Ray backend: `evogemm run` of a campaign on `backend: ray` (simulator timing, builds
as Ray tasks with a fake nvcc) is killed with SIGKILL mid-run and resumed with `evogemm resume`;
it ends in exactly the state of the same YAML run uninterrupted, no evaluation committed
before the kill is lost or changed, and no kernel built before the kill is built again.

The campaign processes join one local Ray instance started by this module (RAY_ADDRESS, as a
driver joins a cluster), so the test pays for one Ray start; the YAML names no address.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from engine_helpers import REPO, cli_env, db_count, fingerprint
from test_ray_backend import FAKE_NVCC
from test_resume import _kill_when

CAMPAIGN = """
    name: ray-killme
    seed: 11
    shapes: ["1024x1024x1024", "128x4096x4096"]
    budget: {evaluations_per_shape: 12}
    population: {size: 4, islands: 1, offspring: 3, elite: 1}
    selection: {policy: thompson}
    evaluator:
      backend: ray
      noise: 0.05
      options: {runner: simulator, build_memory_gb: 0.2, max_retries: 1}
"""
TOTAL = 24


@pytest.fixture(scope="module")
def cluster():
    """A local Ray instance (2 CPUs) that the campaign processes join; yields its address."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, num_gpus=0, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def _nvcc(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    nvcc = folder / "fake-nvcc"
    nvcc.write_text(FAKE_NVCC)
    nvcc.chmod(0o755)
    return nvcc


def _built(nvcc: Path) -> list[tuple[int, str]]:
    """(pid of the process that ran nvcc, build key) per fake nvcc run, in order."""
    path = nvcc.with_suffix(".calls")
    lines = path.read_text().splitlines() if path.exists() else []
    return [(int(pid), folder.split(".")[1]) for pid, folder in (line.split() for line in lines)]


def _rows(folder: Path) -> dict:
    conn = sqlite3.connect(str(folder / "campaign.db"))
    try:
        return {(g, p): rest for g, p, *rest in conn.execute(
            "SELECT genome_id, problem, status, device_us, build_key, session, created FROM evaluations")}
    finally:
        conn.close()


def test_kill_9_mid_run_on_ray_then_resume_equals_uninterrupted(cluster, tmp_path, monkeypatch):
    from experiments.campaign import create_campaign, run_campaign
    from experiments.schema import parse_campaign

    text = textwrap.dedent(CAMPAIGN)
    (tmp_path / "c.yaml").write_text(text)

    class Silent:
        def update(self, rows, simulated=None, evaluator=None):
            pass

    # the same YAML uninterrupted, in this process (it uses the Ray instance this process started)
    monkeypatch.setenv("EVOGEMM_NVCC", str(_nvcc(tmp_path / "ref-nvcc")))
    monkeypatch.setenv("EVOGEMM_CACHE", str(tmp_path / "ref-kernels"))
    ref = tmp_path / "ref"
    create_campaign(parse_campaign(yaml.safe_load(text), base_dir=tmp_path), ref)
    run_campaign(ref, progress=Silent(), plots=False)
    expected = fingerprint(ref)
    assert expected["counters"]["evaluations"] == TOTAL

    nvcc = _nvcc(tmp_path / "nvcc")
    env = {**cli_env(), "RAY_ADDRESS": cluster, "EVOGEMM_NVCC": str(nvcc),
           "EVOGEMM_CACHE": str(tmp_path / "kernels")}
    killed, log = tmp_path / "killed", tmp_path / "cli.log"
    procs: list[subprocess.Popen] = []
    with open(log, "w") as out:
        def cli(*args: str) -> subprocess.Popen:
            procs.append(subprocess.Popen([sys.executable, "-m", "experiments.cli", *args, "--no-live"],
                                          cwd=str(REPO), env=env, stdout=out, stderr=subprocess.STDOUT, text=True))
            return procs[-1]

        try:
            first = cli("run", str(tmp_path / "c.yaml"), "--out", str(killed))
            _kill_when(first, lambda: db_count(killed) >= 8, timeout=120)
            before = _rows(killed)
            assert 8 <= len(before) < TOTAL, f"killed after {len(before)} evaluations"
            second = cli("resume", str(killed))
            assert second.wait(timeout=180) == 0, "the resumed campaign failed"
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{log.read_text()[-3000:]}") from None
        finally:
            for proc in procs:                # a failed test leaves no campaign process behind
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(timeout=30)

    assert fingerprint(killed) == expected
    final = _rows(killed)
    assert {k: final[k] for k in before} == before      # nothing finished before the kill was lost or redone
    built = _built(nvcc)
    keys_before = {v[2] for v in before.values() if v[2]}
    assert keys_before and all(sum(1 for _, key in built if key == k) == 1 for k in keys_before)
    assert {key for _, key in built} >= {v[2] for v in final.values() if v[2]}   # every kernel was built here,
    assert not {pid for pid, _ in built} & {first.pid, second.pid}             # by Ray workers, not the drivers
    conn = sqlite3.connect(str(killed / "campaign.db"))
    try:
        (backend,) = conn.execute("SELECT value FROM meta WHERE key='resolved_backend'").fetchone()
        sessions = conn.execute("SELECT COUNT(DISTINCT session) FROM evaluations").fetchone()[0]
    finally:
        conn.close()
    assert json.loads(backend) == "ray" and sessions == 2
    assert os.path.exists(killed / "report.md")
