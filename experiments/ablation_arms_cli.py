"""`evogemm ablate-arms`: the command line of the arm ablation (experiments/ablation_arms.py), which
`python -m experiments.ablation_arms` runs too."""

from __future__ import annotations

import argparse
import json
from typing import Any, Sequence

from . import ablation_arms
from .ablation_arms import CAMPAIGN_POLICY, SHAPES, RlSelection, campaign_dict, run_arms_ablation
from .scripted_models import BROKEN_KINDS


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seeds", type=int, default=5, help="seeds (default 5)")
    p.add_argument("--out", required=True, help="folder for the runs, ablation-arms.json and ablation-arms.md")
    p.add_argument("--budget", type=int, default=96, help="evaluations per shape (default 96)")
    p.add_argument("--shapes", help=f"comma-separated MxNxK (default {','.join(SHAPES)})")
    p.add_argument("--jobs", type=int, default=1, help="runs in parallel (processes)")
    p.add_argument("--base-seed", type=int, default=0)
    p.add_argument("--candidates", type=int, default=4, help="moves the good model ranks (default 4)")
    p.add_argument("--jumps", type=int, default=0,
                   help="genomes drawn from the whole space that the good model also ranks, as an expert who "
                        "proposes new regions and not only steps from the parent (default 0)")
    p.add_argument("--no-param-mutate", action="store_true", help="only the three LLM arms")
    p.add_argument("--broken", choices=sorted(BROKEN_KINDS), default="garbage",
                   help="the bad arm: garbage (answers llm_param refuses: a call, no evaluation; default), "
                        "misleading (valid moves, the slowest of --candidates: each costs an evaluation) or both "
                        "(two bad arms)")
    p.add_argument("--seeded", action="store_true", help="seed the first population as campaigns do (hand-picked "
                                                         "genomes, shapes solved before); default: random samples")
    p.add_argument("--policy", default=CAMPAIGN_POLICY,
                   help=f"policy of the rl variant: ucb, thompson, softmax_pg or an import path (default {CAMPAIGN_POLICY})")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="a parameter of that policy, repeatable (e.g. c=1.0, sigma=0.3, gamma=0.9, lr=0.1); "
                        "none given: quickstart's (sigma 0.3) for thompson, the policy's defaults otherwise")
    p.add_argument("--reward", default="success", help="reward of the rl variant: success, log_ratio or improvement "
                                                       "(default success)")
    p.add_argument("--failure-reward", type=float, default=-1.0, help="reward of a failure (default -1)")
    p.add_argument("--parent-param", action="append", default=[], metavar="KEY=VALUE",
                   help="a parameter of the parent selection (fitness_novelty: fitness_weight, novelty_weight, "
                        "temperature), repeatable; for both variants alike (default: its defaults)")
    p.add_argument("--population", action="append", default=[], metavar="KEY=VALUE",
                   help="a population setting for both variants, repeatable: size, islands, offspring, "
                        "migration_interval, migration_size, elite (default: quickstart's 12, 2, 6, 3, 2, 2)")
    p.add_argument("--warm-start-weight", type=float, default=0.5,
                   help="weight of the previous shape's policy state at each new shape (default 0.5; 0 = none)")


def parse_params(items: Sequence[str], flag: str = "--param") -> "dict[str, Any] | None":
    """KEY=VALUE strings -> {key: number or JSON value}; no items -> None (the policy's usual ones). `flag`: the
    option they came from, for the error message."""
    if not items:
        return None
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"ablation: {flag} wants KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            raise ValueError(f"ablation: {flag} {key.strip()}: {value!r} is not a number (or JSON value)") from None
    return out


def _run_args(args: argparse.Namespace) -> int:
    from rich.console import Console
    from experiments.campaign_cli import unsupported_shapes
    from experiments.cli import CliError
    from experiments.schema import parse_campaign
    shapes = args.shapes.split(",") if args.shapes else SHAPES
    # shapes its campaign (the default family) cannot run: both variants would skip them, measuring nothing
    skipped = unsupported_shapes(parse_campaign(campaign_dict(0, "uniform", 1, shapes)))
    if skipped:
        raise CliError("ablate-arms: its campaign cannot run " + " | ".join(f"{k}: {v}" for k, v in skipped.items())
                       + "; give shapes it runs")
    rl = RlSelection(args.policy, parse_params(args.param), args.reward, args.failure_reward, args.warm_start_weight)
    result = run_arms_ablation(args.seeds, args.out, args.budget, shapes, args.jobs, args.base_seed,
                               args.candidates, not args.no_param_mutate, args.seeded, console=Console(), rl=rl,
                               broken=args.broken, parents=parse_params(args.parent_param, "--parent-param"),
                               jumps=args.jumps, population=parse_params(args.population, "--population"))
    print(result["markdown"])
    return 0


def register(sub: Any) -> None:
    from experiments.cli import add_command
    p = add_command(sub, "ablate-arms", "RL-weighted vs uniform operator choice with LLM arms of known quality "
                                        "(scripted good, mediocre and broken or misleading models), on the simulator")
    _add_arguments(p)
    p.set_defaults(func=_run_args)


def main(argv: "Sequence[str] | None" = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.ablation_arms", description=ablation_arms.__doc__.split("\n\n")[0])
    _add_arguments(p)
    return _run_args(p.parse_args(argv))
