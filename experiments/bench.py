"""`evogemm bench`: time kernels against cuBLAS / cuBLASLt under the MEASURE.md protocol.

Per shape, the candidate kernels and the vendor baselines are verified and timed in one worker
process, interleaved round by round on the same buffers. The table gives every time, TFLOP/s and
the speedup of the best kernel against each baseline; the aggregate gives the geometric mean
(and the arithmetic mean, which others publish), wins and the worst case. Without a GPU the
figures come from the analytic simulator and every output says "simulated".
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from evaluator.api import STATUS_CRASHED, STATUS_TIMEOUT, Measurement
from genome import Genome, Problem
from templates import get_space

from . import bench_package
from .bench_report import DEFAULT_HBM_TBPS, DEFAULT_PEAK_TFLOPS, ShapeResult, merge_results, write_outputs
from .schema_paths import BUNDLED_SUITES, bundled_suite


class BenchError(ValueError):
    pass


# -- inputs ---------------------------------------------------------------------------------------

SUITES_DIR = BUNDLED_SUITES


def bundled_suites() -> list[str]:
    return sorted(p.stem for p in SUITES_DIR.glob("*.yaml"))


def resolve_suite(name: "str | Path") -> Path:
    """A suite file: a path, else the name of a bundled suite (`public` is experiments/suites/public.yaml)."""
    path = Path(name)
    if path.is_file():
        return path
    bundled = bundled_suite(str(name))
    if bundled is not None:
        return bundled
    if path.is_dir():
        raise BenchError(f"suite {path} is a folder, not a suite YAML file")
    raise BenchError(f"suite file not found: {path} (bundled suites, by name: {', '.join(bundled_suites()) or 'none'})")


def load_suite(path: "str | Path", groups: "Sequence[str] | None" = None) -> list[Problem]:
    """The shapes of a suite file, or of a bundled suite by name (the campaign schema's reader),
    with errors as BenchError."""
    from experiments.schema import load_suite as read_suite
    path = resolve_suite(path)
    try:
        return read_suite(path, groups)
    except UnicodeDecodeError as exc:
        raise BenchError(f"suite {path}: not a YAML file: it is not UTF-8 text (byte {exc.start})") from exc
    except ValueError as exc:
        raise BenchError(str(exc)) from exc
    except OSError as exc:
        raise BenchError(f"suite {path}: cannot read it: {exc.strerror or exc}") from exc


def load_kernels(paths: Iterable["str | Path"]) -> list[Genome]:
    """Genome JSON files; folders of them; a campaign's hall_of_fame/; an exported package."""
    out: dict[str, Genome] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise BenchError(f"no such kernel file or folder: {path}")
        files: list[Path]
        if path.is_dir():
            if (path / "dispatch.json").exists():
                files = [path / "dispatch.json"]
            elif (path / "hall_of_fame").is_dir():
                files = sorted((path / "hall_of_fame").glob("*.json"))
            elif (path / "campaign.db").exists():
                raise BenchError(f"{path}: this campaign has no hall of fame yet (its run stopped before a shape "
                                 f"finished); `evogemm resume {path}` finishes it")
            else:
                files = sorted(path.glob("*.json"))
        else:
            files = [path]
        for f in files:
            for g in _genomes_in(f, empty_ok=f.parent.name == "hall_of_fame"):
                try:
                    get_space(g.family)
                except ValueError as exc:
                    raise BenchError(f"{f}: {exc}") from exc
                out.setdefault(g.id, g)
    return list(out.values())


def bench_kernels(paths: Sequence["str | Path"],
                  per_shape: bool) -> "tuple[list[Genome], dict[str, list[Genome]] | None]":
    """`bench --kernels PATHS`: the genomes timed at every shape, and (with `per_shape`) each shape's own hall of
    fame, shape name -> genomes, from the campaign folders among `paths` (None without such folders)."""
    campaigns = [p for p in paths if (Path(p) / "hall_of_fame").is_dir()] if per_shape else []
    kernels = load_kernels([p for p in paths if p not in campaigns])
    return kernels, (halls_by_shape(campaigns) if campaigns else None)


def halls_by_shape(paths: Iterable["str | Path"]) -> "dict[str, list[Genome]]":
    """Shape name -> the genomes of that shape's hall of fame, over the campaign folders given
    (`bench --per-shape`: each shape is timed with its own hall, not every hall)."""
    out: dict[str, dict[str, Genome]] = {}
    for raw in paths:
        hall = Path(raw) / "hall_of_fame"
        if not hall.is_dir():
            raise BenchError(f"--per-shape: {raw} is not a campaign folder (no hall_of_fame/)")
        for f in sorted(hall.glob("*.json")):
            for g in _genomes_in(f, empty_ok=True):
                out.setdefault(f.stem, {}).setdefault(g.id, g)
    return {shape: list(gs.values()) for shape, gs in out.items()}


def _genomes_in(path: Path, empty_ok: bool = False) -> list[Genome]:
    """The genomes a JSON file holds. `empty_ok`: a hall-of-fame file may be `[]` (a shape the
    campaign reached without a passing kernel, or not at all)."""
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise BenchError(f"{path}: not valid JSON: {exc}") from exc
    if empty_ok and data == []:
        return []
    found = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "family" in node and "params" in node:
                try:
                    found.append(Genome.from_dict({k: node[k] for k in ("family", "params", "patches") if k in node}))
                except (ValueError, TypeError) as exc:
                    raise BenchError(f"{path}: {exc}") from exc
                return
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(data)
    if not found:
        raise BenchError(f"{path}: holds no genome (an object with 'family' and 'params')")
    return found


# -- running ---------------------------------------------------------------------------------------

def run_bench(problems: Sequence[Problem], kernels: Sequence[Genome], evaluator, progress=print,
              per_shape: "dict[str, list[Genome]] | None" = None,
              on_shape: "Callable[[list[ShapeResult]], None] | None" = None) -> list[ShapeResult]:
    """Time `kernels` (plus, with `per_shape`, the shape's own hall of fame) on every problem,
    interleaved with the vendor baselines. `on_shape(results so far)` runs after each shape (cmd_bench
    writes its outputs there, so a bench killed part-way keeps the shapes it finished).

    A kernel that hung or crashed at one shape is not run at the later ones: each such run costs the
    worker's silence timeout and a new worker, and the kernel cannot win anyway. Its measurement there
    says so (status and the first reason)."""
    results = []
    broken: dict[str, Measurement] = {}  # genome id -> its first hang or crash
    every = {g.id: g for g in kernels}
    for extra in (per_shape or {}).values():
        every.update({g.id: g for g in extra})
    if every and hasattr(evaluator, "build"):
        progress(f"building {len(every)} kernel(s) (cached builds are reused) ...")
        builds = evaluator.build(list(every.values()), progress=lambda d, n, r: progress(
            f"  build {d}/{n}: {'ok' if r.ok else 'FAILED'} {r.seconds:.0f}s{' (cache)' if r.cached else ''}"
            + ("" if r.ok else f" {r.reason}")))
        by_id = {b.genome_id: b for b in builds}
    else:
        by_id = {}
    for i, problem in enumerate(problems, 1):
        start = time.monotonic()
        shape_kernels = list({g.id: g for g in [*kernels, *(per_shape or {}).get(problem.name, [])]}.values())
        runnable = [g for g in shape_kernels if g.id not in broken]
        # every kernel goes to the evaluator, which answers "invalid" (with the rule) where one cannot run
        if hasattr(evaluator, "build"):
            builds_here = [by_id[g.id] for g in runnable if g.id in by_id]
            measured, baselines = evaluator.evaluate(runnable, problem, builds=builds_here,
                                                     with_baselines=True, aa=True)
        else:
            baselines = evaluator.baselines(problem)
            measured = evaluator.evaluate(runnable, problem)
        for g, m in zip(runnable, measured):
            if m.status in (STATUS_TIMEOUT, STATUS_CRASHED):
                broken.setdefault(g.id, m)
        by_genome = dict(zip((g.id for g in runnable), measured))
        measurements = [by_genome.get(g.id) or Measurement(
            g.id, problem.name, broken[g.id].status,
            reason=f"not run: it failed at {broken[g.id].problem} ({(broken[g.id].reason or '').splitlines()[0][:200]})")
            for g in shape_kernels]
        result = ShapeResult(problem, baselines, list(zip(shape_kernels, measurements)))
        results.append(result)
        best = result.best()
        vendor_best = baselines.best("device")
        if best and vendor_best and hasattr(evaluator, "focused_pair") and best[0].id in by_id:
            result.focused = evaluator.focused_pair(problem, best[0], by_id[best[0].id], vendor_best[0])
        vendor = baselines.best_vendor_us
        msg = f"[{i}/{len(problems)}] {problem.name}: best vendor {vendor:.1f} us" if vendor else f"[{i}/{len(problems)}] {problem.name}"
        if best:
            msg += f", best kernel {best[1].time_us:.1f} us ({result.speedups().get('best_vendor', float('nan')):.3f}x)"
        dropped = [(g, m) for g, m in zip(shape_kernels, measurements) if not m.ok]
        if dropped:
            msg += f"; {len(dropped)} of {len(shape_kernels)} kernel(s) not timed"
        progress(msg + f" [{time.monotonic() - start:.0f} s]")
        for g, m in dropped[:10]:
            progress(f"    {g.family}[{g.id[:8]}]: {m.status}: {(m.reason or '').splitlines()[0][:200] if m.reason else '-'}")
        if len(dropped) > 10:
            progress(f"    ... and {len(dropped) - 10} more (bench.json holds each reason)")
        if on_shape is not None:
            on_shape(results)
    return results


# -- CLI -------------------------------------------------------------------------------------------

def short_rotations(problems: "Sequence[Problem]", l2_bytes: "int | None", l2_multiple: float) -> "list[str]":
    """'rotation 0.71x L2 at 5x3x33' for each shape whose input sets rotate over less than
    `l2_multiple` x L2 (tiny sets, their count capped: evaluator/timing_stats.py)."""
    from evaluator.timing_stats import rotation_multiple
    out = []
    for p in problems if l2_bytes else []:
        got = rotation_multiple(int(l2_bytes), p.min_bytes, l2_multiple)   # a set: A, W and C
        if got is not None:
            out.append(f"rotation {got:.2f}x L2 at {p.name}")
    return out


def _check_out(raw: str) -> None:
    """--out is a folder the results can go to: checked before anything is timed, not after."""
    from experiments.cli import CliError
    out = Path(raw).absolute()
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {raw} is a file; give a folder for bench.json, bench.csv and bench.md")
    there = out
    while not there.exists():  # the folder is made when the first shape is done; its nearest existing parent
        there = there.parent
    if not there.is_dir():
        raise CliError(f"--out {raw}: {there} is a file, so the folder cannot be made")
    if not os.access(there, os.W_OK | os.X_OK):
        raise CliError(f"--out {raw}: {there} is not writable")


def cmd_bench(args: argparse.Namespace) -> int:
    from evaluator.factory import NoGpuError, allowed_options, make_evaluator
    from experiments.cli import CliError
    _check_out(args.out)
    if args.merge:
        return _merge(args)
    if args.groups and not args.suite:
        raise CliError(f"--groups {args.groups} picks groups of a suite: give --suite too")
    packages = [p for p in args.kernels or [] if bench_package.is_package(p)]
    if packages:
        return _bench_packages(args, packages)
    try:
        problems = []
        if args.suite:
            problems += load_suite(args.suite, args.groups.split(",") if args.groups else None)
        problems += [Problem.parse(s) for s in args.shapes or []]
        if not problems:
            raise BenchError("give --suite FILE and/or --shapes MxNxK ...")
        unique = list({p.name: p for p in problems}.values())
        if len(unique) < len(problems):
            print(f"note: {len(problems) - len(unique)} shape(s) named twice are timed once", flush=True)
            problems = unique
        paths = list(args.kernels or [])
        kernels, per_shape = bench_kernels(paths, args.per_shape)
        if paths and not kernels and not any((per_shape or {}).values()):
            raise BenchError(f"--kernels {' '.join(paths)}: found no genome there (JSON files of genomes, a folder "
                             "of them, a campaign folder with a hall_of_fame/ that holds kernels)")
    except (BenchError, ValueError) as exc:
        raise CliError(str(exc)) from exc
    if not args.peak_tflops > 0 or args.peak_tflops == float("inf"):
        raise CliError(f"--peak-tflops must be a positive number, got {args.peak_tflops:g}")
    from evaluator.gpu_worker import check_timing
    try:
        timing = json.loads(args.timing) if args.timing else {}
        if not isinstance(timing, dict):
            raise ValueError("it must be a JSON object")
    except ValueError as exc:
        raise CliError(f"--timing is not a JSON object of timing options: {exc}") from exc
    if args.quick:
        timing = {"repeats": 5, "warmup_s": 1.0, "server_samples": 5, "call_samples": 10, "autotune_algos": 30, **timing}
    try:
        below = check_timing(timing)
    except ValueError as exc:
        raise CliError(f"--timing: {exc}") from exc
    if below:
        print(f"warning: timing below MEASURE.md's protocol ({', '.join(below)}): figures are indicative only",
              flush=True)
    modes = tuple(m for m in args.modes.split(",") if m)
    bad_modes = sorted(set(modes) - {"device", "server", "call"})
    if bad_modes or "device" not in modes:
        raise CliError(f"--modes {args.modes!r}: allowed device, server, call (device is always needed)")
    options = {"timing": timing, "modes": modes, "seed": args.seed, "log_dir": args.out, "cache_dir": args.cache}
    allowed = allowed_options(args.backend)
    if allowed is not None:  # the simulator takes no timing options: it times nothing
        if args.timing and "timing" not in allowed:
            print(f"note: --timing does not apply to backend {args.backend!r} (it times nothing)", flush=True)
        options = {k: v for k, v in options.items() if k in allowed}
    try:
        evaluator = make_evaluator(args.backend, **options)
    except NoGpuError as exc:
        raise CliError(str(exc)) from exc
    device = evaluator.describe()
    if evaluator.simulated:
        print(f"no GPU in use: figures come from the analytic simulator ({device}); they are SIMULATED", flush=True)
    meta = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "device": device,
            "simulated": bool(evaluator.simulated), "command": "evogemm " + " ".join(sys.argv[1:]),
            "n_kernels": len(kernels) + sum(len(v) for v in (per_shape or {}).values()),
            "host": platform.node(), "timing": timing, "modes": list(modes),
            "below_protocol": below,
            "timing_note": ("analytic model (simulated), no timing" if evaluator.simulated else
                            "graph replay, >=3x L2 rotation, >=1 s warm-up, interleaved; " + json.dumps(timing))}
    facts = evaluator.device_facts() if hasattr(evaluator, "device_facts") else {}
    short = short_rotations(problems, facts.get("l2_bytes"), float(timing.get("l2_multiple", 3.0)))
    if short:
        print(f"warning: timing below MEASURE.md's protocol at {len(short)} shape(s) whose input sets are too small "
              f"to rotate over {timing.get('l2_multiple', 3.0):g}x L2 ({', '.join(short)}): indicative only", flush=True)
        meta["below_protocol"] = [*below, *short]
    meta["peak_tflops"] = args.peak_tflops
    meta["hbm_tbps"] = facts.get("hbm_tbps") or DEFAULT_HBM_TBPS
    meta["hbm_source"] = facts.get("hbm_source") if facts.get("hbm_tbps") else "MEASURE.md's H200 copy bandwidth"

    def partial(done: "list[ShapeResult]") -> None:
        if len(done) < len(problems):
            write_outputs(done, Path(args.out), {**meta, "partial": f"{len(done)} of {len(problems)} shapes"})

    try:
        results = run_bench(problems, kernels, evaluator, progress=lambda s: print(s, flush=True),
                            per_shape=per_shape, on_shape=partial)
    finally:
        evaluator.close()
    paths = write_outputs(results, Path(args.out), meta)
    print()
    print(paths["md"].read_text())
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    if (kernels or any((per_shape or {}).values())) and not any(m.ok for r in results for _, m in r.measurements):
        print("evogemm bench: no kernel was timed at any shape (each reason is above and in bench.json); only the "
              "vendor baselines were", file=sys.stderr)
        return 1
    return 0


def _merge(args: argparse.Namespace) -> int:
    """`--merge RESULT...`: one bench.md / .json / .csv from runs over disjoint shapes; times nothing."""
    from experiments.cli import CliError
    if args.suite or args.groups or args.shapes or args.kernels:
        raise CliError("--merge re-renders earlier results: give no --suite, --groups, --shapes or --kernels with it")
    try:
        results, meta = merge_results(args.merge)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    out = Path(args.out).resolve()
    for raw in args.merge:
        src = Path(raw).resolve()
        if out in (src, src.parent if src.is_file() else src):
            raise CliError(f"--out {args.out} is one of the results being merged ({raw}); choose another --out")
    paths = write_outputs(results, Path(args.out), meta)
    print(paths["md"].read_text())
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


def _bench_packages(args: argparse.Namespace, packages: "list[str]") -> int:
    """`--kernels PKG` naming an exported package: its hgemm op against torch.matmul (bench_package)."""
    from experiments.cli import CliError
    if len(packages) != 1 or len(args.kernels) != 1:
        raise CliError("--kernels: give one exported package alone (its op is measured as a user calls it)")
    try:
        problems = load_suite(args.suite, args.groups.split(",") if args.groups else None) if args.suite else []
        problems += [Problem.parse(s) for s in args.shapes or []]
        bench_package.run(packages[0], [(p.m, p.n, p.k) for p in problems], Path(args.out),
                          progress=lambda s: print(s, flush=True))
    except (BenchError, ValueError, RuntimeError, ImportError) as exc:
        raise CliError(str(exc)) from exc
    print((Path(args.out) / "bench-package.md").read_text())
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from experiments.cli import add_command
    p = add_command(sub, "bench", "time kernels against cuBLAS/cuBLASLt on a suite or a list of shapes")
    p.add_argument("--suite", help="suite YAML file, or the name of a bundled suite: "
                                   + (", ".join(bundled_suites()) or "-") + " (experiments/suites/)")
    p.add_argument("--groups", help="comma-separated groups of the suite to include (default all)")
    p.add_argument("--shapes", nargs="*", help="shapes MxNxK")
    p.add_argument("--kernels", nargs="*", help="genome JSON files, folders of them, a campaign dir (its hall_of_fame/), "
                        "or one package written by `evogemm export` (then its hgemm op is measured)")
    p.add_argument("--per-shape", action="store_true",
                   help="time each shape with its own hall of fame from the campaign folders given (not every "
                        "hall on every shape); other kernel files are timed on every shape")
    p.add_argument("--merge", nargs="+", metavar="RESULT",
                   help="merge earlier bench results over disjoint shapes (bench.json files or their folders, "
                        "e.g. a suite split over GPUs or device calls) into one --out; times nothing")
    p.add_argument("--modes", default="device,server,call", help="timing modes (default device,server,call)")
    p.add_argument("--backend", default="auto", choices=("auto", "gpu", "simulator"))
    p.add_argument("--out", default="bench-out", help="output folder for bench.json, bench.csv, bench.md")
    p.add_argument("--cache", help="kernel build cache folder")
    p.add_argument("--timing", help='timing options as JSON, e.g. \'{"repeats": 20}\'')
    p.add_argument("--quick", action="store_true", help="fewer repeats and autotune candidates")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--peak-tflops", type=float, default=DEFAULT_PEAK_TFLOPS,
                   help=f"tensor peak of the roofline, TFLOP/s (default {DEFAULT_PEAK_TFLOPS:g}, H100/H200 datasheet); "
                        "the memory side is the copy bandwidth the GPU worker measures")
    p.set_defaults(func=cmd_bench)
