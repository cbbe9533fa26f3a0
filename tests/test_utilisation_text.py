"""The throughput line of `evogemm status` and report.md (experiments/report.py `utilisation_text`):
GPU busy time as before, and, when the evaluator reported them (the Ray backend), builds per
minute, each GPU actor's busy fraction and the queue depths; keys that are absent are left out."""

from __future__ import annotations

import io

from rich.console import Console

from experiments.report import print_status, render_report, utilisation_text

BASE = {"gpu_busy_fraction": 0.19, "wall_seconds": 103.2, "gpu_busy_seconds": 19.6,
        "gpu_seconds_during_builds": 15.6, "builds": 20, "build_seconds": 900.0}
RAY = {**BASE, "builds_per_minute": 11.63, "build_queue_depth": 3, "gpu_actors": 2,
       "gpu_busy_by_actor": [25.8, 14.45], "runner_queue_depth": 1}


def test_without_the_ray_figures_the_line_is_unchanged():
    text = utilisation_text(BASE)
    assert text == ("GPU busy 19% of 103 s wall in the last session (19.6 s; 15.6 s of it while nvcc builds ran); "
                    "20 builds, 900 nvcc-seconds")
    for absent in ("builds/min", "per GPU", "queue", "actor"):
        assert absent not in text
    assert utilisation_text(None) is None and utilisation_text({}) is None


def test_the_ray_figures_appear_when_reported():
    text = utilisation_text(RAY)
    assert text.startswith("GPU busy 19% of 103 s wall in the last session (19.6 s; 15.6 s of it while nvcc")
    assert "per GPU 25%, 14% (2 GPU actors)" in text              # 25.8 / 103.2 s, 14.45 / 103.2 s
    assert "20 builds, 900 nvcc-seconds, 11.6 builds/min" in text
    assert text.endswith("queue depths at the last round: 3 builds, 1 runner")


def test_each_figure_is_optional_on_its_own():
    only_builds = {"builds": 4, "build_seconds": 30.0, "builds_per_minute": 8.0, "build_queue_depth": 0}
    assert utilisation_text(only_builds) == ("4 builds, 30 nvcc-seconds, 8.0 builds/min; "
                                             "queue depths at the last round: 0 builds")
    one_gpu = {**BASE, "gpu_busy_by_actor": [200.0]}                # capped at 100%, count from the list
    assert "per GPU 100% (1 GPU actor);" in utilisation_text(one_gpu)
    no_wall = {"gpu_busy_by_actor": [1.25, 2.5], "gpu_actors": 2}   # no wall time: busy seconds instead
    assert utilisation_text(no_wall) == "per GPU 1.2 s, 2.5 s (2 GPU actors)"
    runner_only = {**BASE, "runner_queue_depth": 2}
    assert utilisation_text(runner_only).endswith("; queue depths at the last round: 2 runner")


def _status(utilisation):
    return {"name": "t", "seed": 1, "strategy": "evolve", "policy": "thompson", "simulated": False,
            "evaluator": "Ray (2 CPUs build, 2 GPU actor(s))", "evaluations": 20, "proposals": 20, "sessions": 1,
            "wall_seconds": 103.2, "gpu_seconds": 19.6, "finished": True, "shapes": [], "geomean_speedup": None,
            "wins": 0, "shapes_with_kernel": 0, "verified": None, "skipped": [], "extensions": [],
            "utilisation": utilisation, "backend_changes": []}


def test_status_and_report_show_the_throughput():
    report = render_report(_status(RAY))
    assert f"- {utilisation_text(RAY)}" in report.splitlines()
    out = io.StringIO()
    print_status(_status(RAY), Console(file=out, width=200, color_system=None))
    assert "11.6 builds/min" in out.getvalue() and "per GPU 25%, 14%" in out.getvalue()
    assert "builds/min" not in render_report(_status(BASE)) and "nvcc-seconds" in render_report(_status(BASE))
    assert "nvcc-seconds" not in render_report(_status(None))


def test_lost_actor_calls_are_counted_when_there_were_any():
    assert "2 GPU-actor call(s) lost" in utilisation_text({"builds": 1, "actor_failures": 2})
    assert "lost" not in utilisation_text({"builds": 1, "actor_failures": 0})
