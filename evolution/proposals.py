"""The operator calls of the evolution strategy (evolution/evolve.py): planning each slot's call
(arm, parents, a seeded context) in slot order, running the LLM arms' calls side by side, the
static safety check of patched children, and settling each call (children kept, or the failure
credited to its arm). See the "Proposals" and "Failures" paragraphs of evolve.py's docstring.
"""

from __future__ import annotations

import random
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Sequence

from genome import Genome, InvalidGenome, Offspring, OperatorContext, OperatorError, RandomSample, apply_operator

from .operators import OperatorEntry
from .parents import failed_parents
from .population import Island

MAX_ATTEMPTS = 12  # operator draws per child before falling back to a fresh sample


@dataclass
class _Call:
    """One planned operator call: its slot, arm, parents and context, and what came of it."""

    slot: int
    island: Island
    arm: str
    entry: OperatorEntry
    parents: list[Genome]
    ctx: OperatorContext
    children: list[Offspring] = field(default_factory=list)
    error: "BaseException | None" = None
    future: "Future[None] | None" = None


class OperatorCalls:
    """Mixed into EvolutionStrategy: the methods that plan, run and settle operator calls. They
    use the strategy's policy, operators, spaces, rng, executor, llm, history and bookkeeping."""

    def _plan(self, slot: int, island: Island) -> "_Call | None":
        """Choose the slot's arm and parents and seed its call, from the strategy's generator; None
        when the chosen arm cannot run here (too few measured parents, no failed genome to fix)."""
        arm = self.policy.choose(self.rng)
        entry = self.operators[arm]
        if self.llm_budget_spent and entry.model is not None:
            self._release(arm)
            return None  # the token budget is spent: LLM arms can no longer run here
        space = self.spaces[island.family]
        history = self._history(island)
        if getattr(entry.operator, "wants_failed_parents", False):
            picked = failed_parents(self.failed, island.family, entry.arity, self.rng, self.fix_attempts)
            if picked is None:
                self._release(arm)
                return None
            for f in picked:
                self.fix_attempts[f.genome.id] = self.fix_attempts.get(f.genome.id, 0) + 1
            parents = [f.genome for f in picked]
            history["failure_of"] = {f.genome.id: f.summary() for f in picked}
        else:
            candidates = island.candidates()
            if entry.arity > len(candidates):
                self._release(arm)
                return None
            parents = list(self.toolbox.select_parents(candidates, entry.arity, self.rng, space)) \
                if entry.arity > 0 else []
        seed = self.rng.getrandbits(64)
        llm = self.llm
        if llm is not None and hasattr(llm, "scoped"):
            llm = llm.scoped(f"{seed:016x}")
        ctx = OperatorContext(space=space, problem=self.problem, rng=random.Random(seed), history=history,
                              render=self.render, spaces=self.spaces, llm=llm, frozen=self.frozen,
                              price=self.price, proposed=frozenset(self.proposed))
        return _Call(slot, island, arm, entry, parents, ctx)

    def _release(self, arm: str) -> None:
        """A pull of `arm` that will never be told: released once the current `ask` is over
        (`_release_never_told`). Released at once, UCB (deterministic, rng-free) would choose the same
        arm again for every later slot and retry of this ask, and an arm that can never run here would
        never be passed over."""
        self.never_told.append(arm)

    def _release_never_told(self) -> None:
        """The policy stops counting the pulls of this ask that will never be told as in flight."""
        arms, self.never_told = self.never_told, []
        for arm in arms:
            self._policy_hook("release", arm)

    def _policy_hook(self, name: str, arm: str) -> None:
        """The policy's optional bookkeeping of pulls in flight (`release`, `hold`), where it has it
        (a plug-in policy may not)."""
        hook = getattr(self.policy, name, None)
        if hook is not None:
            hook(arm)

    def _run(self, calls: Sequence[_Call]) -> None:
        """Run the planned calls: the LLM arms' side by side on the executor, the others here."""
        for call in calls:
            if self.executor is not None and (call.entry.model is not None
                                              or getattr(call.entry.operator, "concurrent", False)):
                call.future = self.executor.submit(self._call, call)
        for call in calls:
            if call.future is None:
                self._call(call)
        for call in calls:
            if call.future is not None:
                call.future.result()

    def _call(self, call: _Call) -> None:
        try:
            children = list(self.toolbox.vary(call.entry.operator, call.parents, call.ctx))
            call.children = self._safe(children)
        except Exception as exc:  # noqa: BLE001 - an operator's failure costs its arm, never the campaign
            call.error = exc
            return
        if self.on_proposed is not None and call.children:
            self.on_proposed(call.children)

    def _safe(self, children: Sequence[Offspring]) -> list[Offspring]:
        """The children whose patched code passes the static safety check (llm_mutators.safety),
        before anything is built; when every child is refused, the call fails with the reasons."""
        if self.check is None:
            return list(children)
        kept, refused = [], []
        for child in children:
            why = self.check(child.genome) if child.genome.patches else None
            (refused if why else kept).append(why or child)
        if refused and not kept:
            raise OperatorError("unsafe", "; ".join(refused)[:600])
        return kept

    def _settle(self, call: _Call) -> list[Offspring]:
        """The call's new children (registered as proposed), or its failure credited to its arm. The
        tokens its requests used count for the shape, once per call, whether or not a child came."""
        arm, exc = call.arm, call.error
        self.llm_tokens += int(getattr(call.ctx.llm, "tokens", 0) or 0)
        if isinstance(exc, InvalidGenome):
            self._release(arm)
            return []
        if exc is not None:
            kind = getattr(exc, "kind", None) or "error"
            if kind == "budget":  # the campaign's token budget, not the model: no arm pays for it
                self.llm_budget_spent = True
                self._release(arm)
            else:
                self.policy.update(arm, self.failure_reward)
                self.rewards.append((arm, self.failure_reward))
            self.operator_failures.append({"arm": arm, "kind": kind, "error": type(exc).__name__,
                                           "reason": str(exc)[:300],
                                           "llm_calls": list(getattr(call.ctx.llm, "keys", []) or [])})
            credit = "nothing credited: the token budget is spent, LLM arms are passed over from now on" \
                if kind == "budget" else f"credited {self.failure_reward:+g} to its arm"
            self.events.append(f"operator {arm} failed ({type(exc).__name__}: {str(exc)[:160]}); {credit}")
            return []
        out = []
        for child in call.children:
            if child.genome.id in self.proposed:
                continue
            out.append(self._offspring(child.genome, child.operator,
                                       child.parent_ids or tuple(p.id for p in call.parents), call.island, arm,
                                       child.note, child.meta))
        if not out:  # every child was proposed before: nothing of this pull will be told
            self._release(arm)
        for _ in out[1:]:  # one pull, several children each told: count each in flight
            self._policy_hook("hold", arm)
        return out

    def _fallback(self, island: Island) -> "Offspring | None":
        """A fresh sample (exploration) when no arm produced a new genome; not credited to any arm."""
        space = self.spaces[island.family]
        sampler = RandomSample(name="fallback_sample")
        ctx = OperatorContext(space=space, problem=self.problem, rng=self.rng, render=self.render)
        for _ in range(50):
            for child in apply_operator(sampler, [], ctx):
                if child.genome.id not in self.proposed:
                    return self._offspring(child.genome, child.operator, (), island, None,
                                           "no arm produced a new genome")
        return None
