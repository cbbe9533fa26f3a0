"""Ablation with LLM arms of known quality: does the RL-weighted operator policy find what uniform
operator choice finds, with fewer evaluations, when the arms are (llm_param, good model),
(llm_param, mediocre model), (llm_param, broken model) and param_mutate?

The models are `ScriptedModel` (experiments/scripted_models.py), an in-process LLM provider (named by import path
`experiments.ablation_arms:ScriptedModel`) that reads the llm_param prompt (family, shape, parent
genome) and answers in the operator's JSON:

  good      the best of `candidates` random valid moves of the parent (space.mutate, one to three
            parameters), ranked by the simulator's noise-free model: a model that knows the cost model
            but explores little
  mediocre  one random valid move (what param_mutate does, as an LLM answer)
  broken    garbage: prose, truncated JSON, unknown parameters, values outside the choices, empty moves
            (refused by llm_param: it costs a call, no evaluation); the default third arm
  misleading
            the slowest of `candidates` random valid moves (accepted: it costs an evaluation); the
            third arm instead of `broken` with `--broken misleading`

Each answer is drawn from a generator seeded by (the campaign seed, the model, the request, how
many times it was made before), so a campaign is a deterministic function of its seed.

The same campaign runs with the campaign's bandit (`rl`: by default Thompson sampling, reward
`success`, sigma 0.3, failure_reward -1, warm-start weight 0.5, as in
experiments/campaigns/quickstart.yaml; `--policy`, `--param`, `--reward`, `--failure-reward` and
`--warm-start-weight` pick another, see `RlSelection`) and with `uniform` operator choice (equal
priors; it never changes), over several seeds and shapes on the simulator. Metric, per seed and
shape: the evaluations the rl run needed to reach the uniform run's final best time (same seed), as
a fraction of the budget (a run that never reaches it counts as 1.0 and is flagged); also how each
policy split its operator calls (pulls) and evaluated children over the arms.

    evogemm ablate-arms --seeds 5 --out runs/ablation-arms --jobs 2
    evogemm ablate-arms --seeds 5 --out runs/arms-misleading --jobs 2 --broken misleading
    evogemm ablate-arms --seeds 5 --out runs/arms-steady --jobs 2 --candidates 16 --population offspring=1 --population size=4
    evogemm ablate-arms --seeds 5 --out runs/arms-ucb --policy ucb --param c=1.0 --reward success
    python -m experiments.ablation_arms --seeds 5 --out runs/ablation-arms
"""

from __future__ import annotations

import json
import math
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .scripted_models import ScriptedModel, arm_qualities, read_prompt

__all__ = ["ScriptedModel", "read_prompt", "run_arms_ablation"]  # PROVIDER names ScriptedModel here

SHAPES = ("1024x1024x1024", "128x4096x4096", "2048x2048x2048", "4096x1024x1024")
VARIANTS = ("rl", "uniform")
UNIFORM = {"policy": "uniform", "params": {}, "reward": "success", "failure_reward": -1.0, "warm_start_weight": 0.5}
CAMPAIGN_POLICY, CAMPAIGN_PARAMS = "thompson", {"sigma": 0.3}   # experiments/campaigns/quickstart.yaml
PROVIDER = "experiments.ablation_arms:ScriptedModel"


@dataclass(frozen=True)
class RlSelection:
    """The `rl` variant's operator selection (the `uniform` variant's never changes). The defaults
    are quickstart's; `params` None means quickstart's (sigma 0.3) for its policy, thompson, and the
    policy's own defaults for any other (quickstart's would not fit it)."""

    policy: str = CAMPAIGN_POLICY
    params: "Mapping[str, Any] | None" = None
    reward: str = "success"
    failure_reward: float = -1.0
    warm_start_weight: float = 0.5
    resolved: "dict[str, Any]" = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from evolution.bandit import make_policy
        from evolution.evolve import REWARDS
        params = dict(CAMPAIGN_PARAMS if self.policy == CAMPAIGN_POLICY else {}) if self.params is None \
            else dict(self.params)
        if self.policy == "uniform":
            raise ValueError("ablation: the rl variant needs a learning policy (uniform is the baseline)")
        make_policy(self.policy, ["a", "b"], **params)            # unknown policy or parameter: ValueError
        if self.reward not in REWARDS:
            raise ValueError(f"ablation: reward must be one of {', '.join(REWARDS)}, got {self.reward!r}")
        if not self.failure_reward <= 0:
            raise ValueError(f"ablation: failure_reward must be <= 0, got {self.failure_reward!r}")
        if not 0 <= self.warm_start_weight <= 1:
            raise ValueError(f"ablation: warm_start_weight must be in [0, 1], got {self.warm_start_weight!r}")
        object.__setattr__(self, "resolved", {"policy": self.policy, "params": params, "reward": self.reward,
                                              "failure_reward": float(self.failure_reward),
                                              "warm_start_weight": float(self.warm_start_weight)})

    def label(self) -> str:
        r = self.resolved
        params = ", ".join(f"{k} {v}" for k, v in sorted(r["params"].items()))
        return (f"{r['policy']}{f' ({params})' if params else ''}, reward {r['reward']}, failure_reward "
                f"{r['failure_reward']:g}, warm-start weight {r['warm_start_weight']:g}")


POPULATION = {"size": 12, "islands": 2, "offspring": 6, "migration_interval": 3, "migration_size": 2, "elite": 2}


def check_population(population: "Mapping[str, Any] | None") -> dict[str, Any]:
    """The ablation's population (quickstart's, POPULATION) with `population`'s keys changed; a key it
    does not have, or a value that is not a whole number >= 1, is refused before any run."""
    out = dict(POPULATION)
    for key, value in (population or {}).items():
        if key not in POPULATION:
            raise ValueError(f"ablation: --population {key}: not a population setting; known: {', '.join(POPULATION)}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"ablation: --population {key} must be a whole number >= 1, got {value!r}")
        out[key] = value
    return out


def campaign_dict(seed: int, variant: str, budget: int, shapes: Sequence[str], candidates: int = 4,
                  param_mutate: bool = True, seeded: bool = False,
                  rl: "RlSelection | None" = None, broken: str = "garbage",
                  parents: "Mapping[str, Any] | None" = None, jumps: int = 0,
                  population: "Mapping[str, Any] | None" = None) -> dict[str, Any]:
    """The ablation's campaign: quickstart's population and reward, three scripted LLM arms (good,
    mediocre and the bad kind `broken` names: garbage or misleading) and param_mutate, all priors
    equal, on the simulator without noise. Unless `seeded`, the first population is all random
    samples (no hand-picked genomes, no seeds from the shapes solved before), so that what a run
    finds comes from its operators and not from a seed that is already the best genome of the
    shape. `rl`: the rl variant's selection (default: quickstart's). `parents`: parameters of the
    parent selection (fitness_novelty), for both variants alike (default: its own defaults). `jumps`:
    genomes from the whole space the good model weighs besides its `candidates` moves (0: none).
    `population`: population settings that differ from quickstart's (`check_population`)."""
    if variant not in VARIANTS:
        raise ValueError(f"ablation: unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
    sel = (rl or RlSelection()).resolved if variant == "rl" else UNIFORM
    qualities = arm_qualities(broken)
    operators = [{"name": "llm_param", "model": q} for q in qualities]
    if param_mutate:
        operators.append({"name": "param_mutate"})
    return {"name": f"arms-{variant}-s{seed}", "seed": seed, "shapes": list(shapes),
            "budget": {"evaluations_per_shape": budget},
            "population": {**check_population(population), "seed_fraction": 0.5 if seeded else 0.0,
                           "fit_knobs": False,    # the simulator's own model must not fit the seeds
                           "wave_seeds": 0},      # nor add one-wave seeds: the first population is the seeding's
            "operators": operators,
            "selection": {"policy": sel["policy"], "params": dict(sel["params"]), "reward": sel["reward"],
                          "failure_reward": sel["failure_reward"], "warm_start_weight": sel["warm_start_weight"],
                          **({"parents": {"name": "fitness_novelty", "params": dict(parents)}} if parents else {})},
            "strategy": "evolution", "evaluator": {"backend": "simulator"},
            "llm": {"concurrency": 1, "providers": [{"name": q, "kind": PROVIDER, "model": q,
                                   "options": {"quality": q, "seed": seed, "candidates": candidates,
                                               **({"jumps": jumps} if q == "good" and jumps else {})}}
                                  for q in qualities]}}


class _Silent:
    def update(self, rows: Any, simulated: Any = None, evaluator: Any = None) -> None:
        pass


def run_one(seed: int, variant: str, folder: str, budget: int, shapes: Sequence[str], candidates: int = 4,
            param_mutate: bool = True, seeded: bool = False, rl: "RlSelection | None" = None,
            broken: str = "garbage", parents: "Mapping[str, Any] | None" = None, jumps: int = 0,
            population: "Mapping[str, Any] | None" = None) -> dict[str, Any]:
    """One campaign into `folder`: per shape the best-so-far curve and the arms' pulls, mean
    reward and evaluated children."""
    from evolution.db import CampaignDB
    from experiments.ablation import trajectories
    from experiments.campaign import create_or_continue, run_campaign
    from experiments.schema import parse_campaign
    out = Path(folder)
    config = parse_campaign(campaign_dict(seed, variant, budget, shapes, candidates, param_mutate, seeded, rl,
                                          broken, parents, jumps, population), base_dir=out.parent)
    create_or_continue(config, out)
    t0 = time.monotonic()
    run_campaign(out, progress=_Silent(), plots=False)
    seconds = time.monotonic() - t0
    result = {"seed": seed, "variant": variant, "folder": str(out), "seconds": seconds,
              "shapes": trajectories(out), "arms": {}}
    db = CampaignDB(out / "campaign.db", readonly=True)
    try:
        for name in result["shapes"]:
            log = db.policy_log(name)
            stats = log[-1]["stats"] if log else {}
            children: dict[str, int] = {}
            for p in db.proposals(name):
                if p.get("arm"):
                    children[p["arm"]] = children.get(p["arm"], 0) + 1
            result["arms"][name] = {arm: {"pulls": s["pulls"], "mean_reward": s["mean_reward"],
                                          "children": children.get(arm, 0)} for arm, s in stats.items()}
    finally:
        db.close()
    return result


def summarise(runs: Sequence[Mapping[str, Any]], budget: int) -> dict[str, Any]:
    """Per (seed, shape): evaluations for rl to reach uniform's final best, as a fraction of the budget."""
    from experiments.ablation import evals_to_reach
    by = {(r["variant"], r["seed"]): r for r in runs}
    rows = []
    for (variant, seed), rl in sorted(by.items()):
        uni = by.get(("uniform", seed))
        if variant != "rl" or uni is None:
            continue
        for shape, d in sorted(rl["shapes"].items()):
            uni_curve = uni["shapes"].get(shape, {}).get("curve") or []
            if not uni_curve or uni_curve[-1] is None:
                continue  # uniform found no kernel there (a curve of None: nothing passed), so there is no target
            target = uni_curve[-1]
            k = evals_to_reach(d["curve"], target)
            own = evals_to_reach(uni_curve, target)
            rows.append({"seed": seed, "shape": shape, "uniform_best_us": target,
                         "rl_best_us": d["curve"][-1] if d["curve"] else None,
                         "rl_evals": k, "fraction": (k if k is not None else budget) / budget,
                         "reached": k is not None, "uniform_evals": own,
                         "own_ratio": (k if k is not None else budget) / own if own else None})
    fractions = [r["fraction"] for r in rows]
    own_ratios = [r["own_ratio"] for r in rows if r["own_ratio"] is not None]
    own_fractions = [r["uniform_evals"] / budget for r in rows if r["uniform_evals"]]
    curves = mean_curves(runs, budget)
    hit = next((i + 1 for i, v in enumerate(curves["rl"]) if v >= curves["uniform"][-1]), None) \
        if curves.get("rl") and curves.get("uniform") else None
    split: dict[str, dict[str, dict[str, float]]] = {}
    for variant in VARIANTS:
        totals: dict[str, dict[str, float]] = {}
        for r in runs:
            if r["variant"] != variant:
                continue
            for arms in r["arms"].values():
                for arm, s in arms.items():
                    t = totals.setdefault(arm, {"pulls": 0, "children": 0, "reward_sum": 0.0})
                    t["pulls"] += s["pulls"]
                    t["children"] += s["children"]
                    t["reward_sum"] += (s["mean_reward"] or 0.0) * s["pulls"]
        pulls, kids = sum(t["pulls"] for t in totals.values()) or 1, sum(t["children"] for t in totals.values()) or 1
        split[variant] = {arm: {"pull_share": t["pulls"] / pulls, "child_share": t["children"] / kids,
                                "mean_reward": t["reward_sum"] / t["pulls"] if t["pulls"] else None,
                                "pulls": t["pulls"], "children": t["children"]} for arm, t in sorted(totals.items())}
    return {"rows": rows, "mean_fraction": statistics.fmean(fractions) if fractions else None,
            "mean_curves": curves, "mean_curve_evals": hit,
            "median_fraction": statistics.median(fractions) if fractions else None,
            # the stricter reading: rl's evaluations against the evaluations uniform itself took to its final
            # best (not its whole budget), so that a uniform run that stopped improving early earns rl nothing.
            # It leans towards uniform (the target is that run's own find); the unbiased yardstick is a second,
            # independent uniform run in rl's place (experiments.oracle_policy:UniformReplicate)
            "own_ratio_mean": statistics.fmean(own_ratios) if own_ratios else None,
            "own_ratio_median": statistics.median(own_ratios) if own_ratios else None,
            "uniform_own_fraction": statistics.fmean(own_fractions) if own_fractions else None,
            "reached": sum(r["reached"] for r in rows), "cases": len(rows),
            "within_60": sum(r["reached"] and r["fraction"] <= 0.6 for r in rows), "split": split,
            "seconds": {v: statistics.fmean([r["seconds"] for r in runs if r["variant"] == v] or [math.nan])
                        for v in VARIANTS}}


def mean_curves(runs: Sequence[Mapping[str, Any]], budget: int) -> dict[str, list[float]]:
    """Per variant, after each evaluation: the mean over (seed, shape) of (best time either variant
    found for that seed and shape) / (this variant's best so far); 1.0 = caught up with the best."""
    best: dict[tuple[int, str], float] = {}
    for r in runs:
        for shape, d in r["shapes"].items():
            if d["curve"] and d["curve"][-1] is not None:
                key = (r["seed"], shape)
                best[key] = min(best.get(key, math.inf), d["curve"][-1])
    out: dict[str, list[float]] = {}
    for variant in VARIANTS:
        series = []
        for r in runs:
            if r["variant"] != variant:
                continue
            for shape, d in r["shapes"].items():
                curve = list(d["curve"])[:budget]
                curve += [curve[-1] if curve else None] * (budget - len(curve))   # a shape that stopped early
                series.append([best[(r["seed"], shape)] / t if t else 0.0 for t in curve])
        if series:
            out[variant] = [statistics.fmean(col) for col in zip(*series)]
    return out


def render_markdown(summary: Mapping[str, Any], meta: Mapping[str, Any]) -> str:
    lines = [f"- seeds {', '.join(map(str, meta['seeds']))}; budget {meta['budget']} evaluations per shape; "
             f"shapes {', '.join(meta['shapes'])}; good model: best of {meta['candidates']} moves"
             + (f" and {meta['jumps']} genomes drawn from the whole space" if meta.get("jumps") else "")
             + "; bad model: "
             f"{meta['broken']}; first population: "
             f"{'seeded (hand-picked, solved shapes)' if meta['seeded'] else 'random samples'}; "
             f"param_mutate arm: {'yes' if meta['param_mutate'] else 'no'}; rl: {meta['rl_label']}"
             + (f"; parent selection (both): {', '.join(f'{k} {v}' for k, v in sorted(meta['parents'].items()))}"
                if meta.get("parents") else "")
             + (f"; population (both): {', '.join(f'{k} {v}' for k, v in check_population(meta['population']).items())}"
                if meta.get("population") else ""),
             "", "| seed | shape | uniform final best (us) | rl final best (us) | rl evals to reach it | "
             "fraction of budget | uniform's own evals |", "|---|---|---|---|---|---|---|"]
    for r in summary["rows"]:
        k = str(r["rl_evals"]) if r["reached"] else "not reached"
        lines.append(f"| {r['seed']} | {r['shape']} | {r['uniform_best_us']:.2f} | {r['rl_best_us']:.2f} | {k} | "
                     f"{r['fraction']:.2f} | {r['uniform_evals']} |")
    lines += ["", f"Mean fraction {summary['mean_fraction']:.3f} (median {summary['median_fraction']:.3f}); "
                  f"reached in {summary['reached']}/{summary['cases']}; within 60% of the budget in "
                  f"{summary['within_60']}/{summary['cases']}.", "",
              *([f"Against uniform's own evaluations to its final best (on average {summary['uniform_own_fraction']:.0%} "
                 f"of the budget; a case never reached counts the whole budget): rl needs "
                 f"{summary['own_ratio_mean']:.3f} of them (median {summary['own_ratio_median']:.3f}).", ""]
                if summary.get("own_ratio_mean") is not None else []),
              "Mean over seeds and shapes of (best time either policy found) / (best so far), after n evaluations:",
              "", "| n | " + " | ".join(VARIANTS) + " |", "|---|" + "---|" * len(VARIANTS)]
    curves = summary["mean_curves"]
    for n in sorted({max(1, round(meta["budget"] * f / 8)) for f in range(1, 9)}):
        lines.append(f"| {n} | " + " | ".join(f"{curves[v][n - 1]:.3f}" if v in curves else "-" for v in VARIANTS)
                     + " |")
    hit = summary["mean_curve_evals"]
    lines += ["", "rl's mean curve reaches uniform's final value after " +
              (f"{hit} evaluations ({hit / meta['budget']:.0%} of the budget)." if hit else "no evaluation in the "
               "budget."), "",
              "| arm | " + " | ".join(f"{v}: pulls / evaluated children / mean reward" for v in VARIANTS) + " |",
              "|---|" + "---|" * len(VARIANTS)]
    arms = sorted({a for s in summary["split"].values() for a in s})
    for arm in arms:
        cells = []
        for v in VARIANTS:
            s = summary["split"].get(v, {}).get(arm)
            cells.append("-" if s is None else f"{s['pull_share']:.1%} ({s['pulls']}) / {s['child_share']:.1%} "
                         f"({s['children']}) / {s['mean_reward']:+.3f}" if s["mean_reward"] is not None else "-")
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def run_arms_ablation(seeds: int = 5, out_dir: "str | Path" = "runs/ablation-arms", budget: int = 96,
                      shapes: Sequence[str] = SHAPES, jobs: int = 1, base_seed: int = 0, candidates: int = 4,
                      param_mutate: bool = True, seeded: bool = False, console: Any = None,
                      rl: "RlSelection | None" = None, broken: str = "garbage",
                      parents: "Mapping[str, Any] | None" = None, jumps: int = 0,
                      population: "Mapping[str, Any] | None" = None) -> dict[str, Any]:
    arm_qualities(broken)                                          # an unknown kind: ValueError, before any run
    check_population(population)
    for name, value in (("seeds", seeds), ("jobs", jobs), ("budget", budget), ("candidates", candidates)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"ablation: {name} must be a whole number >= 1, got {value!r}")
    if isinstance(jumps, bool) or not isinstance(jumps, int) or jumps < 0:
        raise ValueError(f"ablation: jumps must be a whole number >= 0, got {jumps!r}")
    rl = rl or RlSelection()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seed_list = [base_seed + i for i in range(seeds)]
    tasks = [(seed, v, str(out / "runs" / f"{v}-s{seed}"), budget, list(shapes), candidates, param_mutate, seeded,
              rl, broken, dict(parents or {}), jumps, dict(population or {})) for seed in seed_list for v in VARIANTS]
    runs = []
    with ProcessPoolExecutor(max_workers=jobs) if jobs > 1 else _Inline() as pool:
        for r in pool.map(_star, tasks):
            runs.append(r)
            if console is not None:
                console.print(f"{r['variant']:>8} seed {r['seed']}: {r['seconds']:.1f} s", highlight=False)
    meta = {"seeds": seed_list, "budget": budget, "shapes": list(shapes), "candidates": candidates, "jumps": jumps,
            "param_mutate": param_mutate, "seeded": seeded, "broken": broken, "parents": dict(parents or {}),
            "population": dict(population or {}),
            "variants": {"rl": rl.resolved, "uniform": UNIFORM}, "rl_label": rl.label()}
    summary = summarise(runs, budget)
    markdown = render_markdown(summary, meta)
    (out / "ablation-arms.json").write_text(json.dumps({"meta": meta, "summary": summary, "runs": runs}) + "\n")
    (out / "ablation-arms.md").write_text(markdown)
    return {"meta": meta, "summary": summary, "runs": runs, "markdown": markdown}


class _Inline:
    def __enter__(self) -> "_Inline":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    @staticmethod
    def map(fn: Any, items: Any) -> Any:
        return map(fn, items)


def _star(args: tuple) -> dict:
    return run_one(*args)


if __name__ == "__main__":
    from experiments.ablation_arms_cli import main
    raise SystemExit(main())
