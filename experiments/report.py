"""What a campaign found, read from its database: `campaign_status` (for `evogemm status`), the
rich status tables, and report.md. Every figure that came from the simulator is labelled so."""

from __future__ import annotations

import math
import os
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

from rich.console import Console
from rich.table import Table

from evaluator.paired import START_TOLERANCE
from evolution.db import CampaignDB
from evolution.population import rank_key
from evolution.reverify import steady_start, vendor_drift

REPORT_FILE = "report.md"
SKIPPED_PREFIX = "unsupported"  # the engine's reason for a shape no template family supports


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader (or a crash) sees the old file or the new one."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def is_skipped(shape: "dict[str, Any]") -> bool:
    """A shape the engine skipped because no template family supports it (status `skipped` while it
    runs; in the database a shape `done` for that reason)."""
    return shape.get("status") == "skipped" or (
        shape.get("status") == "done" and str(shape.get("reason") or "").startswith(SKIPPED_PREFIX))


def _fmt_us(us: "float | None") -> str:
    if us is None:
        return "-"
    return f"{us / 1000:.3f} ms" if us >= 10000 else f"{us:.2f} us"


def silent_arms(arms: "Mapping[str, Mapping[str, int]]") -> list[str]:
    """One line per arm that failed every call it got (it never proposed a child): a broken plug-in, a
    model that cannot be reached or answers nothing usable."""
    return [f"operator {arm} failed {c['failures']} time(s) and proposed no child: see operator_failures in "
            "campaign.db or campaign.log" for arm, c in sorted(arms.items()) if c["failures"] and not c["children"]]


def campaign_status(db: CampaignDB) -> dict[str, Any]:
    """Per shape: status, evaluations spent / allocated, failures by status, best kernel, each
    baseline and the speedup over it, and the operator weights of the last policy-log entry."""
    config = db.get_meta("config") or {}
    simulated = db.get_meta("simulated")
    granted: dict[str, int] = {}  # evaluations that budget extensions granted to started shapes
    for ext in db.get_meta("extensions") or []:
        for shape, grant in (ext.get("grants") or {}).items():
            granted[shape] = granted.get(shape, 0) + int(grant.get("evaluations") or 0)
    shapes = []
    for row in db.shape_rows():
        name = row["problem"]
        bs = db.baselines(name)
        best = db.best_standing(name)
        counts = db.status_counts(name)
        log = db.policy_log(name)
        entry: dict[str, Any] = {
            "shape": name,
            "status": row["status"],
            "reason": row["reason"],
            "evaluations": sum(counts.values()),
            "allocation": _plus((row["allocation"] or {}).get("evaluations"), granted.get(name, 0)),
            "statuses": counts,
            "failures": {k: v for k, v in counts.items() if k != "ok"},
            "operator_failures": dict(Counter(f["arm"] for f in db.operator_failures(name))),
            "baselines": {n: t.median_us for n, t in bs.device.items()} if bs else {},
            "best_vendor": bs.best("device") if bs else None,
            "best": None,
            "weights": log[-1]["probabilities"] if log else {},
            "policy_round": log[-1]["round"] if log else None,
            "simulated": bool(bs.simulated) if bs else bool(simulated),
        }
        entry["skipped"] = is_skipped(entry)
        verified = db.verified(name)
        if verified:
            vbs, vms = verified
            ok = [m for m in vms if m.ok]
            vbest = min(ok, key=lambda m: rank_key(m.time_us, m.genome_id)) if ok else None
            vvendor = vbs.best("device")
            entry["verified"] = {
                "baselines": {n: t.median_us for n, t in vbs.device.items()},
                "best_vendor": vvendor,
                "best_genome_id": vbest.genome_id if vbest else None,
                "best_us": vbest.time_us if vbest else None,
                "spread": vbest.device.spread if vbest else None,
                "speedup": (vvendor[1] / vbest.time_us) if vbest and vvendor else None,
                "failed": {m.genome_id: m.status for m in vms if not m.ok},
            }
            drift = vendor_drift(bs, vbs)
            if drift is not None:
                entry["verified"]["vendor_drift"] = drift
        if best:
            genome, m, confirmed = best
            entry["best"] = {"genome_id": genome.id, "genome": genome.to_dict(), "short": genome.short(),
                             "time_us": m.time_us, "tflops": m.tflops(_problem(name)), "simulated": m.simulated,
                             "confirmed": confirmed}
            entry["speedups"] = {n: us / m.time_us for n, us in entry["baselines"].items() if m.time_us}
            bv = entry["best_vendor"]
            entry["speedup"] = bv[1] / m.time_us if bv and m.time_us else None
        shapes.append(entry)
    speedups = [s["speedup"] for s in shapes if s.get("speedup")]
    return {
        "name": config.get("name"),
        "seed": config.get("seed"),
        "strategy": (config.get("strategy") or {}).get("name"),
        "policy": (config.get("selection") or {}).get("policy"),
        "simulated": simulated,
        "evaluator": db.get_meta("evaluator_description"),
        "evaluations": db.evaluation_count(),
        "proposals": db.max_seq() + 1,
        "arms": db.arm_counts(),
        "gpu_seconds": db.gpu_seconds(),
        "wall_seconds": db.wall_seconds(),
        "sessions": len(db.sessions()),
        "finished": _finished(db),
        "shapes": shapes,
        "geomean_speedup": math.exp(sum(math.log(s) for s in speedups) / len(speedups)) if speedups else None,
        "wins": sum(1 for s in speedups if s > 1.0),
        "shapes_with_kernel": len(speedups),
        "verified": _verified_aggregate(shapes),
        "unsteady_start": _unsteady_start(shapes),
        "skipped": [{"shape": s["shape"], "reason": skip_reason(s["reason"])} for s in shapes if s["skipped"]],
        "extensions": [_public(e) for e in db.get_meta("extensions") or []],
        "utilisation": db.get_meta("utilisation"),
        "backend_changes": [_public(e) for e in db.get_meta("backend_changes") or []],
    }


def _finished(db: CampaignDB) -> bool:
    """A session finished the campaign, and no budget extension came after it."""
    done, extended = db.events("campaign_done"), db.events("extended")
    return bool(done) and (not extended or done[-1]["id"] > extended[-1]["id"])


def _plus(allocation: "int | None", extra: int) -> "int | None":
    return allocation + extra if allocation is not None else None


def _public(entry: "dict[str, Any]") -> "dict[str, Any]":
    return {k: v for k, v in entry.items() if k != "config_before"}


def skip_reason(reason: "str | None") -> str:
    """'unsupported (fam: why; ...)' -> 'no template family supports it (fam: why; ...)'."""
    text = str(reason or "")
    if text.startswith(SKIPPED_PREFIX):
        text = text[len(SKIPPED_PREFIX):].strip()
        if text.startswith("(") and text.endswith(")"):
            text = text[1:-1]
        return f"no template family supports it ({text})" if text else "no template family supports it"
    return text


def _change_text(change: "dict[str, Any]") -> str:
    return ", ".join(f"{key} {old} -> {new}" for key, (old, new) in sorted((change.get("changes") or {}).items()))


def _verified_aggregate(shapes: list[dict[str, Any]]) -> "dict[str, Any] | None":
    """Geomean, wins and worst of the re-verified (interleaved) figures, when every shape with a
    kernel has them: the figures a GPU campaign should quote."""
    with_kernel = [s for s in shapes if s.get("speedup")]
    verified = [s["verified"]["speedup"] for s in with_kernel if (s.get("verified") or {}).get("speedup")]
    if not verified or len(verified) != len(with_kernel):
        return None
    return {"geomean": math.exp(sum(math.log(v) for v in verified) / len(verified)), "shapes": len(verified),
            "wins": sum(1 for v in verified if v > 1.0), "worst": min(verified)}


def _unsteady_start(shapes: list[dict[str, Any]]) -> "dict[str, Any] | None":
    """The shapes whose best vendor time at the start was off its re-verified time by more than
    START_TOLERANCE (the search's figures there are scaled by a baseline measured in another clock
    or power state), and the search's geomean without them; None when there are none."""
    off = [s for s in shapes if s.get("speedup") and not steady_start((s.get("verified") or {}).get("vendor_drift"))]
    if not off:
        return None
    rest = [s["speedup"] for s in shapes if s.get("speedup") and s not in off]
    return {"shapes": [{"shape": s["shape"], "start_us": s["best_vendor"][1],
                        "verified_us": s["verified"]["best_vendor"][1]} for s in off],
            "geomean_without": math.exp(sum(math.log(v) for v in rest) / len(rest)) if rest else None,
            "shapes_without": len(rest)}


def _problem(name: str) -> Any:
    from genome import Problem
    return Problem.parse(name)


def print_status(status: dict[str, Any], console: "Console | None" = None) -> None:
    console = console or Console()
    sim = status.get("simulated")
    tag = "SIMULATED (no GPU; times are model estimates)" if sim else (status.get("evaluator") or "not started")
    console.print(f"[bold]campaign {status['name']}[/bold] seed {status['seed']}, strategy {status['strategy']}, "
                  f"policy {status['policy']}; evaluator: {tag}", highlight=False)
    console.print(f"{status['evaluations']} evaluations, {status['proposals']} proposals, "
                  f"{status['sessions']} session(s), {status['wall_seconds']:.0f} s wall, "
                  f"{status['gpu_seconds']:.1f} s GPU; "
                  + ("finished" if status["finished"] else "not finished (evogemm resume DIR continues it)"),
                  highlight=False)
    names = sorted({n for s in status["shapes"] for n in s["baselines"]})
    if console.width < 150:  # narrow terminal: one block per shape instead of a wide table
        for s in status["shapes"]:
            best = s.get("best")
            evals = f"{s['evaluations']}/{s['allocation']}" if s.get("allocation") else str(s["evaluations"])
            if s.get("skipped"):
                console.print(f"[bold]{s['shape']}[/bold]  SKIPPED: {skip_reason(s['reason'])}", highlight=False,
                              soft_wrap=True)
                continue
            head = f"[bold]{s['shape']}[/bold]  {s['status']}  {evals} evaluations"
            if best:
                head += f"  best {_fmt_us(best['time_us'])}"
                if s.get("speedup"):
                    head += f"  {s['speedup']:.3f}x best vendor" + (" (simulated)" if sim else "")
            console.print(head, highlight=False, soft_wrap=True)
            if s["baselines"]:
                parts = [f"{n} {_fmt_us(us)}" + (f" {s['speedups'][n]:.3f}x" if best else "")
                         for n, us in sorted(s["baselines"].items(), key=lambda t: t[1])]
                console.print("    vs " + " | ".join(parts), highlight=False, soft_wrap=True)
            fails = ", ".join(f"{k} {v}" for k, v in sorted(s["failures"].items())) or "none"
            ops = s.get("operator_failures") or {}
            fails += ("; operator failures: " + ", ".join(f"{a} {n}" for a, n in sorted(ops.items()))) if ops else ""
            weights = ", ".join(f"{a} {p:.2f}" for a, p in sorted(s["weights"].items(), key=lambda t: -t[1]))
            console.print(f"    failures: {fails}; operator weights: {weights or '-'}", highlight=False,
                          soft_wrap=True)
        _footer(status, console, sim)
        return
    table = Table(title="per shape" + (" [SIMULATED]" if sim else ""))
    for col in ["shape", "status", "evals", "best", "speedup", *names, "failures", "operator weights"]:
        table.add_column(col, justify="left" if col in ("shape", "status", "failures", "operator weights") else "right")
    for s in status["shapes"]:
        best = s.get("best")
        cells = []
        for n in names:
            us = s["baselines"].get(n)
            sp = s.get("speedups", {}).get(n)
            cells.append("-" if us is None else (f"{_fmt_us(us)} {sp:.2f}x" if sp else _fmt_us(us)))
        fails = ", ".join(f"{k} {v}" for k, v in sorted(s["failures"].items())) or "-"
        ops = sum((s.get("operator_failures") or {}).values())
        fails += f" (+{ops} operator)" if ops else ""
        weights = " ".join(f"{a}:{p:.2f}" for a, p in sorted(s["weights"].items(), key=lambda t: -t[1])[:3])
        evals = f"{s['evaluations']}/{s['allocation']}" if s.get("allocation") else str(s["evaluations"])
        table.add_row(s["shape"], "skipped" if s.get("skipped") else s["status"], evals,
                      _fmt_us(best["time_us"]) if best else "-", f"{s['speedup']:.3f}x" if s.get("speedup") else "-",
                      *cells, fails, weights or "-")
    console.print(table)
    _footer(status, console, sim)


def utilisation_text(u: "Mapping[str, Any] | None") -> "str | None":
    """The last session's throughput in one line, e.g. 'GPU busy 19% of 103 s wall in the last session
    (19.6 s; 15.6 s of it while nvcc builds ran); per GPU 25%, 14% (2 GPU actors); 20 builds,
    900 nvcc-seconds, 11.6 builds/min; queue depths at the last round: 3 builds, 1 runner'. Each part
    appears only when the evaluator reported its figures (builds per minute, per-GPU busy time and
    queue depths come from the Ray backend)."""
    if not u:
        return None
    wall = float(u.get("wall_seconds") or 0.0)
    parts = []
    if "gpu_busy_fraction" in u:
        parts.append(f"GPU busy {100 * float(u['gpu_busy_fraction']):.0f}% of {wall:.0f} s wall in the last session "
                     f"({float(u.get('gpu_busy_seconds', 0.0)):.1f} s; "
                     f"{float(u.get('gpu_seconds_during_builds', 0.0)):.1f} s of it while nvcc builds ran)")
    per_gpu = _per_gpu_text(u.get("gpu_busy_by_actor"), wall, u.get("gpu_actors"))
    if per_gpu:
        parts.append(per_gpu)
    if "builds" in u or "builds_per_minute" in u:
        builds = f"{int(u.get('builds', 0))} builds, {float(u.get('build_seconds', 0.0)):.0f} nvcc-seconds"
        if "builds_per_minute" in u:
            builds += f", {float(u['builds_per_minute']):.1f} builds/min"
        parts.append(builds)
    queues = [f"{int(u[key])} {label}" for key, label in (("build_queue_depth", "builds"),
                                                            ("runner_queue_depth", "runner"))
              if u.get(key) is not None]
    if queues:
        parts.append("queue depths at the last round: " + ", ".join(queues))
    if u.get("actor_failures"):
        parts.append(f"{int(u['actor_failures'])} GPU-actor call(s) lost with a dying actor and made again")
    return "; ".join(parts) or None


def _per_gpu_text(busy_by_actor: Any, wall: float, actors: Any) -> "str | None":
    """'per GPU 25%, 14% (2 GPU actors)': each GPU actor's busy seconds against the session's wall
    time (busy seconds when the wall time is unknown)."""
    if not busy_by_actor:
        return None
    busy = [float(s) for s in busy_by_actor]
    cells = [f"{100 * min(1.0, s / wall):.0f}%" if wall > 0 else f"{s:.1f} s" for s in busy]
    n = int(actors) if actors else len(busy)
    return f"per GPU {', '.join(cells)} ({n} GPU actor{'s' if n != 1 else ''})"


def _footer(status: dict[str, Any], console: Console, sim: Any) -> None:
    for line in silent_arms(status.get("arms") or {}):
        console.print(f"[yellow]warning:[/yellow] {line}", highlight=False, soft_wrap=True)
    util = utilisation_text(status.get("utilisation"))
    if util:
        console.print(util, highlight=False, soft_wrap=True)
    if console.width >= 150:  # the narrow layout already gave each skipped shape its line
        for s in status.get("skipped") or []:
            console.print(f"skipped {s['shape']}: {s['reason']}", highlight=False, soft_wrap=True)
    for e in status.get("extensions") or []:
        console.print(f"budget extended {e.get('at', '')}: {_change_text(e)}", highlight=False, soft_wrap=True)
    v = status.get("verified")
    if v:
        console.print(f"re-verified (interleaved with the baselines): geomean {v['geomean']:.3f}x vs best vendor over "
                      f"{v['shapes']} shapes; {v['wins']} wins; worst {v['worst']:.3f}x", highlight=False)
    if status.get("geomean_speedup"):
        console.print(f"geomean speedup vs best vendor: {status['geomean_speedup']:.3f}x over "
                      f"{sum(1 for s in status['shapes'] if s.get('speedup'))} shapes; {status['wins']} wins"
                      + (" (SIMULATED)" if sim else ""), highlight=False)


def headline_lines(status: dict[str, Any]) -> list[str]:
    """The campaign's speedup figures, one line each (Markdown): the re-verified ones (to quote),
    the search's, and the shapes whose start baselines the re-verification found off."""
    label = " (simulated)" if status.get("simulated") else ""
    lines = []
    v = status.get("verified")
    if v:
        lines.append(f"**re-verified, interleaved with the baselines: geomean {v['geomean']:.3f}x vs best vendor, "
                     f"{v['wins']} wins of {v['shapes']} shapes, worst {v['worst']:.3f}x** (the figures to quote)")
    if status.get("geomean_speedup"):
        searched = (" during the search (the best genome at its confirming measurement, the hall of fame's; "
                    "baselines measured once per shape)") if v else ""
        lines.append(f"geomean speedup vs best vendor{label}{searched}: {status['geomean_speedup']:.3f}x, "
                     f"{status['wins']} wins of {status['shapes_with_kernel']} shapes with a passing kernel "
                     f"(of {len(status['shapes'])})")
    off = status.get("unsteady_start")
    if off:
        lines.append(f"{len(off['shapes'])} shape(s) whose best vendor time at the start was off its re-verified time "
                     f"by more than {START_TOLERANCE:g}x (the GPU's clock or power state moved; the search's speedups "
                     "there are scaled by it): "
                     + ", ".join(f"{o['shape']} ({_fmt_us(o['start_us'])} at the start, {_fmt_us(o['verified_us'])} "
                                 "re-verified)" for o in off["shapes"])
                     + (f"; the search's geomean without them: {off['geomean_without']:.3f}x over "
                        f"{off['shapes_without']} shapes" if off.get("geomean_without") else ""))
    return lines


def render_report(status: dict[str, Any], plots: "Sequence[str]" = ()) -> str:
    """report.md; `plots`: the report page and figures (paths relative to the campaign folder) to link."""
    sim = bool(status.get("simulated"))
    label = " (simulated)" if sim else ""
    lines = [f"# Campaign {status['name']}", ""]
    if sim:
        lines += ["> **Simulated.** This campaign ran on the analytic simulator (no GPU). Every time and "
                  "speedup below is a model estimate, not a measurement.", ""]
    lines += [f"- evaluator: {status.get('evaluator') or '-'}",
              f"- seed {status['seed']}, strategy `{status['strategy']}`, policy `{status['policy']}`",
              f"- {status['evaluations']} evaluations, {status['proposals']} proposals, {status['sessions']} "
              f"session(s), {status['wall_seconds']:.0f} s wall, {status['gpu_seconds']:.1f} s GPU"]
    lines += [f"- {line}" for line in headline_lines(status)]
    lines += [f"- **warning:** {line}" for line in silent_arms(status.get("arms") or {})]
    util = utilisation_text(status.get("utilisation"))
    if util:
        lines.append(f"- {util}")
    skipped = status.get("skipped") or []
    if skipped:
        lines.append(f"- {len(skipped)} shape(s) skipped, no template family supports them: "
                     + ", ".join(s["shape"] for s in skipped) + " (reasons below)")
    for e in status.get("extensions") or []:
        lines.append(f"- budget extended {e.get('at', '')}: {_change_text(e)}")
    for c in status.get("backend_changes") or []:
        lines.append(f"- evaluator backend changed before anything was measured ({c.get('at', '')}): "
                     f"{c.get('old')} -> {c.get('new')}")
    lines += ["", f"| shape | best{label} | TFLOP/s{label} | best vendor{label} | speedup{label} | "
              f"evaluations | failures | best genome |", "|---|---|---|---|---|---|---|---|"]
    for s in status["shapes"]:
        best = s.get("best")
        bv = s.get("best_vendor")
        fails = ", ".join(f"{k} {v}" for k, v in sorted(s["failures"].items())) or "0"
        t = _fmt_us(best["time_us"]) if best else "-"
        tf = f"{best['tflops']:.0f}" if best and best.get("tflops") else "-"
        vendor = f"{bv[0]} {_fmt_us(bv[1])}" if bv else "-"
        speed = f"{s['speedup']:.3f}x" if s.get("speedup") else "-"
        genome = f"`{best['short']}`" if best else ("skipped (see below)" if s.get("skipped") else "-")
        lines.append(f"| {s['shape']} | {t} | {tf} | {vendor} | {speed} | {s['evaluations']} | {fails} | {genome} |")
    if skipped:
        lines += ["", "## Shapes skipped", "", "No template family of this campaign supports these shapes, so "
                  "nothing was searched or measured for them:", ""]
        lines += [f"- **{s['shape']}**: {s['reason']}" for s in skipped]
    lines += ["", f"## Against each baseline{label}", ""]
    for s in status["shapes"]:
        if not s.get("best"):
            continue
        parts = ", ".join(f"{n} {_fmt_us(us)} -> {s['speedups'][n]:.3f}x"
                          for n, us in sorted(s["baselines"].items(), key=lambda t: t[1]))
        lines.append(f"- **{s['shape']}**: {parts or 'no baselines'}")
    verified = [s for s in status["shapes"] if s.get("verified")]
    if verified:
        lines += ["", "## Hall of fame re-measured, interleaved with the baselines", "",
                  "At the end of each shape its hall of fame was measured again in one run together with the "
                  "vendor baselines (same process, same buffers, interleaved rounds). These are the figures "
                  "to quote.", "", "| shape | best | spread | best vendor | speedup | not passing |",
                  "|---|---|---|---|---|---|"]
        for s in verified:
            v = s["verified"]
            bv = v.get("best_vendor")
            lines.append(f"| {s['shape']} | {_fmt_us(v.get('best_us'))} | "
                         f"{(format(v['spread'], '.1%') if v.get('spread') is not None else '-')} | "
                         f"{(bv[0] + ' ' + _fmt_us(bv[1])) if bv else '-'} | "
                         f"{(format(v['speedup'], '.3f') + 'x') if v.get('speedup') else '-'} | "
                         f"{', '.join(f'{k[:8]} {st}' for k, st in v['failed'].items()) or '0'} |")
    lines += ["", "## Operator weights (last policy-log entry per shape)", ""]
    for s in status["shapes"]:
        if s["weights"]:
            w = ", ".join(f"{a} {p:.2f}" for a, p in sorted(s["weights"].items(), key=lambda t: -t[1]))
            lines.append(f"- {s['shape']} (round {s['policy_round']}): {w}")
    if plots:
        pages = [p for p in plots if not p.endswith(".png")]
        lines += ["", "## Plots" + label, ""]
        lines += [f"All figures and tables in one self-contained page: [{p}]({p})" for p in pages]
        lines += [line for p in plots if p.endswith(".png") for line in ("", f"![{Path(p).stem}]({p})")]
    lines += ["", "Best genomes are in `hall_of_fame/<shape>.json`; every proposal and measurement is in "
              "`campaign.db`."]
    return "\n".join(lines) + "\n"


def write_report(folder: "str | Path", db: CampaignDB, plots: "Sequence[str]" = ()) -> Path:
    path = Path(folder) / REPORT_FILE
    atomic_write(path, render_report(campaign_status(db), plots))
    return path
