"""`evogemm run | resume | status | validate | ablate`: campaign commands of the CLI.

    evogemm validate CAMPAIGN.yaml                 check a campaign file; print what it would run
    evogemm run CAMPAIGN.yaml [--out DIR] [--backend auto|gpu|simulator] [--seed N]
    evogemm resume DIR                             continue a stopped or killed campaign
    evogemm status DIR [--json]                    per shape: best vs each baseline, failures, weights
    evogemm ablate CAMPAIGN.yaml --seeds 5 --out DIR   strategies compared on the simulator

See evolution/campaign.py for the layout of a campaign folder.
"""

from __future__ import annotations

import argparse
import json
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


def _load(path: str, overrides: "dict[str, Any] | None" = None) -> Any:
    from experiments.schema import CampaignError, load_campaign
    try:
        return load_campaign(path, overrides)
    except CampaignError as exc:
        raise _cli_error(str(exc)) from exc


def cmd_validate(args: argparse.Namespace) -> int:
    config = _load(args.campaign)
    from experiments.schema import dump_campaign
    b = config.budget
    limits = ", ".join(f"{k}={v}" for k, v in b.model_dump().items() if v is not None)
    print(f"{args.campaign}: OK: campaign {config.name!r}, seed {config.seed}, {len(config.problems)} shapes, "
          f"strategy {config.strategy.name}, policy {config.selection.policy}, "
          f"operators {', '.join(op.arm_name for op in config.operators)}; budget {limits}; "
          f"backend {config.evaluator.backend}")
    print("shapes: " + " ".join(p.name for p in config.problems))
    if args.resolved:
        print(dump_campaign(config, args.campaign))
    return 0


def _run(folder: Path, mode: str, args: argparse.Namespace) -> int:
    from evaluator.factory import NoGpuError
    from evolution.campaign import NotACampaign, run_campaign
    from evolution.db import ReplayMismatch
    from evolution.progress import LiveProgress
    from evolution.report import campaign_status, print_status
    from evolution.db import CampaignDB
    console = _console()
    live = False if getattr(args, "no_live", False) else None
    view = LiveProgress(console=console, title=f"evogemm {folder.name}", live=live)
    try:
        result = run_campaign(folder, console=console, mode=mode, progress=view)
    except NotACampaign as exc:
        raise _cli_error(str(exc)) from exc
    except NoGpuError as exc:
        raise _cli_error(f"{exc}. Run with --backend simulator to use the analytic simulator.") from exc
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
        console.print(f"evaluator: {result.evaluator}; {where}", highlight=False)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from evolution.campaign import CampaignExists, create_campaign, default_output_dir
    overrides: dict[str, Any] = {}
    if args.seed is not None:
        overrides["seed"] = args.seed
    if args.backend is not None:
        overrides["evaluator.backend"] = args.backend
    config = _load(args.campaign, overrides)
    out = Path(args.out) if args.out else default_output_dir(config)
    try:
        create_campaign(config, out, source=str(Path(args.campaign).resolve()))
    except CampaignExists as exc:
        raise _cli_error(str(exc)) from exc
    print(f"campaign {config.name!r}: {len(config.problems)} shapes, seed {config.seed}, backend "
          f"{config.evaluator.backend}; folder {out}", flush=True)
    return _run(out, "run", args)


def cmd_resume(args: argparse.Namespace) -> int:
    folder = Path(args.dir)
    if not folder.is_dir():
        raise _cli_error(f"no such campaign folder: {folder}")
    print(f"resuming {folder}", flush=True)
    return _run(folder, "resume", args)


def cmd_status(args: argparse.Namespace) -> int:
    from evolution.db import CampaignDB
    from evolution.report import campaign_status, print_status
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
    from experiments.ablation import run_ablation
    _load(args.campaign)  # validate first
    strategies = args.strategies.split(",") if args.strategies else None
    result = run_ablation(args.campaign, seeds=args.seeds, out_dir=args.out, policy=args.policy, jobs=args.jobs,
                          budget=args.budget, strategies=strategies, console=_console())
    print(result["markdown"])
    print(f"wrote {Path(args.out) / 'ablation.json'} and {Path(args.out) / 'ablation.md'}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("validate", help="check a campaign YAML file (nothing runs)")
    p.add_argument("campaign", help="campaign YAML file")
    p.add_argument("--resolved", action="store_true", help="also print the resolved campaign")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("run", help="run a campaign (creates its folder)")
    p.add_argument("campaign", help="campaign YAML file")
    p.add_argument("--out", help="campaign folder (default: output_dir of the file, else runs/<name>)")
    p.add_argument("--backend", help="evaluator backend: auto, gpu, simulator (overrides the file)")
    p.add_argument("--seed", type=int, help="campaign seed (overrides the file)")
    p.add_argument("--no-live", action="store_true", help="no live table; print one line per finished shape")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("resume", help="continue a stopped or killed campaign where it stopped")
    p.add_argument("dir", help="campaign folder")
    p.add_argument("--no-live", action="store_true", help="no live table; print one line per finished shape")
    p.set_defaults(func=cmd_resume)

    p = sub.add_parser("status", help="per shape: best so far vs each baseline, evaluations, failures, weights")
    p.add_argument("dir", help="campaign folder")
    p.add_argument("--json", action="store_true", help="print the status as JSON")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("ablate", help="compare RL-weighted evolution, uniform evolution, TPE and random search "
                                      "under one budget, over several seeds, on the simulator")
    p.add_argument("campaign", help="campaign YAML file (its shapes and budget)")
    p.add_argument("--seeds", type=int, default=5, help="seeds per strategy (default 5)")
    p.add_argument("--out", required=True, help="folder for the runs, ablation.json and ablation.md")
    p.add_argument("--policy", default="thompson", help="policy of the RL-weighted variant (default thompson)")
    p.add_argument("--budget", type=int, help="evaluations per shape (overrides the file)")
    p.add_argument("--jobs", type=int, default=1, help="runs in parallel (processes)")
    p.add_argument("--strategies", help="comma-separated subset of: evolution_rl, evolution_uniform, optuna_tpe, "
                                        "random")
    p.set_defaults(func=cmd_ablate)
