"""How the engine builds a shape's search strategy (a mixin of evolution/engine.py's Engine): its
selection policy, warm-started from the shape's inputs; its seeds (halls of fame of the shapes it
may seed from, hand-picked genomes, one-wave tiles, mirrors of the vendor's algorithm); its
operators, LLM gateway, prefetch hook and safety check; and what prompts are told of the GPU and
the vendor baselines."""

from __future__ import annotations

import functools
from typing import Any, Sequence

from genome import Genome, SearchSpace
from llm_mutators.safety import safety_refusal
from templates import frozen_params

from .operators import build_operators
from .rng import derive_seed
from .search import StrategyContext, build_strategy
from .seeding import fit_shape_knobs, lazy_model_order, model_order, seeds_for
from .shape_state import ShapeState
from .vendor_seeds import vendor_seeds
from .wave_seeds import one_wave_seeds


class StrategyFactory:
    """Engine methods that make a shape's strategy (they read the engine's config, plugins, seed
    pools, LLM gateway and evaluator)."""

    def _make_strategy(self, state: ShapeState, spaces: Sequence[SearchSpace]) -> Any:
        cfg = self.config
        name = cfg.strategy.name
        plugins = self.plugins
        pop = cfg.population

        def policy(arms: Sequence[str], priors: dict) -> Any:
            from .bandit import make_policy
            made = make_policy(cfg.selection.policy, list(arms), priors=priors, registry=plugins.policies,
                               **cfg.selection.params)
            warm = state.inputs.policy_state if state.inputs is not None else self.warm_state
            if warm is not None:
                made.warm_start(warm, weight=cfg.selection.warm_start_weight)
            return made

        def seeds(limit: int) -> list:
            out: list = []
            price = model_order(state.problem, plugins.families, self.seed_device) if pop.fit_knobs else None
            for space in spaces:
                solved = state.inputs.solved if state.inputs is not None else {}
                fit = functools.partial(fit_shape_knobs, problem=state.problem, space=space, price=price) \
                    if price is not None else None
                out += seeds_for(state.problem, space, solved if pop.nearest_shapes else {},
                                 self.seed_pool if pop.nearest_shapes else {},
                                 self.handpicked if pop.handpicked else [], pop.nearest_shapes, limit,
                                 order=model_order(state.problem, device=self.seed_device)
                                 if pop.seed_order == "model" else _file_order,
                                 generalist=pop.seed_generalist, fit=fit)
            if pop.wave_seeds:
                out += one_wave_seeds(state.problem, spaces, self.seed_device.n_sms, pop.wave_seeds,
                                      {g.id for g, _, _ in out}, cooperative=pop.wave_cooperative)
            bs = state.baselines
            if pop.vendor_seeds and bs is not None and bs.algorithms:
                out += vendor_seeds(state.problem, spaces, bs.algorithms, _baseline_times(state), self.handpicked,
                                    pop.vendor_seeds, {g.id for g, _, _ in out},
                                    seed=derive_seed(self.seed, "vendor_seeds", state.name),
                                    price=lazy_model_order(state.problem, plugins.families, self.seed_device),
                                    revision=self.vendor_revision, n_sms=self.seed_device.n_sms)
            return out

        parents = cfg.selection.parents
        ctx = StrategyContext(
            problem=state.problem, spaces=spaces, seed=derive_seed(self.seed, "strategy", name, state.name),
            params=dict(cfg.strategy.params), config=cfg, best_vendor_us=state.best_vendor_us,
            operators=lambda: build_operators(cfg.operators, plugins.operators), policy=policy,
            parent_selection=lambda: plugins.parent_selections.create(parents.name, **parents.params),
            seeds=seeds, render=self.render, llm=self.llm, executor=self._operator_pool,
            on_proposed=lambda children: self._prefetch_early(state, children),
            frozen=functools.partial(frozen_params, families=plugins.families),
            extra={"gpu": self._gpu_facts(), "baselines": _baseline_times(state)},
            check=functools.partial(safety_refusal, render=self.render) if self.render else None,
            price=lazy_model_order(state.problem, plugins.families, self.seed_device))
        return build_strategy(plugins.strategies.resolve(name), ctx)

    def _gpu_facts(self) -> str:
        """What prompts say of the device: the evaluator's own description (simulated says so)."""
        try:
            return str(self.evaluator.describe())
        except Exception:  # noqa: BLE001 - a prompt detail, never a reason to stop
            return "NVIDIA Hopper GPU (sm_90a)"


def _baseline_times(state: ShapeState) -> dict[str, float]:
    """Each vendor baseline's device time on the shape (us), for prompts."""
    bs = state.baselines
    return {name: t.median_us for name, t in (bs.device.items() if bs else ()) if t and t.median_us}


def _file_order(genome: Genome) -> float:
    """Every hand-picked seed ranks the same: the files' own order stands (population.seed_order: file)."""
    return 0.0
