"""`evogemm bench`: time kernels against cuBLAS / cuBLASLt under the MEASURE.md protocol.

Per shape, the candidate kernels and the vendor baselines are verified and timed in one worker
process, interleaved round by round on the same buffers. The table gives every time, TFLOP/s and
the speedup of the best kernel against each baseline; the aggregate gives the geometric mean
(and the arithmetic mean, which others publish), wins and the worst case. Without a GPU the
figures come from the analytic simulator and every output says "simulated".
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import math
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence


from genome import Genome, Problem
from templates import get_space

from evaluator.api import BaselineSet, Measurement

DEFAULT_CEILING_TFLOPS = 790.0  # measured dense fp16/bf16 rate through PyTorch on the H200 (MEASURE.md)


class BenchError(ValueError):
    pass


# -- inputs ---------------------------------------------------------------------------------------

SUITES_DIR = Path(__file__).resolve().parent / "suites"  # the suites that ship with the package


def bundled_suites() -> list[str]:
    return sorted(p.stem for p in SUITES_DIR.glob("*.yaml"))


def resolve_suite(name: "str | Path") -> Path:
    """A suite file: a path, else the name of a bundled suite (`public` is experiments/suites/public.yaml)."""
    path = Path(name)
    if path.is_file():
        return path
    if path.parent == Path(".") and path.suffix in ("", ".yaml", ".yml"):
        bundled = SUITES_DIR / (path.name if path.suffix else f"{path.name}.yaml")
        if bundled.is_file():
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
            else:
                files = sorted(path.glob("*.json"))
        else:
            files = [path]
        for f in files:
            for g in _genomes_in(f):
                try:
                    get_space(g.family)
                except ValueError as exc:
                    raise BenchError(f"{f}: {exc}") from exc
                out.setdefault(g.id, g)
    return list(out.values())


def _genomes_in(path: Path) -> list[Genome]:
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise BenchError(f"{path}: not valid JSON: {exc}") from exc
    found = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "family" in node and "params" in node:
                found.append(Genome.from_dict({k: node[k] for k in ("family", "params", "patches") if k in node}))
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


# -- results ----------------------------------------------------------------------------------------

@dataclass
class ShapeResult:
    problem: Problem
    baselines: BaselineSet
    measurements: list[tuple[Genome, Measurement]] = field(default_factory=list)

    def best(self) -> "tuple[Genome, Measurement] | None":
        ok = [(g, m) for g, m in self.measurements if m.ok]
        return min(ok, key=lambda gm: gm[1].time_us) if ok else None

    def speedups(self) -> dict[str, float]:
        best = self.best()
        if not best:
            return {}
        t = best[1].time_us
        out = {name: timing.median_us / t for name, timing in self.baselines.device.items()}
        if self.baselines.best_vendor_us:
            out["best_vendor"] = self.baselines.best_vendor_us / t
        if self.baselines.torch_us():
            out["torch"] = self.baselines.torch_us() / t
        return out


def geomean(xs: Sequence[float]) -> float:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def aggregate(results: Sequence[ShapeResult], against: str = "best_vendor") -> dict:
    """Geomean / mean / wins / worst over the shapes where some kernel passed; `missing` names the
    shapes where none did (a caller would fall back to the vendor library there)."""
    pairs = [(r.problem.name, r.speedups().get(against)) for r in results]
    missing = [n for n, s in pairs if not s]
    pairs = [(n, s) for n, s in pairs if s]
    if not pairs:
        return {"against": against, "shapes": 0, "of": len(results), "missing": missing}
    values = [s for _, s in pairs]
    worst = min(pairs, key=lambda p: p[1])
    return {"against": against, "shapes": len(pairs), "of": len(results), "missing": missing,
            "geomean": geomean(values), "mean": sum(values) / len(values), "wins": sum(1 for v in values if v > 1.0),
            "worst": worst[1], "worst_shape": worst[0], "best": max(values)}


# -- running ---------------------------------------------------------------------------------------

def run_bench(problems: Sequence[Problem], kernels: Sequence[Genome], evaluator, progress=print) -> list[ShapeResult]:
    results = []
    if kernels and hasattr(evaluator, "build"):
        progress(f"building {len(kernels)} kernel(s) (cached builds are reused) ...")
        builds = evaluator.build(kernels, progress=lambda d, n, r: progress(
            f"  build {d}/{n}: {'ok' if r.ok else 'FAILED'} {r.seconds:.0f}s{' (cache)' if r.cached else ''}"
            + ("" if r.ok else f" {r.reason}")))
        by_id = {b.genome_id: b for b in builds}
    else:
        by_id = {}
    for i, problem in enumerate(problems, 1):
        start = time.monotonic()
        # every kernel goes to the evaluator, which answers "invalid" (with the rule) where one cannot run
        if hasattr(evaluator, "build"):
            measurements, baselines = evaluator.evaluate(kernels, problem, builds=list(by_id.values()),
                                                         with_baselines=True)
        else:
            baselines = evaluator.baselines(problem)
            measurements = evaluator.evaluate(kernels, problem)
        result = ShapeResult(problem, baselines, list(zip(kernels, measurements)))
        results.append(result)
        best = result.best()
        vendor = baselines.best_vendor_us
        msg = f"[{i}/{len(problems)}] {problem.name}: best vendor {vendor:.1f} us" if vendor else f"[{i}/{len(problems)}] {problem.name}"
        if best:
            msg += f", best kernel {best[1].time_us:.1f} us ({result.speedups().get('best_vendor', float('nan')):.3f}x)"
        progress(msg + f" [{time.monotonic() - start:.0f} s]")
    return results


# -- output ----------------------------------------------------------------------------------------

def _fmt(x: "float | None", spec: str = ".1f") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _clock_note(bs: BaselineSet) -> str:
    """SM clock before -> after the timing rounds (NVML), to make throttling visible."""
    try:
        clocks = json.loads(bs.notes.get("clocks", "{}"))
        return f"{clocks['before_timing']['sm_mhz']}->{clocks['after_timing']['sm_mhz']}"
    except (KeyError, TypeError, ValueError):
        return "-"


def render_markdown(results: Sequence[ShapeResult], meta: dict, ceiling: float) -> str:
    sim = " (SIMULATED: analytic model, no GPU)" if meta.get("simulated") else ""
    names = sorted({n for r in results for n in r.baselines.device})
    lines = [f"# evogemm bench{sim}", "",
             f"- date: {meta['date']}", f"- device: {meta['device']}", f"- command: `{meta['command']}`",
             f"- kernels: {meta['n_kernels']}; shapes: {len(results)}; timing: {meta['timing_note']}",
             *([f"- WARNING: timing below MEASURE.md's protocol ({', '.join(meta['below_protocol'])}); "
                "indicative only"] if meta.get("below_protocol") else []), "",
             "Device time in microseconds (CUDA-graph replay, rotated inputs, median of repeats; spread = "
             "(max-min)/median). Speedup = baseline time / best kernel time.", ""]
    head = ["shape"] + names + ["best vendor", "best kernel", "spread", "TFLOP/s", "% ceiling", "vs torch",
                                "vs best vendor", "kernel", "SM MHz"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for r in results:
        best = r.best()
        sp = r.speedups()
        row = [r.problem.name] + [_fmt(r.baselines.device[n].median_us) if n in r.baselines.device else "-" for n in names]
        row.append(_fmt(r.baselines.best_vendor_us))
        if best:
            g, m = best
            tf = m.tflops(r.problem)
            row += [_fmt(m.time_us), _fmt(m.device.spread, ".1%"), _fmt(tf), _fmt(100 * tf / ceiling, ".0f"),
                    _fmt(sp.get("torch"), ".3f"), _fmt(sp.get("best_vendor"), ".3f"), g.id[:8]]
        else:
            row += ["-"] * 7
        row.append(_clock_note(r.baselines))
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    for against in ("best_vendor", "torch"):
        a = aggregate(results, against)
        if a.get("shapes"):
            lines.append(f"- vs {against}: geomean {a['geomean']:.3f}x, arithmetic mean {a['mean']:.3f}x, "
                         f"wins {a['wins']}/{a['shapes']}, worst {a['worst']:.3f}x ({a['worst_shape']}), "
                         f"best {a['best']:.3f}x"
                         + (f"; over {a['shapes']} of {a['of']} shapes, no passing kernel for "
                            f"{', '.join(a['missing'])}" if a["missing"] else ""))
    if meta.get("simulated"):
        lines.append("- SIMULATED: no kernel ran and no output was checked; times are the analytic model's")
        return "\n".join(lines) + "\n"
    errs = {}
    for r in results:
        for n, e in r.baselines.rel_error.items():
            errs[n] = max(errs.get(n, 0.0), e)
    if errs:
        lines.append("- correctness gate, worst relative error of each baseline: " +
                     ", ".join(f"{n} {e:.2e}" for n, e in sorted(errs.items())))
    kerrs = [m.rel_error for r in results for _, m in r.measurements if m.ok and m.rel_error is not None]
    if kerrs:
        lines.append(f"- correctness gate, kernels: worst relative error {max(kerrs):.2e} over {len(kerrs)} passing runs")
    fails: dict[str, int] = {}
    for r in results:
        for _, m in r.measurements:
            if not m.ok:
                fails[m.status] = fails.get(m.status, 0) + 1
    if fails:
        lines.append("- kernel runs not timed: " + ", ".join(f"{k} {v}" for k, v in sorted(fails.items())))
    other = [(r.problem.name, mode, getattr(r.baselines, mode)) for r in results for mode in ("server", "call")
             if getattr(r.baselines, mode)]
    if other:
        lines += ["", "Server mode (idle gap, L2 flushed, one launch) and call latency (synchronised Python call), "
                  "median us: best kernel / best vendor", "", "| shape | server kernel | server vendor | call kernel | call vendor |",
                  "|---|---|---|---|---|"]
        for r in results:
            best = r.best()
            sv = r.baselines.best("server")
            cv = r.baselines.best("call")
            row = [r.problem.name,
                   _fmt(best[1].server.median_us) if best and best[1].server else "-", _fmt(sv[1]) if sv else "-",
                   _fmt(best[1].call.median_us) if best and best[1].call else "-", _fmt(cv[1]) if cv else "-"]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def write_outputs(results: Sequence[ShapeResult], out: Path, meta: dict, ceiling: float) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    data = {"meta": meta, "aggregate": {a: aggregate(results, a) for a in ("best_vendor", "torch")},
            "shapes": [{"problem": r.problem.name, "baselines": r.baselines.to_dict(),
                        "best": r.best()[0].id if r.best() else None, "speedups": r.speedups(),
                        "kernels": [{"genome": g.to_dict(), "measurement": m.to_dict()} for g, m in r.measurements]}
                       for r in results]}
    paths = {"json": out / "bench.json", "csv": out / "bench.csv", "md": out / "bench.md"}
    paths["json"].write_text(json.dumps(data, indent=1))
    with paths["csv"].open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["shape", "candidate", "kind", "status", "device_us", "min_us", "max_us", "server_us", "call_us",
                    "tflops", "rel_error", "simulated", "reason"])
        for r in results:
            for name, t in sorted(r.baselines.device.items()):
                w.writerow([r.problem.name, name, "baseline", "ok", t.median_us, t.min_us, t.max_us,
                            r.baselines.server.get(name).median_us if name in r.baselines.server else "",
                            r.baselines.call.get(name).median_us if name in r.baselines.call else "",
                            r.problem.flops / (t.median_us * 1e-6) / 1e12, r.baselines.rel_error.get(name, ""),
                            r.baselines.simulated, ""])
            for g, m in r.measurements:
                w.writerow([r.problem.name, g.id, "kernel", m.status, m.time_us or "",
                            m.device.min_us if m.device else "", m.device.max_us if m.device else "",
                            m.server.median_us if m.server else "", m.call.median_us if m.call else "",
                            m.tflops(r.problem) or "", m.rel_error if m.rel_error is not None else "",
                            m.simulated, m.reason or ""])
    paths["md"].write_text(render_markdown(results, meta, ceiling))
    return paths


# -- CLI -------------------------------------------------------------------------------------------

def cmd_bench(args: argparse.Namespace) -> int:
    from evaluator.factory import NoGpuError, allowed_options, make_evaluator
    from experiments.cli import CliError
    try:
        problems = []
        if args.suite:
            problems += load_suite(args.suite, args.groups.split(",") if args.groups else None)
        problems += [Problem.parse(s) for s in args.shapes or []]
        if not problems:
            raise BenchError("give --suite FILE and/or --shapes MxNxK ...")
        kernels = load_kernels(args.kernels or [])
    except (BenchError, ValueError) as exc:
        raise CliError(str(exc)) from exc
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
    try:
        results = run_bench(problems, kernels, evaluator, progress=lambda s: print(s, flush=True))
    finally:
        evaluator.close()
    meta = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "device": device,
            "simulated": bool(evaluator.simulated), "command": "evogemm " + " ".join(sys.argv[1:]),
            "n_kernels": len(kernels), "host": platform.node(), "timing": timing, "modes": list(modes),
            "below_protocol": below,
            "timing_note": ("analytic model (simulated), no timing" if evaluator.simulated else
                            "graph replay, >=3x L2 rotation, >=1 s warm-up, interleaved; " + json.dumps(timing))}
    paths = write_outputs(results, Path(args.out), meta, args.ceiling)
    print()
    print(paths["md"].read_text())
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from experiments.cli import add_command
    p = add_command(sub, "bench", "time kernels against cuBLAS/cuBLASLt on a suite or a list of shapes")
    p.add_argument("--suite", help="suite YAML file, or the name of a bundled suite: "
                                   + (", ".join(bundled_suites()) or "-") + " (experiments/suites/)")
    p.add_argument("--groups", help="comma-separated groups of the suite to include (default all)")
    p.add_argument("--shapes", nargs="*", help="shapes MxNxK")
    p.add_argument("--kernels", nargs="*", help="genome JSON files, folders of them, or a campaign dir (its hall_of_fame/)")
    p.add_argument("--modes", default="device,server,call", help="timing modes (default device,server,call)")
    p.add_argument("--backend", default="auto", choices=("auto", "gpu", "simulator"))
    p.add_argument("--out", default="bench-out", help="output folder for bench.json, bench.csv, bench.md")
    p.add_argument("--cache", help="kernel build cache folder")
    p.add_argument("--timing", help='timing options as JSON, e.g. \'{"repeats": 20}\'')
    p.add_argument("--quick", action="store_true", help="fewer repeats and autotune candidates")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ceiling", type=float, default=DEFAULT_CEILING_TFLOPS,
                   help=f"TFLOP/s ceiling for the percent column (default {DEFAULT_CEILING_TFLOPS}, measured)")
    p.set_defaults(func=cmd_bench)
