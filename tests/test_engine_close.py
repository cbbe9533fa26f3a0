"""What a campaign says when it closes with builds still running."""

from __future__ import annotations

from experiments.campaign import create_campaign, run_campaign
from experiments.progress import SilentProgress
from experiments.schema import parse_campaign


def _run(tmp_path, backend: str) -> str:
    data = {"name": "close", "seed": 0, "shapes": ["1024x1024x1024"], "families": ["sm90_cutlass"],
            "evaluator": {"backend": backend}, "budget": {"evaluations_per_shape": 6},
            "population": {"size": 3, "islands": 1, "offspring": 3, "elite": 1, "migration_size": 1}}
    folder = tmp_path / backend.replace(":", "_")
    create_campaign(parse_campaign(data, base_dir=tmp_path), folder)
    run_campaign(folder, progress=SilentProgress(), mode="run", plots=False)
    return (folder / "campaign.log").read_text()


def test_a_campaign_that_closes_with_builds_running_says_it_waits_for_them(tmp_path):
    log = _run(tmp_path, "plugin_examples_for_schema:BuildingSimulator")
    assert "closing: the builds still running finish first (queued ones are dropped)" in log
    assert "closing:" not in _run(tmp_path, "simulator")   # nothing to wait for: nothing said
