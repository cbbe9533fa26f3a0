"""`evogemm run | resume | extend | status | validate | ablate`: campaign commands of the CLI.

    evogemm validate CAMPAIGN.yaml                 check a campaign file; print what it would run
    evogemm run CAMPAIGN.yaml [--out DIR] [--backend auto|gpu|simulator] [--seed N]
    evogemm resume DIR [--backend auto|gpu|simulator]   continue a stopped or killed campaign
    evogemm extend DIR --evaluations N             raise the budget (also --wall-seconds, --gpu-seconds)
    evogemm status DIR [--json]                    per shape: best vs each baseline, failures, weights
    evogemm ablate CAMPAIGN.yaml --seeds 5 --out DIR   strategies compared on the simulator

See experiments/campaign.py for the layout of a campaign folder.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from rich.console import Console


def _console() -> Console:
    """A console that does not squeeze tables to 80 columns when the output is not a terminal."""
    return Console() if sys.stdout.isatty() else Console(width=200)


def _cli_error(message: str) -> Exception:
    from experiments.cli import CliError
    return CliError(message)


def _flag_errors(errors: "list[str]", overrides: "dict[str, Any]", flags: "dict[str, str]") -> "list[str] | None":
    """The errors as the command-line flags' own when every one is about a key a flag set (`flags`: dotted key ->
    flag), else None: 'seed: -1 is not allowed: ... (line 2)' -> '--seed -1: -1 is not allowed: ...'."""
    out = []
    for error in errors:
        key = next((k for k in flags if k in overrides and error.startswith(k + ":")), None)
        if key is None:
            return None
        message = re.sub(r" \(line \d+\)$", "", error[len(key) + 1:].strip())
        out.append(f"{flags[key]} {overrides[key]}: {message}")
    return out


def load_campaign_file(path: str, overrides: "dict[str, Any] | None" = None,
                       flags: "dict[str, str] | None" = None) -> Any:
    """The campaign YAML at `path` (with `overrides`), or a one-line CLI error saying what is wrong with it. `flags`:
    the command-line flag that set each override (dotted key -> flag), so that a bad value is blamed on its flag,
    not on a line of the file."""
    from experiments.schema import CampaignError, load_campaign
    try:
        return load_campaign(path, overrides)
    except CampaignError as exc:
        by_flag = _flag_errors(exc.errors, overrides or {}, flags or {})
        if by_flag:
            raise _cli_error("; ".join(by_flag)) from exc
        text = str(exc)
        if len(exc.errors) == 1:  # one problem is one line (PyYAML's reader errors span two)
            text = " ".join(part.strip() for part in text.splitlines())
        raise _cli_error(text) from exc
    except UnicodeDecodeError as exc:
        raise _cli_error(f"{path}: not a campaign YAML file: it is not UTF-8 text (byte {exc.start}: "
                         f"{exc.object[exc.start:exc.start + 1]!r})") from exc
    except IsADirectoryError as exc:
        raise _cli_error(f"{path} is a folder, not a campaign YAML file (to continue a campaign folder: "
                         f"evogemm resume {path})") from exc
    except OSError as exc:
        raise _cli_error(f"{path}: cannot read the campaign file: {exc.strerror or exc}") from exc


def _at_least(name: str, value: "int | None", low: int = 1) -> None:
    if value is not None and not value >= low:
        raise _cli_error(f"{name} must be at least {low}, got {value}")


def _positive(name: str, value: "float | None") -> None:
    if value is not None and not value > 0:
        raise _cli_error(f"{name} must be more than 0, got {value:g}")


def unsupported_shapes(config: Any) -> "dict[str, str]":
    """The campaign's shapes that none of its families can run (the engine skips them), shape -> why: each
    family's reason, and the built-in families that would run it."""
    from evolution.plugins import make_plugins
    from templates.family import builtin_families
    registry = make_plugins(config.families).families
    spaces = [registry.resolve(name).space for name in dict.fromkeys(config.families)]
    out = {}
    for problem in config.problems:
        reasons = [(space.family, space.supports(problem)) for space in spaces]
        if all(why for _, why in reasons):
            named = {space.family for space in spaces}
            others = [f.name for f in builtin_families() if f.name not in named and f.space.supports(problem) is None]
            out[problem.name] = "; ".join(f"{family}: {why}" for family, why in reasons) + (
                f"; families that run it: {', '.join(others)}" if others else "")
    return out


def check_runs_something(path: str, config: Any) -> "dict[str, str]":
    """Refuse a campaign none of whose shapes its families can run (it would run nothing and say it finished);
    returns the shapes that will be skipped, shape -> why."""
    unsupported = unsupported_shapes(config)
    if len(unsupported) == len(config.problems):
        raise _cli_error(f"{path}: no shape of the campaign can run with its families ({', '.join(config.families)}): "
                         + " | ".join(f"{shape}: {why}" for shape, why in unsupported.items()))
    return unsupported


def cmd_validate(args: argparse.Namespace) -> int:
    config = load_campaign_file(args.campaign)
    from experiments.schema import dump_campaign
    unsupported = check_runs_something(args.campaign, config)
    b = config.budget
    limits = ", ".join(f"{k}={v}" for k, v in b.model_dump().items() if v is not None)
    print(f"{args.campaign}: OK: campaign {config.name!r}, seed {config.seed}, {len(config.problems)} shapes, "
          f"strategy {config.strategy.name}, policy {config.selection.policy}, "
          f"operators {', '.join(op.arm_name for op in config.operators)}; budget {limits}; "
          f"backend {config.evaluator.backend}")
    print("shapes: " + " ".join(p.name for p in config.problems))
    for shape, why in unsupported.items():
        print(f"warning: {shape} will be skipped: no family of the campaign runs it ({why})")
    if args.resolved:
        print(dump_campaign(config, args.campaign))
    return 0


def _run(folder: Path, mode: str, args: argparse.Namespace, backend: "str | None" = None) -> int:
    from evolution.db import CampaignDB, ReplayMismatch
    from experiments.campaign import CampaignRefused, run_campaign
    from experiments.progress import LiveProgress
    from experiments.report import campaign_status, print_status
    console = _console()
    live = False if getattr(args, "no_live", False) else None
    view = LiveProgress(console=console, title=f"evogemm {folder.name}", live=live)
    try:
        result = run_campaign(folder, console=console, mode=mode, progress=view, backend=backend)
    except CampaignRefused as exc:
        raise _cli_error(str(exc)) from exc
    except ReplayMismatch as exc:
        print(f"evogemm {mode}: cannot continue {folder}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"evogemm {mode}: interrupted; continue with `evogemm resume {folder}`", file=sys.stderr)
        return 130
    db = CampaignDB(folder / "campaign.db", readonly=True)
    try:
        status = campaign_status(db)
    finally:
        db.close()
    print_status(status, console)
    where = f"results in {folder}/ (report.md, hall_of_fame/, campaign.db, campaign.log)"
    if result.simulated:
        console.print(f"[bold yellow]This campaign ran on the SIMULATOR ({result.evaluator}); no GPU was used and "
                      f"every time above is a model estimate.[/bold yellow] {where}", highlight=False)
    else:
        console.print(f"evaluator: {result.evaluator or 'none started (no shape ran)'}; {where}", highlight=False)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from evaluator.factory import NoGpuError
    from experiments.campaign import (CampaignRefused, before_create, create_campaign, default_output_dir,
                                      discard_unstarted)
    from experiments.cli import expected_errors
    overrides: dict[str, Any] = {}
    if args.seed is not None:
        overrides["seed"] = args.seed
    if args.backend is not None:
        overrides["evaluator.backend"] = args.backend
    config = load_campaign_file(args.campaign, overrides, {"seed": "--seed", "evaluator.backend": "--backend"})
    check_runs_something(args.campaign, config)
    out = Path(args.out) if args.out else default_output_dir(config)
    before = before_create(out)
    try:
        create_campaign(config, out, source=str(Path(args.campaign).resolve()))
    except CampaignRefused as exc:
        raise _cli_error(str(exc)) from exc
    except BaseException:
        discard_unstarted(out, before)  # e.g. an unreadable warm-start state: leave nothing half made
        raise
    print(f"campaign {config.name!r}: {len(config.problems)} shapes, seed {config.seed}, backend "
          f"{config.evaluator.backend}; folder {out}", flush=True)
    try:
        return _run(out, "run", args)
    except Exception as exc:
        # It failed before anything was measured (no GPU, no compiler, a broken plug-in): remove the
        # folder this run made, so that the same command can simply be run again.
        if not discard_unstarted(out, before) or os.environ.get("EVOGEMM_DEBUG") or \
                not isinstance(exc, expected_errors()):
            raise
        hint = "; run with --backend simulator to use the analytic simulator" if isinstance(exc, NoGpuError) else ""
        removed = f"{out} was removed" if before.get("created") else f"the files it wrote to {out} were removed"
        raise _cli_error(f"{exc}. Nothing was run, and {removed}{hint}") from exc


def cmd_resume(args: argparse.Namespace) -> int:
    from evaluator.factory import NoGpuError
    folder = Path(args.dir)
    if not folder.is_dir():
        raise _cli_error(f"no such campaign folder: {folder}")
    try:
        return _run(folder, "resume", args, backend=args.backend)
    except NoGpuError as exc:
        from evolution.db import CampaignDB
        from experiments.campaign import measured_count
        with CampaignDB(folder / "campaign.db", readonly=True) as db:
            measured = measured_count(db)
        hint = (f"{measured} measurement(s) of this campaign were made on a GPU: resume it on a machine with one"
                if measured else f"continue it on the simulator with `evogemm resume {folder} --backend simulator`")
        raise _cli_error(f"{exc}; {hint}") from exc


def cmd_extend(args: argparse.Namespace) -> int:
    from experiments.campaign import CampaignRefused, extend_campaign
    folder = Path(args.dir)
    if not folder.is_dir():
        raise _cli_error(f"no such campaign folder: {folder}")
    _at_least("--evaluations", args.evaluations)
    _positive("--wall-seconds", args.wall_seconds)
    _positive("--gpu-seconds", args.gpu_seconds)
    if args.evaluations is None and args.wall_seconds is None and args.gpu_seconds is None:
        raise _cli_error("nothing to extend: give --evaluations N, --wall-seconds S and/or --gpu-seconds S")
    try:
        entry = extend_campaign(folder, evaluations=args.evaluations, wall_seconds=args.wall_seconds,
                                gpu_seconds=args.gpu_seconds)
    except CampaignRefused as exc:
        raise _cli_error(str(exc)) from exc
    print(f"{folder}: {entry['what']} (recorded in campaign.db and campaign.yaml)")
    if entry["pending"]:
        print(f"shapes not started yet take the new budget: {', '.join(entry['pending'])}")
    for shape, grant in entry["grants"].items():
        print(f"{shape} goes on for " + ", ".join(f"{v:g} more {k.replace('_', ' ')}" for k, v in grant.items()))
    for shape, (used, share) in (entry.get("wall_spent") or {}).items():
        print(f"warning: {shape} has spent its wall share ({used:.0f} of {share:.0f} s): it stops at once "
              "unless --wall-seconds is raised too")
    print(f"continue with: evogemm resume {folder}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from evolution.db import CampaignDB
    from experiments.report import campaign_status, print_status
    path = Path(args.dir) / "campaign.db"
    if not path.exists():
        raise _cli_error(f"{args.dir} is not a campaign folder (no campaign.db)")
    db = CampaignDB(path, readonly=True)
    try:
        status = campaign_status(db)
    finally:
        db.close()
    if args.json:
        print(json.dumps(status, indent=1, default=str))
    else:
        print_status(status, _console())
    return 0


def cmd_ablate(args: argparse.Namespace) -> int:
    from experiments.ablation import run_ablation, variant_overrides
    _at_least("--seeds", args.seeds)
    _at_least("--jobs", args.jobs)
    _at_least("--budget", args.budget)
    base = load_campaign_file(args.campaign)  # validate first, then with the RL variant's policy as the runs set it
    check_runs_something(args.campaign, base)  # (a bad --policy is the flag's error, not the file's)
    load_campaign_file(args.campaign, variant_overrides("evolution_rl", args.policy, base.selection.policy),
                       {"selection.policy": "--policy"})
    strategies = list(dict.fromkeys(s for s in args.strategies.split(",") if s)) if args.strategies else None
    result = run_ablation(args.campaign, seeds=args.seeds, out_dir=args.out, policy=args.policy, jobs=args.jobs,
                          budget=args.budget, strategies=strategies, console=_console())
    print(result["markdown"])
    print(f"wrote {Path(args.out) / 'ablation.json'} and {Path(args.out) / 'ablation.md'}")
    return 0


def register(sub: Any) -> None:
    from experiments.cli import add_command
    p = add_command(sub, "validate", "check a campaign YAML file and print what it would run (nothing runs)")
    p.add_argument("campaign", help="campaign YAML file")
    p.add_argument("--resolved", action="store_true", help="also print the resolved campaign")
    p.set_defaults(func=cmd_validate)

    p = add_command(sub, "run", "run a campaign (creates its folder)")
    p.add_argument("campaign", help="campaign YAML file")
    p.add_argument("--out", help="campaign folder (default: output_dir of the file, else runs/<name>)")
    p.add_argument("--backend", help="evaluator backend: auto, gpu, simulator, ray (overrides the file)")
    p.add_argument("--seed", type=int, help="campaign seed (overrides the file)")
    p.add_argument("--no-live", action="store_true", help="no live table; print one line per finished shape")
    p.set_defaults(func=cmd_run)

    p = add_command(sub, "resume", "continue a stopped or killed campaign where it stopped")
    p.add_argument("dir", help="campaign folder")
    p.add_argument("--backend", choices=("auto", "gpu", "simulator"),
                   help="evaluator backend (default: the one the campaign recorded); another one is taken only "
                        "while nothing has been measured")
    p.add_argument("--no-live", action="store_true", help="no live table; print one line per finished shape")
    p.set_defaults(func=cmd_resume)

    p = add_command(sub, "extend", "raise a campaign's budget; the next `evogemm resume` goes on with it")
    p.add_argument("dir", help="campaign folder")
    p.add_argument("--evaluations", type=int, metavar="N",
                   help="N more evaluations per shape (budget.evaluations_per_shape; with only "
                        "budget.total_evaluations set, that total grows by N)")
    p.add_argument("--wall-seconds", type=float, metavar="S", help="raise budget.wall_seconds by S")
    p.add_argument("--gpu-seconds", type=float, metavar="S", help="raise budget.gpu_seconds by S")
    p.set_defaults(func=cmd_extend)

    p = add_command(sub, "status", "per shape: best so far vs each baseline, evaluations, failures, operator weights")
    p.add_argument("dir", help="campaign folder")
    p.add_argument("--json", action="store_true", help="print the status as JSON")
    p.set_defaults(func=cmd_status)

    p = add_command(sub, "ablate", "compare RL-weighted evolution, uniform evolution, TPE and random search under one "
                                "budget, over several seeds, on the simulator")
    p.add_argument("campaign", help="campaign YAML file (its shapes and budget)")
    p.add_argument("--seeds", type=int, default=5, help="seeds per strategy (default 5, at least 1)")
    p.add_argument("--out", required=True, help="folder for the runs, ablation.json and ablation.md")
    p.add_argument("--policy", default="thompson", help="policy of the RL-weighted variant (default thompson)")
    p.add_argument("--budget", type=int, help="evaluations per shape (overrides the file)")
    p.add_argument("--jobs", type=int, default=1, help="runs in parallel (processes)")
    p.add_argument("--strategies", help="comma-separated subset of: evolution_rl, evolution_uniform, optuna_tpe, "
                                        "random")
    p.set_defaults(func=cmd_ablate)
