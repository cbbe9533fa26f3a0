"""Baseline search strategies behind one ask/tell interface (for ablations against the
RL-weighted evolution under the same budget).

- `RandomSearch`: uniform valid genomes from `space.sample`, never the same genome id twice.
- `OptunaTPE`: Optuna's TPE sampler through its ask/tell API. It minimises log(device time in
  microseconds). A failed measurement (any status but "ok", or no device timing) is told as the
  value `failure_value` (default log(1e7), i.e. as if the kernel took 10 s) rather than as a
  FAIL trial: TPE drops FAIL trials entirely, so it would keep proposing a region that does not
  compile; a penalty worse than any real GEMM time puts failures in TPE's "bad" group instead.
  Pass `failure_value=None` to tell `TrialState.FAIL`.

Both are deterministic given the seed and the order of ask/tell calls: the engine resumes a
campaign by replaying the recorded proposals and measurements into a fresh instance.
"""

from __future__ import annotations

import math
import random
import warnings
from typing import Any, Mapping, Protocol, runtime_checkable

from evaluator.api import Measurement
from genome import Genome, InvalidGenome, Offspring, Problem, SearchSpace

__all__ = ["SearchStrategy", "RandomSearch", "OptunaTPE", "FAILURE_LOG_US"]

FAILURE_LOG_US = math.log(1e7)  # the value told for a failed kernel: as if it took 10 seconds


@runtime_checkable
class SearchStrategy(Protocol):
    """ask/tell. Optional: `forget(offspring)`, called for a child asked but left out of its round (it
    will never be told), as the engine's round cut does (evolution/round_cut.py)."""

    name: str

    def ask(self, n: int) -> list[Offspring]: ...

    def tell(self, offspring: Offspring, measurement: Measurement) -> None: ...


def _check_n(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"ask(n): n must be a non-negative integer, got {n!r}")
    return n


def _check_supported(space: SearchSpace, problem: Problem, who: str) -> None:
    reason = space.supports(problem)
    if reason:
        raise ValueError(f"{who}: family {space.family} cannot run problem {problem.name}: {reason}")


def _measured_value(measurement: Measurement) -> "float | None":
    """log(device time us) for an ok measurement, else None (failed)."""
    if measurement.ok and measurement.time_us is not None and measurement.time_us > 0 \
            and math.isfinite(measurement.time_us):
        return math.log(measurement.time_us)
    return None


def _check_tell(offspring: Offspring, measurement: Measurement) -> str:
    gid = offspring.genome.id
    if measurement.genome_id != gid:
        raise ValueError(f"measurement is of genome {measurement.genome_id}, the offspring is genome {gid}")
    return gid


class RandomSearch:
    """Uniformly drawn valid genomes (`space.sample`, valid for the problem), never an id twice.

    `ask(n)` retries up to `max_retries` draws per genome; if the space is exhausted it returns
    fewer than n (possibly none)."""

    name = "random"

    def __init__(self, space: SearchSpace, problem: Problem, seed: int, max_retries: int = 1000):
        _check_supported(space, problem, self.name)
        if max_retries < 1:
            raise ValueError(f"max_retries must be >= 1, got {max_retries}")
        self.space = space
        self.problem = problem
        self.seed = int(seed)
        self.max_retries = int(max_retries)
        self._rng = random.Random(self.seed)
        self._seen: list[str] = []
        self._seen_set: set[str] = set()
        self.n_asks = 0
        self.best: "tuple[float, str] | None" = None  # (log time us, genome id)

    def _mark(self, gid: str) -> None:
        if gid not in self._seen_set:
            self._seen_set.add(gid)
            self._seen.append(gid)

    def ask(self, n: int) -> list[Offspring]:
        out = []
        for _ in range(_check_n(n)):
            for attempt in range(self.max_retries):
                genome = self.space.sample(self._rng)
                if genome.id in self._seen_set or not self.space.is_valid(genome, self.problem):
                    continue
                self._mark(genome.id)
                self.n_asks += 1
                out.append(Offspring(genome, self.name, (), note="uniform random sample",
                                     meta={"ask": self.n_asks - 1, "retries": attempt}))
                break
            else:
                break  # exhausted: return what we have
        return out

    def tell(self, offspring: Offspring, measurement: Measurement) -> None:
        """Record the result (a genome not asked here is also never asked later)."""
        gid = _check_tell(offspring, measurement)
        self._mark(gid)
        value = _measured_value(measurement)
        if value is not None and (self.best is None or value < self.best[0]):
            self.best = (value, gid)


class OptunaTPE:
    """Optuna TPE (`TPESampler(seed=seed, n_startup_trials=..., multivariate=...)`, in-memory
    study, direction minimize) over the family's parameters.

    Encoding: an ordered parameter with numeric choices is an `IntDistribution` over the index of
    its choice (TPE then models neighbourhoods: tile 128 is between 96 and 160); other parameters
    are `CategoricalDistribution`s over their choices.

    Asking: the suggested parameters are repaired (`space.repair` with an rng seeded from `seed`)
    and normalised; the trial stands for the resulting genome, and the genome's measured value is
    told to it (so TPE learns what its suggestion produced). If the genome was already told, the
    trial is told that value at once and TPE is asked again; if it is still pending, the trial
    waits for that genome's value. After `max_retries` such suggestions a random unseen genome is
    returned instead (told to the study as an added trial). The caller never gets an id twice.

    """

    name = "optuna_tpe"

    def __init__(self, space: SearchSpace, problem: Problem, seed: int, n_startup_trials: int = 10,
                 multivariate: bool = True, max_retries: int = 50,
                 failure_value: "float | None" = FAILURE_LOG_US):
        _check_supported(space, problem, self.name)
        import optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        if n_startup_trials < 0:
            raise ValueError(f"n_startup_trials must be >= 0, got {n_startup_trials}")
        if max_retries < 1:
            raise ValueError(f"max_retries must be >= 1, got {max_retries}")
        if failure_value is not None and not math.isfinite(failure_value):
            raise ValueError(f"failure_value must be finite or None, got {failure_value!r}")
        self.space = space
        self.problem = problem
        self.config = {"seed": int(seed), "n_startup_trials": int(n_startup_trials),
                       "multivariate": bool(multivariate), "max_retries": int(max_retries),
                       "failure_value": None if failure_value is None else float(failure_value)}
        self._distributions = self._make_distributions()
        self._fresh()

    # -- encoding ------------------------------------------------------------------------------
    def _index_encoded(self, spec) -> bool:
        return spec.ordered and len(spec.choices) > 1 and all(
            isinstance(c, int) and not isinstance(c, bool) for c in spec.choices)

    def _make_distributions(self) -> dict:
        d = self._optuna.distributions
        out = {}
        for spec in self.space.params:
            if self._index_encoded(spec):
                out[spec.name] = d.IntDistribution(0, len(spec.choices) - 1)
            else:
                out[spec.name] = d.CategoricalDistribution(list(spec.choices))
        return out

    def _decode(self, trial_params: Mapping[str, Any]) -> dict[str, Any]:
        out = {}
        for spec in self.space.params:
            value = trial_params[spec.name]
            out[spec.name] = spec.choices[int(value)] if self._index_encoded(spec) else value
        return out

    def _encode(self, genome: Genome) -> dict[str, Any]:
        out = {}
        params = self.space.params_of(genome)  # implicit parameters at their default included
        for spec in self.space.params:
            value = params[spec.name]
            if value not in spec.choices:
                raise ValueError(f"genome {genome.id}: {spec.name}={value!r} is not in the space's choices")
            out[spec.name] = spec.choices.index(value) if self._index_encoded(spec) else value
        return out

    # -- study -----------------------------------------------------------------------------------
    def _fresh(self) -> None:
        optuna = self._optuna
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.TPESampler(seed=self.config["seed"],
                                                 n_startup_trials=self.config["n_startup_trials"],
                                                 multivariate=self.config["multivariate"])
        self._study = optuna.create_study(direction="minimize", sampler=sampler)
        self._rng = random.Random(self.config["seed"])
        self._pending: dict[str, list[int]] = {}   # genome id -> trials waiting for its value
        self._known: dict[str, "float | None"] = {}  # genome id -> told value (None: FAIL)
        self.n_asks = 0

    def _study_ask(self) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", self._optuna.exceptions.ExperimentalWarning)
            trial = self._study.ask(self._distributions)
        return trial

    def _study_tell(self, number: int, value: "float | None") -> None:
        state = self._optuna.trial.TrialState
        if value is None:
            self._study.tell(number, state=state.FAIL)
        else:
            self._study.tell(number, value)

    def _study_add(self, params: Mapping[str, Any], value: "float | None") -> None:
        state = self._optuna.trial.TrialState
        if value is None:
            frozen = self._optuna.trial.create_trial(params=dict(params), distributions=self._distributions,
                                                     state=state.FAIL)
        else:
            frozen = self._optuna.trial.create_trial(params=dict(params), distributions=self._distributions,
                                                     value=value)
        self._study.add_trial(frozen)

    # -- ask / tell ------------------------------------------------------------------------------
    def ask(self, n: int) -> list[Offspring]:
        out = []
        for _ in range(_check_n(n)):
            child = self._ask_one()
            if child is None:
                break
            out.append(child)
        return out

    def _ask_one(self) -> "Offspring | None":
        failure = self.config["failure_value"]
        for attempt in range(self.config["max_retries"]):
            trial = self._study_ask()
            suggested = Genome.make(self.space.family, self._decode(trial.params))
            try:
                genome = self.space.repair(suggested, self._rng)
            except InvalidGenome:
                self._study_tell(trial.number, failure)
                continue
            if not self.space.is_valid(genome, self.problem):
                self._study_tell(trial.number, failure)
                continue
            gid = genome.id
            if gid in self._known:
                self._study_tell(trial.number, self._known[gid])
                continue
            if gid in self._pending:
                self._pending[gid].append(trial.number)
                continue
            self._pending[gid] = [trial.number]
            return self._hand_out(genome, {"trial": trial.number,
                                           "repaired": bool(self.space.violations(suggested)),
                                           "normalised": genome != suggested, "retries": attempt})
        # TPE keeps proposing known genomes: fall back to a random unseen one
        for _ in range(1000):
            genome = self.space.sample(self._rng)
            gid = genome.id
            if gid in self._known or gid in self._pending or not self.space.is_valid(genome, self.problem):
                continue
            self._pending[gid] = []
            return self._hand_out(genome, {"trial": None, "repaired": False, "random_fallback": True,
                                           "retries": self.config["max_retries"]})
        return None

    def _hand_out(self, genome: Genome, meta: dict) -> Offspring:
        self.n_asks += 1
        note = "TPE suggestion" + (" (repaired)" if meta.get("repaired") else "")
        if meta.get("random_fallback"):
            note = "random genome (TPE proposed only known genomes)"
        return Offspring(genome, self.name, (), note=note, meta=meta)

    def tell(self, offspring: Offspring, measurement: Measurement) -> None:
        """Tell the value of a genome: to every trial waiting for it, or as a new trial if it was
        not asked here (e.g. a seed genome measured elsewhere). Telling a genome twice is an error."""
        gid = _check_tell(offspring, measurement)
        if gid in self._known:
            raise ValueError(f"genome {gid} was already told to {self.name}")
        measured = _measured_value(measurement)
        value = measured if measured is not None else self.config["failure_value"]
        trials = self._pending.pop(gid, None)
        if trials:
            for number in trials:
                self._study_tell(number, value)
        else:  # a fallback genome or one not asked here: add it as a finished trial
            self._study_add(self._encode(offspring.genome), value)
        self._known[gid] = value

    @property
    def best(self) -> "tuple[float, str] | None":
        """(value, genome id) of the best told genome (value = log time us)."""
        finite = [(v, g) for g, v in self._known.items() if v is not None]
        return min(finite) if finite else None
