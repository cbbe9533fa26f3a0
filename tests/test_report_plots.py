"""`evogemm report`: figures, report.md and a self-contained report.html from campaign folders,
bench JSON and ablation folders; a campaign run writes its figures at its end."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from engine_helpers import small_config
from experiments.campaign import create_campaign, run_campaign
from experiments.cli import main
from experiments.report_inputs import bench_section
from experiments.schema import parse_campaign

CAMPAIGN_FIGURES = {"speedup.png", "convergence.png", "operator_weights.png", "roofline.png"}


class Silent:
    def update(self, rows, simulated=None, evaluator=None):
        pass


def _campaign(tmp: Path, name: str, seed: int) -> Path:
    data = small_config(name=name, seed=seed, shapes=["1024x1024x1024", "128x4096x4096"],
                        budget={"evaluations_per_shape": 18},
                        population={"size": 6, "islands": 1, "offspring": 6, "elite": 1, "migration_size": 1},
                        evaluator={"backend": "simulator"})
    folder = tmp / name
    create_campaign(parse_campaign(data, base_dir=tmp), folder)
    run_campaign(folder, progress=Silent())
    return folder


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("camps")
    return _campaign(tmp, "a", 1), _campaign(tmp, "b", 2)


def assert_real_image(path: Path) -> np.ndarray:
    from matplotlib.image import imread
    img = imread(str(path))
    h, w = img.shape[:2]
    assert w >= 300 and h >= 200, f"{path.name}: {w}x{h} px"
    rgb = (img[..., :3] * 255).round().astype(np.uint32).reshape(-1, 3)
    colours, counts = np.unique((rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2], return_counts=True)
    assert len(colours) >= 50, f"{path.name}: only {len(colours)} distinct colours"
    assert counts.max() / counts.sum() < 0.95, f"{path.name}: almost a single colour"
    return img


def md_links(text: str) -> list[str]:
    return re.findall(r"\]\(([^)]+)\)", text)


def test_a_campaign_run_writes_its_figures_and_its_report_links_them(campaigns):
    folder = campaigns[0]
    assert {p.name for p in (folder / "report").glob("*.png")} == CAMPAIGN_FIGURES
    text = (folder / "report.md").read_text()
    assert "## Plots (simulated)" in text
    links = md_links(text)
    assert "report/report.html" in links and {f"report/{n}" for n in CAMPAIGN_FIGURES} <= set(links)
    for link in links:
        assert (folder / link).is_file(), link


def test_report_of_a_campaign_through_the_cli(campaigns, capsys):
    a, b = campaigns  # b's report/ is the one its campaign run wrote
    for old in (a / "report").iterdir():  # a's: what the CLI writes, not the campaign run
        old.unlink()
    assert main(["report", str(a)]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED" in out and str(a / "report" / "report.html") in out
    report = a / "report"
    assert {p.name for p in report.glob("*.png")} == CAMPAIGN_FIGURES
    for name in CAMPAIGN_FIGURES:
        assert_real_image(report / name)
        assert (report / name).read_bytes() != (b / "report" / name).read_bytes(), f"{name}: same for two campaigns"
    md = (report / "report.md").read_text()
    assert "(simulated)" in md and "**Simulated." in md
    for link in md_links(md):
        assert (report / link).is_file(), link
    html = (report / "report.html").read_text()
    assert html.count('src="data:image/png;base64,') == len(CAMPAIGN_FIGURES)
    assert "<img src=\"speedup.png\"" not in html and "Simulated." in html
    table = html[html.index("<table>"):]
    for needle in ("1024x1024x1024", "128x4096x4096", "best kernel", "cublaslt_heuristic (speedup)",
                   "vs best vendor"):
        assert needle in table, needle
    # the table's speedups are the database's: baseline / best time
    from evolution.db import CampaignDB
    with CampaignDB(a / "campaign.db", readonly=True) as db:
        best = db.best("1024x1024x1024")[0][1].time_us
        base = db.baselines("1024x1024x1024").device["cublaslt_heuristic"].median_us
    assert f"({base / best:.3f}x)" in table


def test_the_campaign_data_behind_the_figures(campaigns):
    from evolution.db import CampaignDB
    from experiments.report_inputs import campaign_section
    with CampaignDB(campaigns[0] / "campaign.db", readonly=True) as db:
        section = campaign_section(db, "a")
        rows = db.evaluation_rows("1024x1024x1024")
        vendor = db.baselines("1024x1024x1024").best_vendor_us
        logs = db.policy_log("1024x1024x1024")
    assert section.simulated and section.speedup.simulated and section.roofline.simulated
    curve = next(c for c in section.convergence.curves if c.label == "1024x1024x1024")
    assert curve.x[-1] == len(rows) == 18
    assert curve.y == sorted(curve.y)  # best so far never gets worse
    best = min(r["device_us"] for r in rows if r["status"] == "ok")
    assert curve.y[-1] == pytest.approx(vendor / best)
    assert section.convergence.curves[-1].emphasis  # the geomean over shapes
    point = next(p for p in section.roofline.series["best evolved kernel"] if p.label == "128x4096x4096")
    m, n, k = 128, 4096, 4096
    assert point.intensity == pytest.approx(2 * m * n * k / (2 * (m * k + k * n + m * n)))
    assert section.roofline.hbm_tbps == 4.8 and "nominal" in section.roofline.hbm_label
    seg = section.weights.segments[0]
    assert len(seg.x) == len(logs) and seg.x == sorted(seg.x)
    for i, entry in enumerate(logs):
        assert sum(seg.weights[a][i] for a in seg.weights) == pytest.approx(1.0, abs=1e-3)
        assert seg.weights["param_mutate"][i] == pytest.approx(entry["probabilities"]["param_mutate"])


def _timing(median, samples):
    return {"median_us": median, "min_us": min(samples), "max_us": max(samples), "repeats": len(samples),
            "samples_us": samples, "ref_samples_us": None}


def synthetic_bench(simulated: bool = False) -> dict:
    """A bench.json shaped like docs/results/h200-public.json, three shapes."""
    shapes = []
    for i, (name, vendor, kernel) in enumerate([("64x64x4096", 6.2, 4.3), ("1024x1024x1024", 6.2, 6.8),
                                                 ("4096x4096x4096", 200.0, 190.0)]):
        base = {"torch_tn": _timing(vendor * 1.02, [vendor * 1.02, vendor * 1.03, vendor * 1.01]),
                "cublaslt_heuristic": _timing(vendor, [vendor, vendor * 1.05, vendor * 0.99])}
        genome = {"id": f"k{i}", "family": "sm90_cutlass", "params": {"tile_m": 128}, "patches": []}
        slow = {"id": f"s{i}", "family": "sm90_cutlass", "params": {"tile_m": 64}, "patches": []}
        shapes.append({
            "problem": name,
            "baselines": {"problem": name, "device": base, "server": {}, "call": {}, "rel_error": {}, "notes": {},
                          "simulated": simulated,
                          "aa": {"kernel": f"k{i}", "median": 1.001, "low": 0.99, "high": 1.02, "rounds": 3}},
            "best": f"k{i}", "speedups": {"cublaslt_heuristic": vendor / kernel, "best_vendor": vendor / kernel},
            "paired_vs_best_vendor": {"median": vendor / kernel, "low": 0.98 * vendor / kernel,
                                      "high": 1.01 * vendor / kernel, "rounds": 3},
            "kernels": [{"genome": slow, "measurement": {"genome_id": f"s{i}", "problem": name, "status": "ok",
                                                         "device": _timing(kernel * 2, [kernel * 2] * 3)}},
                        {"genome": genome, "measurement": {
                            "genome_id": f"k{i}", "problem": name, "status": "ok",
                            "device": _timing(kernel, [kernel, kernel, kernel * 1.02])}}]})
    return {"meta": {"date": "2026-01-01T00:00:00+00:00", "device": "NVIDIA H200", "simulated": simulated,
                     "command": "evogemm bench", "peak_tflops": 989.0, "hbm_tbps": 4.25,
                     "hbm_source": "copy bandwidth measured on this GPU"},
            "aggregate": {"best_vendor": {"geomean": 1.0, "wins": 2, "shapes": 3, "worst": 0.91,
                                          "worst_shape": "1024x1024x1024"}},
            "shapes": shapes}


def test_report_of_a_bench_json(tmp_path, capsys):
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(synthetic_bench()))
    out = tmp_path / "rep"
    assert main(["report", str(path), "--out", str(out)]) == 0
    assert {p.name for p in out.glob("*.png")} == {"speedup.png", "roofline.png"}
    speed, roof = assert_real_image(out / "speedup.png"), assert_real_image(out / "roofline.png")
    assert speed.shape != roof.shape or not np.array_equal(speed, roof)
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 2 and "Simulated." not in html
    assert "HBM 4.25 TB/s (copy bandwidth measured on this GPU)" in html
    assert "(1.442x)" in html  # cublaslt_heuristic 6.2 us / best kernel 4.3 us, 64x64x4096
    for link in md_links((out / "report.md").read_text()):
        assert (out / link).is_file(), link
    # a simulated bench says so, in every figure's data and in the page
    from experiments.report_html import render_html
    sim = bench_section(synthetic_bench(simulated=True), "sim.json")
    assert sim.simulated and sim.speedup.simulated and sim.roofline.simulated
    assert "Simulated." in render_html([sim], [[]])


def test_bench_speedups_carry_the_measured_range():
    section = bench_section(synthetic_bench(), "bench.json")
    i = section.speedup.shapes.index("64x64x4096")
    r = section.speedup.series["cublaslt_heuristic"][i]
    # same number of interleaved rounds: the range of the per-round ratios, around the median ratio
    ratios = sorted(b / k for b, k in zip([6.2, 6.2 * 1.05, 6.2 * 0.99], [4.3, 4.3, 4.3 * 1.02]))
    assert r.value == pytest.approx(6.2 / 4.3)
    assert r.low == pytest.approx(r.value * ratios[0] / ratios[1])
    assert r.high == pytest.approx(r.value * ratios[2] / ratios[1])
    assert r.low < r.value < r.high
    paired = section.speedup.series["best vendor, paired per round"][i]
    assert (paired.low, paired.high) == pytest.approx((0.98 * 6.2 / 4.3, 1.01 * 6.2 / 4.3))
    assert section.speedup.noise[i] == (0.99, 1.02)
    assert section.roofline.hbm_tbps == 4.25
    kernel = next(p for p in section.roofline.series["best evolved kernel"] if p.label == "4096x4096x4096")
    assert kernel.tflops == pytest.approx(2 * 4096 ** 3 / 190e-6 / 1e12)


def test_report_of_an_ablation_folder_and_a_mix(tmp_path):
    runs = []
    for strat, base in (("evolution_rl", 0.9), ("random", 0.6)):
        for seed in (0, 1):
            shapes = {s: {"vendor_us": 10.0, "curve": [None] + [10.0 / min(base + 0.01 * i + 0.02 * seed, 1.2)
                                                                for i in range(1, 12)]}
                      for s in ("1024x1024x1024", "2048x2048x2048")}
            runs.append({"strategy": strat, "seed": seed, "shapes": shapes, "seconds": 0.1})
    abl = tmp_path / "abl"
    abl.mkdir()
    (abl / "ablation.json").write_text(json.dumps({
        "meta": {"campaign": "q.yaml", "seeds": [0, 1], "policy": "thompson", "budget": 12,
                 "strategies": ["evolution_rl", "random"]},
        "summary": {"shapes": ["1024x1024x1024", "2048x2048x2048"],
                    "table": {s: {"geomean_speedup_mean": 1.0, "geomean_speedup_std": 0.01,
                                  "per_shape_mean_speedup": {"1024x1024x1024": 1.0}} for s in ("evolution_rl", "random")}},
        "runs": runs}))
    assert main(["report", str(abl)]) == 0
    assert [p.name for p in (abl / "report").glob("*.png")] == ["convergence.png"]
    assert_real_image(abl / "report" / "convergence.png")
    from experiments.report_inputs import load_section
    curves = load_section(abl).convergence.curves
    rl = next(c for c in curves if c.label.startswith("evolution_rl"))
    assert rl.x[0] == 2 and len(rl.x) == 11  # from the first evaluation where every shape has a kernel
    assert rl.y[0] == pytest.approx(0.92) and (rl.low[0], rl.high[0]) == pytest.approx((0.91, 0.93))
    assert all(lo <= y <= hi for lo, y, hi in zip(rl.low, rl.y, rl.high))
    # any mix: one section per input, figure names prefixed
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps(synthetic_bench()))
    out = tmp_path / "mix"
    assert main(["report", str(bench), str(abl), "--out", str(out)]) == 0
    names = sorted(p.name for p in out.glob("*.png"))
    assert names == ["01-bench-bench-roofline.png", "01-bench-bench-speedup.png", "02-ablation-abl-convergence.png"]
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 3 and html.count("<table>") == 2
    for link in md_links((out / "report.md").read_text()):
        assert (out / link).is_file(), link


def test_bad_inputs_are_clear_errors(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "no such file or folder" in err and "expected a campaign folder" in err
    (tmp_path / "notes.txt").write_text("hello")
    assert main(["report", str(tmp_path / "notes.txt"), "--out", str(tmp_path / "o")]) == 2
    assert "not JSON" in capsys.readouterr().err
    (tmp_path / "other.json").write_text(json.dumps({"a": 1}))
    assert main(["report", str(tmp_path / "other.json"), "--out", str(tmp_path / "o")]) == 2
    assert "not a bench result" in capsys.readouterr().err
    assert main(["report", str(tmp_path)]) == 2
    assert "no campaign.db, ablation.json or bench.json" in capsys.readouterr().err
    (tmp_path / "abl").mkdir()  # an ablation.json of another shape wrote an empty report, exit 0
    (tmp_path / "abl" / "ablation.json").write_text("{}")
    assert main(["report", str(tmp_path / "abl"), "--out", str(tmp_path / "o")]) == 2
    assert "not an ablation result" in capsys.readouterr().err and not (tmp_path / "o").exists()
    (tmp_path / "b.json").write_text(json.dumps(synthetic_bench()))
    assert main(["report", str(tmp_path / "b.json")]) == 2  # a file: no default folder
    assert "give --out OUTDIR" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_figure_that_fails_never_fails_the_campaign(tmp_path, monkeypatch):
    import experiments.plots as plots

    def broken(data, path):
        raise RuntimeError("no fonts today")
    monkeypatch.setattr(plots, "speedup_plot", broken)
    folder = _campaign(tmp_path, "c", 3)
    log = (folder / "campaign.log").read_text()
    assert "warning: the report figures were not written (RuntimeError: no fonts today)" in log
    assert "campaign finished" in log
    text = (folder / "report.md").read_text()
    assert "## Plots" not in text and "# Campaign c" in text


def test_a_re_verified_hall_of_fame_is_its_own_series(campaigns, tmp_path):
    import sqlite3
    from evaluator.api import BaselineSet, Measurement, Timing
    from evolution.db import CampaignDB
    from experiments.report_inputs import campaign_section
    src = sqlite3.connect(str(campaigns[0] / "campaign.db"))
    dst = sqlite3.connect(str(tmp_path / "campaign.db"))
    src.backup(dst)
    src.close()
    dst.close()
    shape = "128x4096x4096"
    with CampaignDB(tmp_path / "campaign.db") as db:
        bs = BaselineSet(shape, device={"cublaslt_heuristic": Timing(20.0, 19.0, 22.0, 5),
                                        "torch_nn": Timing(21.0, 20.0, 23.0, 5)})
        ms = [Measurement("g1", shape, "ok", device=Timing(16.0, 15.5, 17.0, 5)),
              Measurement("g2", shape, "compile_failed")]
        db.record_verified(shape, bs, ms)
        section = campaign_section(db, "copy")
    series = section.speedup.series["best vendor, re-verified interleaved"]
    r = series[section.speedup.shapes.index(shape)]
    assert r.value == pytest.approx(20.0 / 16.0)
    assert (r.low, r.high) == pytest.approx((20.0 / 16.0 * (19 / 20) * (16 / 17), 20.0 / 16.0 * (22 / 20) * (16 / 15.5)))
    assert series[section.speedup.shapes.index("1024x1024x1024")] is None


def test_report_page_lines_keep_code_and_bold_spans_and_escape_the_rest():
    from experiments.report_html import _inline
    assert _inline("**1.006x** over `a<b>` & more") == "<strong>1.006x</strong> over <code>a&lt;b&gt;</code> &amp; more"
