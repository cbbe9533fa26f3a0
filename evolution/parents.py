"""Parent selection weighted by fitness and novelty.

Fitness is "higher is better" (the engine passes log speedup over the best vendor baseline, or
-log time). Novelty is a genome's mean normalised parameter distance to the other candidates.
Both are standardised over the candidates (z-scores), combined as
`fitness_weight * z(fitness) + novelty_weight * z(novelty)`, and turned into probabilities with a
softmax at `temperature`. Standardising novelty too keeps the two weights on one scale: with
the defaults novelty counts 0.3 as much as fitness, whatever the population's spread.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from genome import Genome, Registry, SearchSpace, class_with

from .policy_base import sample_index

__all__ = ["novelty", "distance", "selection_weights", "select_parents", "DEFAULT_WEIGHTS", "FitnessNovelty",
           "UniformParents", "parent_selection_registry", "FailedGenome", "failed_parents"]

DEFAULT_WEIGHTS = {"fitness_weight": 1.0, "novelty_weight": 0.3, "temperature": 0.5}


def _encode(genomes: Sequence[Genome], space: SearchSpace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ordered positions in [0,1], unordered codes, family codes) per genome.

    Ordered parameters: index / (len(choices) - 1). Unordered parameters and values outside the
    choices: integer codes compared for equality (a value outside the choices gets its own code).
    The patches are one more unordered parameter: equal patch sets share a code."""
    ordered = [p for p in space.params if p.ordered and len(p.choices) > 1
               and all(g.get(p.name) in p.choices for g in genomes)]
    unordered = [p for p in space.params if p not in ordered]
    pos = np.zeros((len(genomes), len(ordered)))
    codes = np.zeros((len(genomes), len(unordered) + 1), dtype=np.int64)
    tables: list[dict] = [dict() for _ in range(len(unordered) + 1)]
    families: dict[str, int] = {}
    fam = np.zeros(len(genomes), dtype=np.int64)
    for i, g in enumerate(genomes):
        fam[i] = families.setdefault(g.family, len(families))
        for j, p in enumerate(ordered):
            pos[i, j] = p.choices.index(g[p.name]) / (len(p.choices) - 1)
        for j, p in enumerate(unordered):
            value = ("missing",) if g.get(p.name, _MISSING) is _MISSING else ("value", g[p.name])
            codes[i, j] = tables[j].setdefault(value, len(tables[j]))
        patch_key = tuple((p.block, p.code) for p in sorted(g.patches, key=lambda p: p.block))
        codes[i, -1] = tables[-1].setdefault(patch_key, len(tables[-1]))
    return pos, codes, fam


_MISSING = object()


def _pairwise(genomes: Sequence[Genome], space: SearchSpace) -> np.ndarray:
    """Matrix of normalised distances in [0, 1] (genomes of different families: 1)."""
    pos, codes, fam = _encode(genomes, space)
    n_terms = pos.shape[1] + codes.shape[1]  # = len(space.params) + 1 (patches)
    d = np.zeros((len(genomes), len(genomes)))
    if pos.shape[1]:
        d += np.abs(pos[:, None, :] - pos[None, :, :]).sum(axis=2)
    d += (codes[:, None, :] != codes[None, :, :]).sum(axis=2)
    d /= n_terms
    d[fam[:, None] != fam[None, :]] = 1.0
    return np.clip(d, 0.0, 1.0)


def distance(a: Genome, b: Genome, space: SearchSpace) -> float:
    """Normalised parameter distance in [0, 1] between two genomes (see `novelty`)."""
    return float(_pairwise([a, b], space)[0, 1])


def novelty(genome: Genome, others: Sequence[Genome], space: SearchSpace) -> float:
    """Mean normalised distance from `genome` to each of `others`, in [0, 1].

    Per parameter: ordered parameters contribute |index difference| / (len(choices) - 1),
    unordered ones 0 or 1; differing patch sets count as one more unordered parameter; the sum is
    divided by (number of parameters + 1). Genomes of another family are at distance 1.
    `others` is used as given (leave `genome` itself out). With no others the novelty is 0."""
    if not others:
        return 0.0
    d = _pairwise([genome, *others], space)
    return float(d[0, 1:].mean())


def _check_weights(weights: dict[str, Any]) -> dict[str, float]:
    for key in weights:
        if key not in DEFAULT_WEIGHTS:
            raise ValueError(f"parent selection has no parameter {key!r}; allowed: {', '.join(DEFAULT_WEIGHTS)}")
    out = dict(DEFAULT_WEIGHTS)
    out.update(weights)
    for key, value in out.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"parent selection parameter {key!r} must be a finite number, got {value!r}")
        out[key] = float(value)
    if out["temperature"] <= 0:
        raise ValueError(f"parent selection temperature must be > 0, got {out['temperature']}")
    for key in ("fitness_weight", "novelty_weight"):
        if out[key] < 0:
            raise ValueError(f"parent selection {key} must be >= 0, got {out[key]}")
    return out


def _zscore(x: np.ndarray) -> np.ndarray:
    if len(x) < 2:
        return np.zeros_like(x)
    std = x.std()
    if not std > 1e-12:
        return np.zeros_like(x)
    return (x - x.mean()) / std


def _logits(candidates: Sequence[tuple[Genome, float]], space: SearchSpace, w: dict[str, float]) -> np.ndarray:
    """Selection logits (score / temperature); -inf for candidates without a usable fitness."""
    if not candidates:
        raise ValueError("no candidates to select parents from")
    genomes = [g for g, _ in candidates]
    fitness = np.array([float(f) for _, f in candidates])
    if np.any(np.isposinf(fitness)):
        raise ValueError("a candidate has fitness +inf; fitness must be finite (or -inf/NaN for unusable)")
    usable = np.isfinite(fitness)
    logits = np.full(len(candidates), -math.inf)
    if not usable.any():  # nothing measured: all equally likely
        return np.zeros(len(candidates))
    idx = np.flatnonzero(usable)
    score = w["fitness_weight"] * _zscore(fitness[idx])
    if w["novelty_weight"] != 0.0 and len(idx) > 1:
        d = _pairwise([genomes[i] for i in idx], space)
        nov = d.sum(axis=1) / (len(idx) - 1)  # mean distance to the others (diagonal is 0)
        score = score + w["novelty_weight"] * _zscore(nov)
    logits[idx] = score / w["temperature"]
    return logits


def _probs(logits: np.ndarray) -> np.ndarray:
    finite = np.isfinite(logits)
    out = np.zeros(len(logits))
    if not finite.any():
        return out
    e = np.exp(logits[finite] - logits[finite].max())
    out[finite] = e / e.sum()
    return out


def selection_weights(candidates: Sequence[tuple[Genome, float]], space: SearchSpace,
                      fitness_weight: float = 1.0, novelty_weight: float = 0.3,
                      temperature: float = 0.5) -> list[float]:
    """Selection probability of each (genome, fitness) candidate; they sum to 1.

    Candidates whose fitness is NaN or -inf (unmeasured, failed) get 0 unless none is usable, in
    which case all are equally likely. Novelty is measured among the usable candidates."""
    w = _check_weights({"fitness_weight": fitness_weight, "novelty_weight": novelty_weight,
                        "temperature": temperature})
    return [float(p) for p in _probs(_logits(candidates, space, w))]


def select_parents(candidates: Sequence[tuple[Genome, float]], k: int, rng: random.Random,
                   space: SearchSpace, **weights: Any) -> list[Genome]:
    """Draw `k` parents with replacement, with `selection_weights` probabilities (one
    `rng.random()` per draw). For k == 2 the second parent is drawn among the genomes other than
    the first (by id, probabilities renormalised) whenever another genome is available, so
    crossover gets two distinct parents; it may then be a candidate with zero weight."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    w = _check_weights(weights)
    logits = _logits(candidates, space, w)
    probs = _probs(logits)
    if k == 0:
        return []
    genomes = [g for g, _ in candidates]
    picks = [sample_index(rng, probs) for _ in range(k)]
    if k == 2:
        first_id = genomes[picks[0]].id
        others = [i for i, g in enumerate(genomes) if g.id != first_id]
        if others and genomes[picks[1]].id == first_id:
            sub = np.array([logits[i] for i in others])
            if not np.isfinite(sub).any():  # only unusable others left: take them uniformly
                sub = np.zeros(len(others))
            picks[1] = others[sample_index(rng, _probs(sub))]
    return [genomes[i] for i in picks]


class FitnessNovelty:
    """Parent selection by fitness and novelty (see `select_parents`): the default."""

    name = "fitness_novelty"

    def __init__(self, fitness_weight: float = 1.0, novelty_weight: float = 0.3, temperature: float = 0.5):
        self.weights = _check_weights({"fitness_weight": fitness_weight, "novelty_weight": novelty_weight,
                                       "temperature": temperature})

    def select(self, candidates: Sequence[tuple[Genome, float]], k: int, rng: random.Random,
               space: SearchSpace) -> list[Genome]:
        return select_parents(candidates, k, rng, space, **self.weights)


class UniformParents:
    """Parents drawn uniformly among the measured candidates (an ablation baseline)."""

    name = "uniform"

    def select(self, candidates: Sequence[tuple[Genome, float]], k: int, rng: random.Random,
               space: SearchSpace) -> list[Genome]:
        usable = [g for g, f in candidates if math.isfinite(f)] or [g for g, _ in candidates]
        return [usable[int(rng.random() * len(usable))] for _ in range(k)] if usable else []


def parent_selection_registry() -> Registry:
    """A fresh registry of parent selections; plug-ins are classes with select(candidates, k, rng, space)."""
    return Registry("parent selection", {FitnessNovelty.name: FitnessNovelty, UniformParents.name: UniformParents},
                    check=class_with("select"))


@dataclass(frozen=True)
class FailedGenome:
    """A genome whose build or check failed on the shape, and why: what a fix operator works on."""

    genome: Genome
    status: str
    reason: "str | None"
    log: "str | None"

    def summary(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "log": self.log}


def failed_parents(failed: Sequence[FailedGenome], family: str, k: int, rng: random.Random,
                   tried: Mapping[str, int], recent: int = 8) -> "list[FailedGenome] | None":
    """`k` distinct parents (at least one) for an operator that repairs failures: drawn among the
    `recent` latest failed genomes of `family`, those handed to a fix operator the fewest times
    (`tried`) first, so that one stubborn failure does not take every attempt. None when there are
    not enough."""
    k = max(1, k)
    pool: list[FailedGenome] = []
    seen: set[str] = set()
    for f in reversed(failed):
        if f.genome.family == family and f.genome.id not in seen:
            seen.add(f.genome.id)
            pool.append(f)
            if len(pool) == recent:
                break
    if len(pool) < k:
        return None
    pool.sort(key=lambda f: tried.get(f.genome.id, 0))  # stable: the most recent first among equals
    least = tried.get(pool[0].genome.id, 0)
    fresh = [f for f in pool if tried.get(f.genome.id, 0) == least]
    return rng.sample(fresh if len(fresh) >= k else pool[:k], k)
