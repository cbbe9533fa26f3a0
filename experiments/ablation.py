"""Ablation: the same campaign (shapes, budget, population) run by four strategies over several
seeds on the simulator, compared on what each found and how fast.

Strategies:
  evolution_rl       evolution, operators chosen by the RL policy (`--policy`, default thompson)
  evolution_uniform  evolution, operators chosen uniformly at random (same operators, same priors ignored)
  optuna_tpe         Optuna's TPE sampler over the same parameter space
  random             uniform random valid genomes

For each run and shape: the best speedup over the best vendor baseline, and the number of
evaluations until the best-so-far reached 95% of that run's final best (speedup >= 0.95 x final)
and 95% of the best any run found for the shape. Per strategy: the geometric mean over shapes of
the best speedup (mean +- std over seeds), and those evaluation counts (mean over shapes and
seeds). Warm starts and seed_from are switched off so every run starts from nothing but its seed,
and the hand-picked seeds keep their file order and their own knobs (population.seed_order: file,
fit_knobs: false): ordered or fitted by the simulator's own model they would hand every strategy the
simulator's best genomes at once. No one-wave seeds either (population.wave_seeds: 0), as when the
recorded ablations ran.

    evogemm ablate experiments/campaigns/quickstart.yaml --seeds 5 --out runs/ablation
    python -m experiments.ablation CAMPAIGN.yaml --seeds 5 --out DIR
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Mapping, Sequence

STRATEGIES = ("evolution_rl", "evolution_uniform", "optuna_tpe", "random")


def variant_overrides(strategy: str, policy: str, campaign_policy: "str | None" = None) -> dict[str, Any]:
    """Overrides that turn the campaign into one strategy. Policy parameters of the campaign are kept
    only when the RL variant uses the campaign's own policy (they would not fit another)."""
    if strategy == "evolution_rl":
        out: dict[str, Any] = {"strategy": "evolution", "selection.policy": policy}
        if campaign_policy is not None and policy != campaign_policy:
            out["selection.params"] = {}
        return out
    if strategy == "evolution_uniform":
        return {"strategy": "evolution", "selection.policy": "uniform", "selection.params": {}}
    if strategy == "optuna_tpe":
        return {"strategy": "optuna_tpe"}
    if strategy == "random":
        return {"strategy": "random"}
    raise ValueError(f"unknown ablation strategy {strategy!r}; known: {', '.join(STRATEGIES)}")


def refuse_model_operators(config: Any) -> None:
    """An ablation runs on the simulator, whose model is the evaluator: an operator that ranks its
    children by that model (`uses_model`, e.g. model_mutate) would be an oracle for the evolution
    variants that Optuna and random search do not get. Such a campaign is refused, with the reason."""
    from evolution.operators import operator_registry
    registry = operator_registry()   # built-in names, and import paths of plug-ins
    for spec in config.operators:
        try:
            factory = registry.resolve(spec.name)
        except Exception:  # noqa: BLE001 - an unknown operator fails later, with its own message
            continue
        if getattr(factory, "uses_model", False):
            raise ValueError(f"operator {spec.name!r} ranks its children by the simulator's model, which is "
                             "the evaluator of an ablation (an oracle the other strategies do not get); "
                             "leave it out of the campaign for the ablation")


def run_one(campaign: str, strategy: str, seed: int, policy: str, folder: str, budget: "int | None",
            extra: "Mapping[str, Any] | None" = None) -> dict:
    """Run one (strategy, seed) on the simulator into `folder`; return its per-shape trajectories.
    `extra`: more dotted-key overrides of the campaign (e.g. {"selection.reward": "improvement"})."""
    from evolution.budget import refuse_unending
    from experiments.campaign import create_or_continue, run_campaign
    from experiments.progress import SilentProgress
    from experiments.schema import load_campaign
    base = load_campaign(campaign)
    # the simulator takes none of a GPU campaign's evaluator options (log_dir, jobs, ...)
    overrides: dict[str, Any] = {"seed": seed, "evaluator.backend": "simulator", "evaluator.options": {},
                                 "evaluator.timing": {}, "selection.warm_start": None,
                                 "seed_from": [], "population.seed_order": "file",
                                 "population.fit_knobs": False, "population.wave_seeds": 0,
                                 **variant_overrides(strategy, policy, base.selection.policy)}
    if budget is not None:
        overrides["budget"] = {"evaluations_per_shape": budget}
    overrides.update(extra or {})
    config = load_campaign(campaign, overrides)
    refuse_model_operators(config)
    refuse_unending(config, True)   # before the run's folder is made: a refused run leaves nothing behind
    out = Path(folder)
    create_or_continue(config, out, source=campaign)
    t0 = time.monotonic()
    run_campaign(out, progress=SilentProgress(), mode="run", plots=False)  # figures would cost more than the run
    seconds = time.monotonic() - t0
    return {"strategy": strategy, "seed": seed, "folder": str(out), "seconds": seconds,
            "shapes": trajectories(out)}


def trajectories(folder: "str | Path") -> dict[str, dict[str, Any]]:
    """Per shape: best vendor time and the best-so-far time after each evaluation, in order."""
    from evolution.db import CampaignDB
    db = CampaignDB(Path(folder) / "campaign.db", readonly=True)
    try:
        out = {}
        for row in db.shape_rows():
            name = row["problem"]
            bs = db.baselines(name)
            best = math.inf
            curve = []
            for ev in db.evaluation_rows(name):
                if ev["status"] == "ok" and ev["device_us"]:
                    best = min(best, ev["device_us"])
                curve.append(best if math.isfinite(best) else None)
            out[name] = {"vendor_us": bs.best_vendor_us if bs else None, "curve": curve}
        return out
    finally:
        db.close()


def evals_to_reach(curve: Sequence["float | None"], target_us: float) -> "int | None":
    for i, t in enumerate(curve):
        if t is not None and t <= target_us:
            return i + 1
    return None


def summarise(runs: Sequence[Mapping[str, Any]], strategies: Sequence[str]) -> dict[str, Any]:
    shapes = sorted({s for r in runs for s in r["shapes"]})
    best_known = {}
    for s in shapes:
        times = [r["shapes"][s]["curve"][-1] for r in runs if s in r["shapes"] and r["shapes"][s]["curve"]
                 and r["shapes"][s]["curve"][-1] is not None]
        best_known[s] = min(times) if times else None
    table = {}
    for strat in strategies:
        mine = [r for r in runs if r["strategy"] == strat]
        geos, own95, known95, reached, total = [], [], [], 0, 0
        seeds_in_order = []
        per_shape: dict[str, list[float]] = {s: [] for s in shapes}
        for r in mine:
            logs = []
            for s in shapes:
                d = r["shapes"].get(s)
                if not d or not d["curve"] or d["curve"][-1] is None or not d["vendor_us"]:
                    continue
                final = d["curve"][-1]
                sp = d["vendor_us"] / final
                logs.append(math.log(sp))
                per_shape[s].append(sp)
                own95.append(evals_to_reach(d["curve"], final / 0.95) or len(d["curve"]))
                total += 1
                if best_known[s]:
                    k = evals_to_reach(d["curve"], best_known[s] / 0.95)
                    if k is not None:
                        reached += 1
                        known95.append(k)
            if logs:
                geos.append(math.exp(sum(logs) / len(logs)))
                seeds_in_order.append(r["seed"])
        table[strat] = {
            "runs": len(mine),
            "geomean_speedup_mean": statistics.fmean(geos) if geos else None,
            "geomean_speedup_std": statistics.stdev(geos) if len(geos) > 1 else 0.0,
            "geomean_per_seed": geos,
            "seeds": seeds_in_order,
            "evals_to_95_own_mean": statistics.fmean(own95) if own95 else None,
            "evals_to_95_best_known_mean": statistics.fmean(known95) if known95 else None,
            "reached_95_best_known": f"{reached}/{total}",
            "per_shape_mean_speedup": {s: statistics.fmean(v) for s, v in per_shape.items() if v},
            "seconds_mean": statistics.fmean([r["seconds"] for r in mine]) if mine else None,
        }
    base = table.get("evolution_uniform")
    if base:
        ref = dict(zip(base["seeds"], base["geomean_per_seed"]))
        for strat, row in table.items():
            diffs = [g - ref[sd] for sd, g in zip(row["seeds"], row["geomean_per_seed"]) if sd in ref]
            row["vs_uniform_paired"] = {
                "mean": statistics.fmean(diffs) if diffs else None,
                "se": statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else None,
                "wins": sum(d > 0 for d in diffs), "n": len(diffs)}
    return {"shapes": shapes, "best_known_us": best_known, "table": table}


def render_markdown(summary: Mapping[str, Any], meta: Mapping[str, Any]) -> str:
    lines = ["# Ablation on the simulator", "",
             "> **Simulated.** Every time and speedup here comes from the analytic simulator "
             "(evaluator/simulator.py), not from a GPU.", "",
             f"- campaign: `{meta['campaign']}`; shapes: {', '.join(summary['shapes'])}",
             f"- budget: {meta['budget']} evaluations per shape; seeds: {', '.join(map(str, meta['seeds']))}; "
             f"RL policy: `{meta['policy']}`",
             f"- evolution_rl selection: {meta.get('rl_selection', '-')}; evolution_uniform: the same operators "
             "and priors, drawn in proportion to their priors",
             f"- population: {meta.get('population', '-')}", f"- operators: {meta.get('operators', '-')}", "",
             "| strategy | geomean best speedup vs best vendor, mean ± std over seeds | paired vs "
             "evolution_uniform: mean ± s.e. (seeds better) | evals to 95% of own final best | evals to 95% of best "
             "known (reached) | s/run |",
             "|---|---|---|---|---|---|"]
    for strat, row in summary["table"].items():
        g = row["geomean_speedup_mean"]
        gs = f"{g:.4f} ± {row['geomean_speedup_std']:.4f}" if g else "-"
        own = f"{row['evals_to_95_own_mean']:.1f}" if row["evals_to_95_own_mean"] else "-"
        kn = f"{row['evals_to_95_best_known_mean']:.1f}" if row["evals_to_95_best_known_mean"] else "-"
        pv = row.get("vs_uniform_paired")
        if pv and pv["mean"] is not None and strat != "evolution_uniform":
            paired = f"{pv['mean']:+.4f} ± {pv['se'] or 0:.4f} ({pv['wins']}/{pv['n']})"
        else:
            paired = "-"
        lines.append(f"| {strat} | {gs} | {paired} | {own} | {kn} ({row['reached_95_best_known']}) | "
                     f"{row['seconds_mean']:.1f} |")
    lines += ["", "Per shape, mean best speedup over seeds:", "",
              "| shape | " + " | ".join(summary["table"]) + " |", "|---|" + "---|" * len(summary["table"])]
    for s in summary["shapes"]:
        cells = []
        for row in summary["table"].values():
            v = row["per_shape_mean_speedup"].get(s)
            cells.append(f"{v:.4f}" if v else "-")
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    lines += ["", "Per-seed geomeans:", ""]
    for strat, row in summary["table"].items():
        lines.append(f"- {strat}: " + ", ".join(f"{g:.4f}" for g in row["geomean_per_seed"]))
    return "\n".join(lines) + "\n"


def run_ablation(campaign: str, seeds: int = 5, out_dir: "str | Path" = "runs/ablation", policy: str = "thompson",
                 jobs: int = 1, budget: "int | None" = None, strategies: "Sequence[str] | None" = None,
                 console: Any = None, base_seed: int = 0,
                 overrides: "Mapping[str, Any] | None" = None) -> dict[str, Any]:
    from experiments.schema import load_campaign
    for name, value in (("seeds", seeds), ("jobs", jobs), ("budget", budget)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(f"ablation: {name} must be a whole number >= 1, got {value!r}")
    strategies = list(strategies or STRATEGIES)
    for s in strategies:
        variant_overrides(s, policy)
    refuse_model_operators(load_campaign(campaign))  # before any run starts
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seed_list = [base_seed + i for i in range(seeds)]
    tasks = [(campaign, strat, seed, policy, str(out / "runs" / f"{strat}-s{seed}"), budget, dict(overrides or {}))
             for seed in seed_list for strat in strategies]
    runs: list[dict] = []
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for r in pool.map(_star, tasks):
                runs.append(r)
                _say(console, r)
    else:
        for t in tasks:
            r = run_one(*t)
            runs.append(r)
            _say(console, r)
    config = load_campaign(campaign)
    eff_budget = budget if budget is not None else (config.budget.evaluations_per_shape or config.budget.total_evaluations)
    pop = config.population
    rl = load_campaign(campaign, {**variant_overrides("evolution_rl", policy, config.selection.policy),
                                  **dict(overrides or {})}).selection
    meta = {
            "rl_selection": f"policy {rl.policy}, reward {rl.reward}, params {rl.params or '{}'}, "
                            f"failure_reward {rl.failure_reward}","campaign": campaign, "seeds": seed_list, "policy": policy, "budget": eff_budget,
            "overrides": dict(overrides or {}),
            "population": f"size {pop.size}, islands {pop.islands}, offspring/island {pop.offspring_per_island}",
            "operators": ", ".join(op.arm_name for op in config.operators), "strategies": strategies}
    summary = summarise(runs, strategies)
    markdown = render_markdown(summary, meta)
    (out / "ablation.json").write_text(json.dumps({"meta": meta, "summary": summary, "runs": runs}, indent=1) + "\n")
    (out / "ablation.md").write_text(markdown)
    return {"meta": meta, "summary": summary, "runs": runs, "markdown": markdown}


def _star(args: tuple) -> dict:
    return run_one(*args)


def _say(console: Any, r: Mapping[str, Any]) -> None:
    if console is None:
        return
    sps = [d["vendor_us"] / d["curve"][-1] for d in r["shapes"].values()
           if d["curve"] and d["curve"][-1] and d["vendor_us"]]
    geo = math.exp(sum(map(math.log, sps)) / len(sps)) if sps else float("nan")
    console.print(f"{r['strategy']:>18} seed {r['seed']}: geomean {geo:.4f}x ({r['seconds']:.1f} s)", highlight=False)


def main(argv: "Sequence[str] | None" = None) -> int:
    from rich.console import Console
    p = argparse.ArgumentParser(prog="python -m experiments.ablation", description=__doc__.split("\n\n")[0])
    p.add_argument("campaign")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--out", required=True)
    p.add_argument("--policy", default="thompson")
    p.add_argument("--budget", type=int)
    p.add_argument("--jobs", type=int, default=1)
    args = p.parse_args(argv)
    for name in ("seeds", "jobs", "budget"):
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name} must be at least 1, got {value}")
    result = run_ablation(args.campaign, args.seeds, args.out, args.policy, args.jobs, args.budget,
                          console=Console())
    print(result["markdown"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
