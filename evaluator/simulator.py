"""The analytic simulator as an evaluator (no GPU needed): `SimulatedEvaluator`.

Used when no GPU is present. Every figure it returns is labelled simulated
(`Measurement.simulated` / `BaselineSet.simulated` are True, `describe()` says "simulated").
It is a model, not a measurement: use it to test the search machinery and to rank candidates
roughly, never to claim a speedup. It reports only what it computes: a device time (and the
server and call times derived from it). Nothing ran, so no timing has a spread (`Timing.min_us` /
`max_us` are None, `repeats` 0) and no output was checked (`Measurement.rel_error` is None).

Which model: each template family names its own, `TemplateFamily.simulator_model` (an import
path `package.module:function`, or a callable) with the signature
`model(params, problem, sim_params, device) -> SimBreakdown`, called with the genome's valid,
normalised params. A genome of a family without a model, or of a family the registry does not
know, comes back "unsupported" with a reason naming the family.

The simulator's modules:
  evaluator/sim_device.py   device facts, the coefficients (SimParams), calibration files
  evaluator/sim_sm90.py     the model of the built-in sm90_cutlass family
  evaluator/sim_vendor.py   the vendor baselines (cuBLAS / cuBLASLt / torch.matmul)
  evaluator/sim_fit.py      calibration fitting and rank statistics; its CLI:
                            python -m evaluator.sim_fit calibrate|check|predict|baselines ...
"""

from __future__ import annotations

import hashlib
import inspect
import math
import random
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from genome import Genome, PluginError, Problem, describe_object, load_object
from templates import FamilyRegistry, TemplateFamily, family_registry

from .api import STATUS_INVALID, STATUS_OK, STATUS_UNSUPPORTED, BaselineSet, Measurement
from .sim_device import (DeviceSpec, SimBreakdown, SimParams, call_us, get_device, resolve_calibration, server_us,
                         simulated_timing)
from .sim_vendor import simulate_baselines

ModelFn = Callable[[Mapping[str, Any], Problem, SimParams, DeviceSpec], SimBreakdown]


# ---------------------------------------------------------------------------------------------
# family -> model
# ---------------------------------------------------------------------------------------------

class NoModel(ValueError):
    """The simulator has no model of a genome's family (unknown family, or simulator_model None)."""


def load_model(family: TemplateFamily) -> "ModelFn | None":
    """The family's simulator model as a callable, or None if it has none. Raises PluginError when
    its `simulator_model` does not import or is not a function."""
    ref = family.simulator_model
    if ref is None:
        return None
    obj = load_object(ref) if isinstance(ref, str) else ref
    if not callable(obj) or inspect.isclass(obj):
        raise PluginError(f"template family {family.name!r}: simulator_model {ref!r} is {describe_object(obj)}, "
                          "not a function model(params, problem, sim_params, device) -> SimBreakdown")
    return obj


class FamilyModels:
    """The simulator model of each family of a registry, loaded once per family."""

    def __init__(self, families: "FamilyRegistry | None" = None):
        self.families = families if families is not None else family_registry()
        self._loaded: dict[str, tuple[TemplateFamily, "ModelFn | None"]] = {}

    def lookup(self, name: str) -> tuple[TemplateFamily, ModelFn]:
        """(family, model) of the family called `name`; NoModel says why there is none."""
        hit = self._loaded.get(name)
        if hit is None:
            if not isinstance(name, str) or name not in self.families:
                raise NoModel(f"the simulator has no model of family {name!r}: not a known template family "
                              f"(known: {', '.join(self.families.names()) or 'none'})")
            family = self.families.resolve(name)
            hit = self._loaded[name] = (family, load_model(family))
        family, model = hit
        if model is None:
            raise NoModel(f"the simulator has no model of family {name!r} (the family sets no simulator_model)")
        return family, model

    def load_all(self) -> None:
        """Load the model of every family in the registry now, so a broken one fails early."""
        for name in self.families.names():
            try:
                self.lookup(name)
            except NoModel:
                pass

    def checked(self, genome: Genome, problem: Problem) -> tuple[ModelFn, dict[str, Any]]:
        """(model, normalised params) of a genome; NoModel if its family has no model,
        genome.InvalidGenome naming the broken rules if it cannot run the problem."""
        family, model = self.lookup(genome.family)
        return model, family.space.validate(genome, problem).param_dict


@lru_cache(maxsize=1)
def _builtin_models() -> FamilyModels:
    return FamilyModels()


def _models(families: "FamilyRegistry | FamilyModels | None") -> FamilyModels:
    if families is None:
        return _builtin_models()
    return families if isinstance(families, FamilyModels) else FamilyModels(families)


def _as_genome(genome: "Genome | Mapping[str, Any]", family: "str | None") -> Genome:
    if isinstance(genome, Genome):
        return genome
    if "params" in genome and "family" in genome:
        return Genome.from_dict(genome)
    if family is None:
        raise ValueError("a plain param dict needs family=<template family name>; or give a Genome")
    return Genome.make(family, dict(genome))


def simulate_breakdown(genome: "Genome | Mapping[str, Any]", problem: "Problem | str",
                       params: "SimParams | None" = None, device: "str | DeviceSpec" = "h200", *,
                       family: "str | None" = None,
                       families: "FamilyRegistry | FamilyModels | None" = None) -> SimBreakdown:
    """Every term of its family's model for one genome (a Genome, a genome dict, or a plain param
    dict of the family named by `family=`) on one problem. Raises NoModel if the family has no
    model, genome.InvalidGenome if the genome breaks a rule of its family for the problem."""
    problem = Problem.parse(problem)
    model, checked = _models(families).checked(_as_genome(genome, family), problem)
    return model(checked, problem, params or SimParams(), get_device(device))


def simulate_time_us(genome: "Genome | Mapping[str, Any]", problem: "Problem | str",
                     params: "SimParams | None" = None, device: "str | DeviceSpec" = "h200", *,
                     family: "str | None" = None,
                     families: "FamilyRegistry | FamilyModels | None" = None) -> float:
    """Simulated device time (us, noise-free) of a genome on a problem (see simulate_breakdown)."""
    return simulate_breakdown(genome, problem, params, device, family=family, families=families).total_us


# ---------------------------------------------------------------------------------------------
# the evaluator
# ---------------------------------------------------------------------------------------------

def noise_factor(seed: int, genome_id: str, problem: str, noise: float) -> float:
    """Deterministic multiplicative noise exp(noise * z), z ~ N(0,1) drawn from a generator seeded
    by (seed, genome id, problem): independent of evaluation order and of global random state."""
    if noise <= 0:
        return 1.0
    return math.exp(noise * _rng(seed, genome_id, problem, "noise").gauss(0.0, 1.0))


def _rng(*parts: Any) -> random.Random:
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "little"))


class SimulatedEvaluator:
    """`evaluator.api.Evaluator` backed by each family's analytic model. Every result says
    simulated=True.

    calibration: a SimParams JSON file (or a name in evaluator/calibration/, or SimParams);
      default evaluator/calibration/h200.json if present, else the built-in defaults.
    device: "h200" or "h100" (the device facts; the coefficients come from the calibration).
    noise, seed: optional multiplicative timing noise exp(noise * z), reproducible per
      (seed, genome id, problem), so results do not depend on evaluation order.
    families: the campaign's FamilyRegistry (default: the built-in families); each genome's
      family gives the model (`TemplateFamily.simulator_model`).

    A genome of a family without a model comes back "unsupported"; one that breaks a rule of its
    family for the problem "invalid" with the rule names in `reason`; otherwise "ok" with device
    time = the model (times the noise), server time = device + a cold-start penalty (idle gap, L2
    flushed), call time = device + host overhead; no spread and no rel_error (nothing ran).
    """

    simulated = True
    lanes = 64  # shapes it may evaluate side by side: the model is a pure function (evolution/windows.py)
    OPTIONS = ("calibration", "device", "noise", "seed")  # constructor options (evaluator.factory filters by these)

    def __init__(self, calibration: "str | Path | SimParams | None" = None, device: str = "h200",
                 noise: float = 0.0, seed: int = 0, families: "FamilyRegistry | None" = None):
        if noise < 0:
            raise ValueError("noise must be >= 0")
        self.params, self.calibration_name = resolve_calibration(calibration)
        self.device = get_device(device)
        self.noise = float(noise)
        self.seed = int(seed)
        self.models = FamilyModels(families)
        self.models.load_all()

    @property
    def families(self) -> FamilyRegistry:
        return self.models.families

    def describe(self) -> str:
        extra = f", noise {self.noise:g} seed {self.seed}" if self.noise else ""
        return f"simulated {self.device.name} (analytic model, calibration {self.calibration_name}{extra})"

    def baselines(self, problem: Problem) -> BaselineSet:
        return simulate_baselines(problem, self.params, self.device)

    def device_facts(self) -> dict:
        """The simulated device's copy bandwidth (the measured figure it is calibrated with)."""
        return {"hbm_tbps": self.device.hbm_tbps,
                "hbm_source": f"simulated {self.device.name}'s copy bandwidth (measured, MEASURE.md)"}

    def predict_us(self, genome: Genome, problem: "Problem | str") -> float:
        """Noise-free model time of a valid genome."""
        return simulate_time_us(genome, problem, self.params, self.device, families=self.models)

    def evaluate(self, genomes: Sequence[Genome], problem: Problem) -> list[Measurement]:
        problem = Problem.parse(problem)
        return [self._evaluate_one(g, problem) for g in genomes]

    def _evaluate_one(self, genome: Genome, problem: Problem) -> Measurement:
        name = problem.name
        try:
            family, model = self.models.lookup(genome.family)
        except NoModel as exc:
            return Measurement(genome.id, name, STATUS_UNSUPPORTED, simulated=True, reason=str(exc))
        found = family.space.violations(genome, problem)
        if found:
            return Measurement(genome.id, name, STATUS_INVALID, simulated=True,
                               reason="; ".join(str(v) for v in found))
        params = family.space.normalise(genome).param_dict
        t = float(model(params, problem, self.params, self.device).total_us)
        if not (math.isfinite(t) and t > 0):
            raise ValueError(f"the simulator model of family {family.name!r} returned total_us={t!r} for "
                             f"{genome.id} on {name}; a model must return a positive time")
        t *= noise_factor(self.seed, genome.id, name, self.noise)
        reason = None
        if genome.patches:
            reason = f"simulated: {len(genome.patches)} code patch(es) not modelled (timed as the unpatched kernel)"
        return Measurement(genome.id, name, STATUS_OK, device=simulated_timing(t),
                           server=simulated_timing(server_us(t, self.params)),
                           call=simulated_timing(call_us(t, self.params)),
                           rel_error=None, reason=reason, simulated=True)

    def close(self) -> None:
        pass
