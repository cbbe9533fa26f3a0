import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.bench import BenchError, load_kernels, load_suite, run_bench
from experiments.bench_report import aggregate, geomean
from evaluator.simulator import SimulatedEvaluator
from genome import Problem

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO / "experiments" / "suites" / "public.yaml"
GENOMES = REPO / "templates" / "sm90_cutlass" / "seeds"  # the sm90_cutlass family's seed genomes


def test_load_suite_groups_and_errors(tmp_path):
    all_shapes = load_suite(SUITE)
    assert len(all_shapes) == 28 and Problem(96, 3072, 768) in all_shapes
    assert len(load_suite(SUITE, ["odd"])) == 3
    with pytest.raises(BenchError, match="no group"):
        load_suite(SUITE, ["nope"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("shapes: [[1, 2]]\n")
    with pytest.raises(BenchError, match=r"shape #1 \[1, 2\]"):
        load_suite(bad)
    with pytest.raises(BenchError, match="not found"):
        load_suite(tmp_path / "missing.yaml")


def test_a_bundled_suite_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # anywhere, not only in the repository
    assert load_suite("public") == load_suite(SUITE) == load_suite("public.yaml")
    assert len(load_suite("public", ["odd"])) == 3
    with pytest.raises(BenchError, match=r"suite file not found: nope \(bundled suites, by name: .*public"):
        load_suite("nope")
    (tmp_path / "public").write_text("shapes: [64x64x64]\n")  # a file of that name wins
    assert load_suite("public") == [Problem(64, 64, 64)]


def test_the_readme_bench_command_works_from_a_clone(tmp_path):
    """The bench command of README.md, as written (run from the repository root), on the simulator."""
    import shlex
    readme = (REPO / "README.md").read_text()
    [line] = [x for x in readme.splitlines() if x.startswith("evogemm bench ") and "--suite" in x]
    args = shlex.split(line.split("#")[0])[1:]
    assert "../" not in line, "the README must not point outside the repository"
    if "--out" in args:
        args[args.index("--out") + 1] = str(tmp_path / "bench-out")
    proc = subprocess.run([sys.executable, "-m", "experiments.cli", *args, "--backend", "simulator", "--quick"],
                          capture_output=True, text=True, cwd=str(REPO), timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    data = json.loads((tmp_path / "bench-out" / "bench.json").read_text())
    assert len(data["shapes"]) == 28 and data["meta"]["n_kernels"] > 0


def test_load_kernels_from_files_folders_and_campaign_dirs(tmp_path):
    folder = GENOMES
    kernels = load_kernels([folder])
    assert len(kernels) == len(list(folder.glob("*.json")))
    hof = tmp_path / "campaign" / "hall_of_fame"
    hof.mkdir(parents=True)
    g = kernels[0]
    (hof / "64x64x64.json").write_text(json.dumps([{"genome": g.to_dict(), "measurement": {"status": "ok"}}]))
    assert [k.id for k in load_kernels([tmp_path / "campaign"])] == [g.id]
    # a shape the campaign reached without a passing kernel (its wall budget spent) has an empty
    # hall: skipped, not an error, both as kernels and per shape
    (hof / "8190x8190x8190.json").write_text("[]")
    assert [k.id for k in load_kernels([tmp_path / "campaign"])] == [g.id]
    from experiments.bench import halls_by_shape
    assert {s: [k.id for k in ks] for s, ks in halls_by_shape([tmp_path / "campaign"]).items()} == {"64x64x64": [g.id]}
    (tmp_path / "junk.json").write_text('{"nothing": 1}')
    with pytest.raises(BenchError, match="holds no genome"):
        load_kernels([tmp_path / "junk.json"])


def test_geomean_and_aggregate_arithmetic():
    from evaluator.api import BaselineSet, Measurement, Timing
    from experiments.bench_report import ShapeResult
    assert geomean([2.0, 0.5]) == pytest.approx(1.0)
    assert geomean([4.0]) == pytest.approx(4.0)
    g = load_kernels([GENOMES])[0]

    def shape(name, vendor_us, kernel_us):
        bs = BaselineSet(problem=name, device={"torch_tn": Timing(vendor_us * 1.1, vendor_us, vendor_us, 5),
                                               "cublaslt_autotuned": Timing(vendor_us, vendor_us, vendor_us, 5)})
        ms = [] if kernel_us is None else [(g, Measurement(g.id, name, "ok", device=Timing(kernel_us, kernel_us,
                                                                                              kernel_us, 5)))]
        return ShapeResult(Problem.parse(name), bs, ms)

    results = [shape("64x64x64", 10.0, 5.0), shape("128x128x128", 10.0, 20.0), shape("256x256x256", 10.0, 8.0),
               shape("512x512x512", 10.0, None)]
    a = aggregate(results)
    assert a["shapes"] == 3 and a["of"] == 4 and a["missing"] == ["512x512x512"]
    assert a["geomean"] == pytest.approx((2.0 * 0.5 * 1.25) ** (1 / 3))
    assert a["mean"] == pytest.approx((2.0 + 0.5 + 1.25) / 3)
    assert a["wins"] == 2 and a["worst"] == pytest.approx(0.5) and a["worst_shape"] == "128x128x128"
    assert aggregate(results, "torch")["geomean"] == pytest.approx((2.2 * 0.55 * 1.375) ** (1 / 3))


def test_simulated_bench_end_to_end(tmp_path):
    out = tmp_path / "bench"
    proc = subprocess.run([sys.executable, "-m", "experiments.cli", "bench", "--suite", str(SUITE), "--groups", "odd",
                           "--shapes", "1000x1000x1001", "--kernels", str(GENOMES),
                           "--backend", "simulator", "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "SIMULATED" in proc.stdout
    md = (out / "bench.md").read_text()
    assert "SIMULATED" in md and "geomean" in md and "no output was checked" in md
    data = json.loads((out / "bench.json").read_text())
    assert data["meta"]["simulated"] is True and len(data["shapes"]) == 4
    unaligned = [s for s in data["shapes"] if s["problem"] == "1000x1000x1001"][0]
    assert unaligned["best"] is None and unaligned["kernels"]  # every sm90 genome refuses K=1001, saying why
    assert all(k["measurement"]["status"] == "invalid" and "K=1001" in k["measurement"]["reason"]
               for k in unaligned["kernels"])
    rows = list(csv.DictReader((out / "bench.csv").open()))
    assert rows and all(r["simulated"] == "True" for r in rows)
    agg = data["aggregate"]["best_vendor"]
    assert agg["shapes"] == 3 and agg["of"] == 4 and agg["missing"] == ["1000x1000x1001"]
    assert "no passing kernel for 1000x1000x1001" in md


def test_run_bench_speedups_are_baseline_over_kernel():
    ev = SimulatedEvaluator()
    kernels = load_kernels([GENOMES])
    [res] = run_bench([Problem(2048, 2048, 2048)], kernels, ev, progress=lambda s: None)
    best = res.best()
    assert best is not None
    assert res.speedups()["best_vendor"] == pytest.approx(res.baselines.best_vendor_us / best[1].time_us)
    assert aggregate([res])["geomean"] == pytest.approx(res.speedups()["best_vendor"])


def test_roofline_and_bandwidth_columns():
    from experiments.bench_report import achieved_tbps, roofline_us
    skinny, square = Problem(16, 4096, 14336), Problem(8192, 8192, 8192)
    # a skinny product is memory-bound: the roofline is its bytes over the bandwidth
    assert roofline_us(skinny, 989.0, 4.3) == pytest.approx(skinny.min_bytes / 4.3e12 * 1e6)
    assert roofline_us(square, 989.0, 4.3) == pytest.approx(square.flops / 989e12 * 1e6)
    assert achieved_tbps(skinny, 31.2) == pytest.approx(skinny.min_bytes / 31.2e-6 / 1e12)
    assert 3.7 < achieved_tbps(skinny, 31.2) < 3.8      # MEASURE.md: the vendor streams W at ~3.8 TB/s


def test_bench_markdown_shows_bandwidth_and_roofline(tmp_path):
    out = tmp_path / "b"
    proc = subprocess.run([sys.executable, "-m", "experiments.cli", "bench", "--shapes", "16x4096x14336",
                           "--kernels", "templates/sm90_cutlass/seeds/pp_64x64x128_c1x1.json", "--backend",
                           "simulator", "--out", str(out)], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent.parent)
    assert proc.returncode == 0, proc.stderr
    md = (out / "bench.md").read_text()
    assert "% roofline" in md and "vendor TB/s" in md and "bytes / 4.3 TB/s" in md
    assert "bytes / 4.3 TB/s, the simulated H200's copy bandwidth" in md   # says where the figure came from, once
    row = next(line for line in md.splitlines() if line.startswith("| 16x4096x14336"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    head = [c.strip() for c in next(line for line in md.splitlines() if line.startswith("| shape")).strip("|").split("|")]
    got = dict(zip(head, cells))
    time_us = float(got["best kernel"])
    assert float(got["TB/s"]) == pytest.approx(Problem(16, 4096, 14336).min_bytes / time_us / 1e6, rel=0.01)
    roof = Problem(16, 4096, 14336).min_bytes / 4.3e6
    assert float(got["% roofline"]) == pytest.approx(100 * roof / time_us, abs=1)


def test_paired_ratios_and_the_aa_figure_in_the_report():
    from evaluator.api import BaselineSet, Measurement, Timing
    from evaluator.paired import paired_ratio
    from experiments.bench_report import ShapeResult, render_markdown
    from genome import Genome
    # the clock drifts from round to round: both slow down together in round 2, the pair does not move
    vendor = Timing(10.0, 9.0, 12.0, 3, samples_us=[9.0, 12.0, 10.0])
    kernel = Timing(9.1, 8.2, 10.9, 3, samples_us=[8.2, 10.9, 9.1])
    p = paired_ratio(vendor, kernel)
    assert p.rounds == 3 and p.median == pytest.approx(10.0 / 9.1)
    assert p.high / p.low < 1.01 < (12.0 / 8.2) / (9.0 / 10.9)     # far narrower than the unpaired spread
    assert paired_ratio(vendor, Timing(9.0, 8.0, 10.0, 2, samples_us=[8.0, 10.0])) is None
    assert paired_ratio(vendor, Timing(9.0, None, None, 0)) is None   # the simulator's: no samples
    g = Genome.make("sm90_cutlass", {"tile_m": 128})
    bs = BaselineSet("1024x1024x1024", device={"cublaslt_autotuned": vendor},
                     aa={"kernel": g.id, "median": 0.998, "low": 0.99, "high": 1.01, "rounds": 3})
    r = ShapeResult(Problem(1024, 1024, 1024), bs, [(g, Measurement(g.id, "1024x1024x1024", "ok", device=kernel))])
    md = render_markdown([r], {"date": "d", "device": "x", "command": "c", "n_kernels": 1, "timing_note": "t",
                               "peak_tflops": 989.0, "hbm_tbps": 4.3, "hbm_source": "test"})
    assert f"{p.median:.3f} [{p.low:.3f}-{p.high:.3f}]" in md and "0.998 [0.990-1.010]" in md
    assert "A/A (a kernel against itself, paired): largest deviation 0.9980" in md
    assert "its algorithm" not in md                              # no cuBLASLt algorithm recorded: no table
    bs.algorithms["cublaslt_autotuned"] = {"tile_id": 15, "splitk": 1, "cluster_shape_id": 5}
    md = render_markdown([r], {"date": "d", "device": "x", "command": "c", "n_kernels": 1, "timing_note": "t",
                               "peak_tflops": 989.0, "hbm_tbps": 4.3, "hbm_source": "test"})
    assert "| 1024x1024x1024 | cublaslt_autotuned | tile 64x64, split-K 1, cluster 1x2x1 |" in md


def test_per_shape_bench_times_each_shape_with_its_own_hall_of_fame(tmp_path):
    from genome import Genome
    from templates import get_space
    space = get_space("sm90_cutlass")
    seeds = sorted((REPO / "templates" / "sm90_cutlass" / "seeds").glob("*.json"))
    camp = tmp_path / "camp" / "hall_of_fame"
    camp.mkdir(parents=True)
    a, b = (Genome.load(f) for f in seeds[:2])
    (camp / "1024x1024x1024.json").write_text(json.dumps([{"genome": a.to_dict()}]))
    (camp / "2048x2048x2048.json").write_text(json.dumps([{"genome": b.to_dict()}]))
    assert space.is_valid(a) and space.is_valid(b)
    out = tmp_path / "b"
    run = subprocess.run([sys.executable, "-m", "experiments.cli", "bench", "--backend", "simulator", "--per-shape",
                          "--shapes", "1024x1024x1024", "2048x2048x2048", "--kernels", str(tmp_path / "camp"),
                          "--out", str(out)], capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0, run.stderr
    data = json.loads((out / "bench.json").read_text())
    timed = {s["problem"]: [k["genome"]["id"] for k in s["kernels"]] for s in data["shapes"]}
    assert timed == {"1024x1024x1024": [a.id], "2048x2048x2048": [b.id]}


def _sim_bench(out, *shapes):
    proc = subprocess.run([sys.executable, "-m", "experiments.cli", "bench", "--shapes", *shapes, "--kernels",
                           str(GENOMES), "--backend", "simulator", "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "bench.json").read_text())


def test_merge_bench_results_over_disjoint_shapes(tmp_path):
    """A suite split over GPUs or calls: --merge gives one result whose aggregate is over all the
    shapes, keeps each run's command, and refuses overlapping shapes or bad input."""
    from experiments.bench_report import load_results
    a = _sim_bench(tmp_path / "a", "1024x1024x1024", "96x3072x768")
    b = _sim_bench(tmp_path / "b", "2048x2048x2048")
    out = tmp_path / "merged"
    cli = [sys.executable, "-m", "experiments.cli", "bench", "--merge"]
    proc = subprocess.run([*cli, str(tmp_path / "a"), str(tmp_path / "b" / "bench.json"), "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "bench.json").read_text())
    assert [s["problem"] for s in data["shapes"]] == ["1024x1024x1024", "96x3072x768", "2048x2048x2048"]
    speedups = [s["speedups"]["best_vendor"] for s in a["shapes"] + b["shapes"]]
    assert data["aggregate"]["best_vendor"]["geomean"] == pytest.approx(geomean(speedups))
    assert data["aggregate"]["best_vendor"]["of"] == 3
    assert [m["command"] for m in data["meta"]["merged_from"]] == [a["meta"]["command"], b["meta"]["command"]]
    md = (out / "bench.md").read_text()
    assert "merged from 2 bench runs" in md and md.count("--shapes 1024x1024x1024 96x3072x768") == 1
    # the merged result reads back like any bench result (and so can be merged or seeded from again)
    results, meta = load_results(out)
    assert len(results) == 3 and meta["simulated"] is True
    assert [r.best()[0].id for r in results] == [s["best"] for s in data["shapes"]]

    overlap = subprocess.run([*cli, str(tmp_path / "a"), str(out), "--out", str(tmp_path / "x")],
                             capture_output=True, text=True)
    assert overlap.returncode != 0 and "1024x1024x1024 is in both" in overlap.stderr
    (tmp_path / "junk.json").write_text("{}")
    junk = subprocess.run([*cli, str(tmp_path / "a"), str(tmp_path / "junk.json"), "--out", str(tmp_path / "y")],
                          capture_output=True, text=True)
    assert junk.returncode != 0 and "not a bench.json" in junk.stderr
    missing = subprocess.run([*cli, str(tmp_path / "a"), str(tmp_path / "nothing"), "--out", str(tmp_path / "z")],
                             capture_output=True, text=True)
    assert missing.returncode != 0 and "no bench result there" in missing.stderr
    mixed = subprocess.run([*cli, str(tmp_path / "a"), "--shapes", "64x64x64", "--out", str(tmp_path / "w")],
                           capture_output=True, text=True)
    assert mixed.returncode != 0 and "re-renders" in mixed.stderr


def test_merge_flattens_counts_and_refuses_what_does_not_belong_together(tmp_path):
    """Merging a merged result again lists every run; kernels are counted once; results of another
    device, timing or kind are refused; a result written before the roofline figures were recorded
    reads with the defaults and says so (and nothing non-finite is written)."""
    from experiments.bench_report import DEFAULT_HBM_TBPS, merge_results
    _sim_bench(tmp_path / "a", "1024x1024x1024")
    _sim_bench(tmp_path / "b", "2048x2048x2048")
    c = _sim_bench(tmp_path / "c", "96x3072x768")
    ab = tmp_path / "ab"
    subprocess.run([sys.executable, "-m", "experiments.cli", "bench", "--merge", str(tmp_path / "a"),
                    str(tmp_path / "b"), "--out", str(ab)], check=True, capture_output=True)
    results, meta = merge_results([ab, tmp_path / "c"])
    assert len(results) == 3 and len(meta["merged_from"]) == 3      # flattened: three runs, not two
    assert meta["merged_from"][2]["command"] == c["meta"]["command"]
    assert meta["n_kernels"] == len({k["genome"]["id"] for k in c["shapes"][0]["kernels"]})  # same kernels
    assert meta["n_kernels"] < sum(m["n_kernels"] for m in meta["merged_from"])

    def variant(name, src="c", **changes):
        data = json.loads((tmp_path / src / "bench.json").read_text())
        for key, value in changes.items():
            if value is None:
                data["meta"].pop(key, None)
            else:
                data["meta"][key] = value
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        return path

    for name, changes, message in (("measured", {"simulated": False}, "simulated and measured"),
                                   ("h100", {"device": "NVIDIA H100"}, "different devices"),
                                   ("timing", {"timing": {"repeats": 20}}, "different timing options"),
                                   ("peak", {"peak_tflops": 500.0}, "different --peak-tflops")):
        with pytest.raises(ValueError, match=message):
            merge_results([tmp_path / "a", variant(name, **changes)])
    old = variant("old", peak_tflops=None, hbm_tbps=None, hbm_source=None)
    results, meta = merge_results([old, tmp_path / "a"])
    assert meta["peak_tflops"] == 989.0 and meta["hbm_tbps"] >= DEFAULT_HBM_TBPS
    old_a = variant("old-a", src="a", peak_tflops=None, hbm_tbps=None, hbm_source=None)
    for pair in ((old, tmp_path / "a"), (old, old_a)):              # old with new, and two old ones
        out = tmp_path / ("merged-" + "-".join(Path(x).stem for x in pair))
        proc = subprocess.run([sys.executable, "-m", "experiments.cli", "bench", "--merge", *map(str, pair),
                               "--out", str(out)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        text = (out / "bench.json").read_text()
        assert "Infinity" not in text and "NaN" not in text
        assert json.loads(text)["meta"]["peak_tflops"] == 989.0
        assert "% roofline" in (out / "bench.md").read_text()


def test_a_kernel_that_hung_is_not_run_again_and_each_shape_is_reported_as_it_ends(tmp_path):
    """A hang costs the worker's silence timeout and a new worker: the bench runs such a kernel at no later
    shape (its measurement there says where it failed), and hands each finished shape to `on_shape`, where
    `evogemm bench` writes its outputs, so a bench killed part-way keeps what it measured."""
    from dataclasses import replace
    from evaluator.api import STATUS_TIMEOUT
    kernels = load_kernels([GENOMES])
    hangs = kernels[0]

    class HangingEvaluator:
        def __init__(self):
            self.sim, self.asked = SimulatedEvaluator(), []

        def baselines(self, problem):
            return self.sim.baselines(problem)

        def evaluate(self, genomes, problem):
            self.asked.append((problem.name, [g.id for g in genomes]))
            return [replace(m, status=STATUS_TIMEOUT, device=None, reason="hung: no progress for 60 s during gate")
                    if g.id == hangs.id else m for g, m in zip(genomes, self.sim.evaluate(genomes, problem))]

    ev, seen = HangingEvaluator(), []
    problems = [Problem(1024, 1024, 1024), Problem(2048, 2048, 2048), Problem(4096, 4096, 4096)]
    results = run_bench(problems, kernels, ev, progress=lambda s: None,
                        on_shape=lambda done: seen.append([r.problem.name for r in done]))
    assert seen == [["1024x1024x1024"], ["1024x1024x1024", "2048x2048x2048"], [p.name for p in problems]]
    from experiments.bench_report import write_outputs
    meta = {"date": "d", "device": "sim", "command": "c", "n_kernels": len(kernels), "timing_note": "t", "peak_tflops": 989,
            "hbm_tbps": 4.8, "hbm_source": "s", "partial": "1 of 3 shapes"}
    paths = write_outputs(results[:1], tmp_path, meta)
    assert "- PARTIAL: written after 1 of 3 shapes" in paths["md"].read_text()
    assert json.loads(paths["json"].read_text())["meta"]["partial"] == "1 of 3 shapes"
    assert [hangs.id in ids for _, ids in ev.asked] == [True, False, False]
    for res in results[1:]:
        [(g, m)] = [(g, m) for g, m in res.measurements if g.id == hangs.id]
        assert m.status == STATUS_TIMEOUT and not m.ok and "not run: it failed at 1024x1024x1024 (hung" in m.reason
        assert len(res.measurements) == len(kernels) and res.best() is not None


def test_the_paired_aggregate_is_over_the_shapes_paired_figures():
    from evaluator.api import BaselineSet
    from experiments.bench_report import PAIRED, ShapeResult, aggregate, render_markdown
    from genome import Problem

    def shape(m, paired):
        p = Problem(m, 256, 256)
        focused = {"kernel": "k", "paired": {"median": paired, "low": paired, "high": paired, "rounds": 21,
                                             "ci_low": paired, "ci_high": paired}} if paired else None
        return ShapeResult(p, BaselineSet(p.name), focused=focused)
    results = [shape(128, 1.10), shape(256, 0.90), shape(512, None)]
    a = aggregate(results, PAIRED)
    assert a["shapes"] == 2 and a["missing"] == ["512x256x256"] and a["worst_shape"] == "256x256x256"
    assert abs(a["geomean"] - (1.10 * 0.90) ** 0.5) < 1e-12 and a["wins"] == 1
    meta = {"date": "d", "device": "x", "command": "c", "n_kernels": 0, "timing_note": "t", "peak_tflops": 989.0,
            "hbm_tbps": 4.8, "hbm_source": "nominal"}
    text = render_markdown(results, meta)
    assert f"vs {PAIRED}: geomean 0.995x" in text and "no paired figure for 512x256x256" in text
