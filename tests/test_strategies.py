"""Search strategies (evolution/strategies.py) and parent selection (evolution/parents.py)."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from evaluator.api import Measurement, Timing
from evolution.parents import distance, novelty, select_parents, selection_weights
from evolution.search import build_strategy, check_strategy_params, strategy_registry, StrategyContext
from evolution.strategies import FAILURE_LOG_US, OptunaTPE, RandomSearch, SearchStrategy
from genome import Genome, ParamSpec, Patch, Problem, SearchSpace
from templates import get_space

SPACE = get_space("sm90_cutlass")
PROBLEM = Problem(4096, 4096, 4096)

# A synthetic "device time": a separable bowl over the ordered parameters (in index space) plus
# a penalty per wrong categorical choice. Its optimum is a valid sm90 genome at 100 us.
TARGET = {"tile_m": 128, "tile_n": 192, "tile_k": 64, "stages": 4, "cluster_m": 2, "cluster_n": 1, "swizzle": 4}
TARGET_CAT = {"schedule": "cooperative", "epilogue": "tma", "raster": "along_n"}


def excess(genome: Genome) -> float:
    """log(time / 100 us) of the synthetic objective; 0 at the optimum."""
    s = 0.0
    for name, best in TARGET.items():
        choices = SPACE.spec(name).choices
        s += ((choices.index(genome[name]) - choices.index(best)) / (len(choices) - 1)) ** 2
    return s + sum(0.25 * (genome[k] != v) for k, v in TARGET_CAT.items())


def measure(genome: Genome, problem: Problem = PROBLEM, status: str = "ok") -> Measurement:
    if status != "ok":
        return Measurement(genome.id, problem.name, status, reason="synthetic failure")
    t = 100.0 * math.exp(excess(genome))
    return Measurement(genome.id, problem.name, "ok", device=Timing(t, t, t, 1))


def drive(strategy, n: int, batch: int = 1, fail=lambda g: False) -> list[str]:
    """ask/tell n genomes in batches; return their ids in order."""
    ids = []
    while len(ids) < n:
        offspring = strategy.ask(min(batch, n - len(ids)))
        assert offspring, "strategy ran dry"
        for child in offspring:
            ids.append(child.genome.id)
            strategy.tell(child, measure(child.genome, status="compile_failed" if fail(child.genome) else "ok"))
    return ids


def best_excess(strategy, n: int) -> float:
    best = math.inf
    for _ in range(n):
        (child,) = strategy.ask(1)
        best = min(best, excess(child.genome))
        strategy.tell(child, measure(child.genome))
    return best


def toy_space() -> SearchSpace:
    return SearchSpace(family="toy", params=(ParamSpec("a", (1, 2)), ParamSpec("b", ("x", "y"), ordered=False)))


# -- RandomSearch ------------------------------------------------------------------------------

def test_random_search_never_repeats_and_stays_valid():
    rs = RandomSearch(SPACE, PROBLEM, seed=0)
    assert isinstance(rs, SearchStrategy)
    ids = drive(rs, 300, batch=7)
    assert len(set(ids)) == 300
    children = rs.ask(20)
    assert all(SPACE.is_valid(c.genome, PROBLEM) for c in children)
    assert all(c.operator == "random" and c.parent_ids == () for c in children)
    assert not {c.genome.id for c in children} & set(ids)


def test_random_search_is_deterministic_per_seed():
    a = [c.genome.id for c in RandomSearch(SPACE, PROBLEM, seed=5).ask(30)]
    b = [c.genome.id for c in RandomSearch(SPACE, PROBLEM, seed=5).ask(30)]
    c = [c.genome.id for c in RandomSearch(SPACE, PROBLEM, seed=6).ask(30)]
    assert a == b and a != c


def test_random_search_exhausts_a_small_space():
    rs = RandomSearch(toy_space(), Problem(8, 8, 8), seed=0, max_retries=200)
    got = rs.ask(10)
    assert len(got) == 4 and len({c.genome.id for c in got}) == 4
    assert rs.ask(1) == []


def test_strategies_refuse_unsupported_problems():
    for cls in (RandomSearch, OptunaTPE):
        with pytest.raises(ValueError, match="aligned"):
            cls(SPACE, Problem(4096, 4095, 4096), seed=0)


# -- OptunaTPE -----------------------------------------------------------------------------------

def test_tpe_beats_random_search_on_a_structured_objective():
    seeds, budget = range(6), 80
    tpe = [best_excess(OptunaTPE(SPACE, PROBLEM, seed=s), budget) for s in seeds]
    rnd = [best_excess(RandomSearch(SPACE, PROBLEM, seed=s), budget) for s in seeds]
    assert statistics.mean(tpe) < 0.7 * statistics.mean(rnd), (tpe, rnd)
    assert sum(t <= r for t, r in zip(tpe, rnd)) >= 4, (tpe, rnd)


def test_tpe_is_deterministic_per_seed_and_never_repeats():
    fail = lambda g: g["tile_k"] == 128  # noqa: E731  (a region that "does not compile")
    a = drive(OptunaTPE(SPACE, PROBLEM, seed=1), 60, batch=3, fail=fail)
    b = drive(OptunaTPE(SPACE, PROBLEM, seed=1), 60, batch=3, fail=fail)
    c = drive(OptunaTPE(SPACE, PROBLEM, seed=2), 60, batch=3, fail=fail)
    assert a == b and a != c
    assert len(set(a)) == len(a)


def test_tpe_hands_out_valid_genomes_and_tells_the_measured_value():
    tpe = OptunaTPE(SPACE, PROBLEM, seed=4, n_startup_trials=5)
    children = []
    for _ in range(40):
        (child,) = tpe.ask(1)
        assert SPACE.is_valid(child.genome, PROBLEM)
        assert child.operator == "optuna_tpe"
        tpe.tell(child, measure(child.genome))
        children.append(child)
    repaired = [c for c in children if c.meta["repaired"]]
    assert repaired, "expected some TPE suggestions to break a rule (cooperative with tile M 64, ...)"
    told = {t.number: t.value for t in tpe._study.trials}
    for child in repaired:  # the suggestion's trial carries the repaired genome's measured value
        assert told[child.meta["trial"]] == pytest.approx(math.log(measure(child.genome).time_us))
    assert tpe.best[0] == pytest.approx(min(math.log(measure(c.genome).time_us) for c in children))


def test_tpe_failures_get_a_penalty_or_fail_state():
    tpe = OptunaTPE(SPACE, PROBLEM, seed=0)
    (child,) = tpe.ask(1)
    tpe.tell(child, measure(child.genome, status="compile_failed"))
    assert tpe._study.trials[-1].value == FAILURE_LOG_US
    strict = OptunaTPE(SPACE, PROBLEM, seed=0, failure_value=None)
    (child,) = strict.ask(1)
    strict.tell(child, measure(child.genome, status="wrong"))
    assert [t.state.name for t in strict._study.trials] == ["FAIL"]


def test_tpe_tell_checks():
    tpe = OptunaTPE(SPACE, PROBLEM, seed=0)
    first, second = tpe.ask(2)
    with pytest.raises(ValueError, match="measurement is of genome"):
        tpe.tell(first, measure(second.genome))
    tpe.tell(first, measure(first.genome))
    with pytest.raises(ValueError, match="already told"):
        tpe.tell(first, measure(first.genome))
    # a genome measured elsewhere (a seed) is added as a finished trial and never asked
    seed = SPACE.sample(random.Random(123))
    from genome import Offspring
    n_trials = len(tpe._study.trials)
    tpe.tell(Offspring(seed, "seed", ()), measure(seed))
    assert len(tpe._study.trials) == n_trials + 1
    assert tpe._study.trials[-1].value == pytest.approx(math.log(measure(seed).time_us))
    assert seed.id not in drive(tpe, 30)


def test_tpe_never_repeats_even_in_a_tiny_space():
    tpe = OptunaTPE(toy_space(), Problem(8, 8, 8), seed=0, n_startup_trials=2, max_retries=10)
    got = []
    for _ in range(6):
        batch = tpe.ask(1)
        for child in batch:
            got.append(child.genome.id)
            tpe.tell(child, Measurement(child.genome.id, "8x8x8", "ok", device=Timing(1.0, 1.0, 1.0, 1)))
    assert len(got) == 4 and len(set(got)) == 4


def make_strategy(name, space, problem, seed, **params):
    factory = strategy_registry().resolve(name)
    check_strategy_params(factory, params, name)
    return build_strategy(factory, StrategyContext(problem=problem, spaces=[space], seed=seed, params=params,
                                                   config=None))


def test_strategy_registry_builds_one_space_strategies_and_refuses_bad_names_and_params():
    assert isinstance(make_strategy("random", SPACE, PROBLEM, 0), RandomSearch)
    assert isinstance(make_strategy("optuna_tpe", SPACE, PROBLEM, 0, n_startup_trials=5), OptunaTPE)
    with pytest.raises(ValueError, match="'n_startup'.*n_startup_trials"):
        make_strategy("optuna_tpe", SPACE, PROBLEM, 0, n_startup=5)
    with pytest.raises(ValueError, match="unknown search strategy"):
        make_strategy("cma", SPACE, PROBLEM, 0)
    with pytest.raises(ValueError, match="'os.path:join' is a function, not a class with ask"):
        make_strategy("os.path:join", SPACE, PROBLEM, 0)


def test_one_space_strategies_take_turns_over_families():
    from dataclasses import replace
    other = replace(SPACE, family="sm90_other")
    strat = make_strategy("random", SPACE, PROBLEM, 3)
    assert isinstance(strat, RandomSearch)
    factory = strategy_registry().resolve("random")
    multi = build_strategy(factory, StrategyContext(problem=PROBLEM, spaces=[SPACE, other], seed=3, params={},
                                                    config=None))
    kids = multi.ask(4)
    assert sorted(k.genome.family for k in kids) == ["sm90_cutlass", "sm90_cutlass", "sm90_other", "sm90_other"]
    for k in kids:
        multi.tell(k, measure(k.genome))


# -- parents -------------------------------------------------------------------------------------

def base_genome(**changes) -> Genome:
    params = dict(SPACE.default_params(), schedule="cooperative", tile_m=128, tile_n=128, tile_k=64)
    params.update(changes)
    return SPACE.validate(Genome.make("sm90_cutlass", params))


def test_novelty_is_a_normalised_distance():
    g = base_genome()
    n_terms = len(SPACE.params) + 1
    assert novelty(g, [g], SPACE) == 0.0
    assert novelty(g, [], SPACE) == 0.0
    ends = distance(base_genome(tile_n=16), base_genome(tile_n=256), SPACE)
    assert ends == pytest.approx(1 / n_terms)  # the two ends of an ordered parameter
    tile_n = next(spec.choices for spec in SPACE.params if spec.name == "tile_n")
    steps, at = len(tile_n) - 1, tile_n.index(128)
    assert distance(g, base_genome(tile_n=256), SPACE) == pytest.approx(((len(tile_n) - 1 - at) / steps) / n_terms)
    assert distance(g, base_genome(tile_n=tile_n[at + 1]), SPACE) == pytest.approx((1 / steps) / n_terms)  # one step
    assert distance(g, base_genome(epilogue="nosmem"), SPACE) == pytest.approx(1 / n_terms)
    assert distance(g, g.with_patch(Patch("epilogue", "// x")), SPACE) == pytest.approx(1 / n_terms)
    far = base_genome(tile_m=256, tile_n=32, tile_k=128, epilogue="nosmem", raster="along_m")
    others = [base_genome(tile_n=160), far]
    assert novelty(g, others, SPACE) == pytest.approx((distance(g, others[0], SPACE) + distance(g, far, SPACE)) / 2)
    assert 0.0 <= novelty(far, [g, others[0]], SPACE) <= 1.0


def cluster_and_outlier():
    """Six near-identical genomes and one far from all of them."""
    cluster = [base_genome(swizzle=s) for s in (1, 2, 4, 8)] + [base_genome(tile_n=160), base_genome(tile_k=32)]
    outlier = base_genome(schedule="pingpong", tile_m=64, tile_n=32, tile_k=128, epilogue="nosmem",
                          raster="along_m", cluster_n=2, stages=3)
    return cluster, outlier


def test_select_parents_favours_fitness():
    genomes = [base_genome(tile_n=n) for n in (32, 64, 96, 128, 192)]
    fitness = [0.0, 0.1, 0.2, 0.3, 1.0]
    candidates = list(zip(genomes, fitness))
    w = selection_weights(candidates, SPACE, novelty_weight=0.0)
    assert sum(w) == pytest.approx(1.0)
    assert w == sorted(w)  # monotone in fitness
    rng = random.Random(0)
    picks = [select_parents(candidates, 1, rng, SPACE)[0].id for _ in range(2000)]
    counts = [picks.count(g.id) for g in genomes]
    assert counts[-1] == max(counts) and counts[-1] > 2 * counts[0]
    # colder is greedier
    assert selection_weights(candidates, SPACE, temperature=0.1)[-1] > w[-1]


def test_novelty_raises_the_chance_of_an_outlier():
    cluster, outlier = cluster_and_outlier()
    candidates = [(g, 0.0) for g in cluster] + [(outlier, 0.0)]
    plain = selection_weights(candidates, SPACE, novelty_weight=0.0)
    novel = selection_weights(candidates, SPACE)  # default novelty_weight 0.3
    assert plain[-1] == pytest.approx(1 / 7)
    assert novel[-1] > 2 * plain[-1]
    # even when it is a little slower than the cluster
    slower = [(g, 0.1) for g in cluster] + [(outlier, 0.0)]
    assert selection_weights(slower, SPACE)[-1] > selection_weights(slower, SPACE, novelty_weight=0.0)[-1]
    rng_a, rng_b = random.Random(1), random.Random(1)
    with_novelty = sum(select_parents(candidates, 1, rng_a, SPACE)[0] == outlier for _ in range(1000))
    without = sum(select_parents(candidates, 1, rng_b, SPACE, novelty_weight=0.0)[0] == outlier for _ in range(1000))
    assert with_novelty > 1.5 * without


def test_k2_returns_distinct_parents():
    a, b, c = base_genome(tile_n=64), base_genome(tile_n=128), base_genome(tile_n=192)
    lopsided = [(a, 10.0), (b, 0.0)]  # the first draw is a nearly always
    rng = random.Random(0)
    for _ in range(200):
        p, q = select_parents(lopsided, 2, rng, SPACE)
        assert p.id != q.id
    dupes = [(a, 1.0), (a, 1.0), (a, 1.0), (c, 0.0)]  # the same genome listed three times
    for _ in range(100):
        p, q = select_parents(dupes, 2, rng, SPACE)
        assert p.id != q.id
    assert select_parents([(a, 0.0)], 2, rng, SPACE) == [a, a]
    assert len(select_parents(lopsided, 5, rng, SPACE)) == 5
    assert select_parents(lopsided, 0, rng, SPACE) == []


def test_select_parents_is_deterministic_and_checks_arguments():
    cluster, outlier = cluster_and_outlier()
    candidates = [(g, 0.05 * i) for i, g in enumerate(cluster + [outlier])]
    draw = lambda: [g.id for g in select_parents(candidates, 4, random.Random(9), SPACE)]  # noqa: E731
    assert draw() == draw()
    with pytest.raises(ValueError, match="'novelty'.*novelty_weight"):
        select_parents(candidates, 2, random.Random(0), SPACE, novelty=0.5)
    with pytest.raises(ValueError, match="temperature"):
        selection_weights(candidates, SPACE, temperature=0.0)
    with pytest.raises(ValueError, match="no candidates"):
        select_parents([], 1, random.Random(0), SPACE)
    # unmeasured / failed candidates (fitness -inf or NaN) are never picked while others exist
    mixed = [(cluster[0], -math.inf), (cluster[1], float("nan")), (outlier, 0.0)]
    assert selection_weights(mixed, SPACE)[:2] == [0.0, 0.0]


def test_tpe_is_told_genomes_that_leave_an_implicit_parameter_at_its_default():
    """A seed or a genome from another strategy names no `epilogue_tile` (its default): TPE encodes it
    with the default instead of failing (it used to raise KeyError on such a tell)."""
    from genome import Offspring
    tpe = OptunaTPE(SPACE, PROBLEM, seed=3)
    seed = SPACE.validate(Genome.make("sm90_cutlass", dict(SPACE.default_params(), schedule="pingpong",
                                                           tile_m=128, tile_n=128)))
    assert "epilogue_tile" not in seed.param_dict
    tpe.tell(Offspring(seed, "seed", ()), measure(seed))
    assert tpe.ask(2)
