import json
import random

import pytest

from genome import Genome, InvalidGenome, Patch, Problem
from templates import get_space
from genome.operators import OperatorContext, ParamCrossover, ParamMutate, RandomSample, apply_operator

SPACE = get_space("sm90_cutlass")


def good(**changes):
    params = dict(SPACE.default_params(), schedule="cooperative", tile_m=128, tile_n=256, tile_k=64)
    params.update(changes)
    return Genome.make("sm90_cutlass", params)


def test_problem_parse_and_errors():
    assert Problem.parse("4096x1024x512") == Problem(4096, 1024, 512)
    assert Problem.parse([8, 16, 32]).name == "8x16x32"
    assert Problem(2, 3, 4).flops == 48
    for bad in ("4096x1024", "axbxc", "0x8x8", "-1x8x8"):
        with pytest.raises(ValueError):
            Problem.parse(bad)


def test_genome_json_round_trip_and_stable_id():
    g = good().with_patch(Patch("epilogue", "// custom\n", note="why"))
    again = Genome.from_json(g.to_json())
    assert again == g and again.id == g.id and hash(again) == hash(g)
    # The id is a content hash: it must not change between releases or processes.
    assert good().id == Genome.make("sm90_cutlass", json.loads(good().to_json())["params"]).id
    assert len(g.id) == 16 and g.id != good().id
    # Parameter order does not matter; values do.
    reordered = Genome.make("sm90_cutlass", dict(reversed(list(good().param_dict.items()))))
    assert reordered.id == good().id
    assert good(tile_n=128).id != good().id


def test_genome_rejects_bad_json():
    with pytest.raises(ValueError, match="not valid JSON"):
        Genome.from_json("{nope")
    with pytest.raises(ValueError, match="unknown genome keys"):
        Genome.from_dict({"family": "sm90_cutlass", "params": {}, "colour": 1})
    with pytest.raises(ValueError, match="does not match its content") as stale:
        Genome.from_dict({"family": "sm90_cutlass", "params": {"tile_m": 128}, "id": "0" * 16})
    import pickle
    back = pickle.loads(pickle.dumps(stale.value))  # it crosses process pools whole, with the content it holds
    assert str(back) == str(stale.value) and back.genome == stale.value.genome
    with pytest.raises(TypeError):
        Genome.make("sm90_cutlass", {"tile_m": 1.5})


@pytest.mark.parametrize("changes, rule, words", [
    (dict(schedule="cooperative", tile_m=64), "cooperative-tile-m", "cooperative schedule needs tile M >= 128"),
    (dict(schedule="pingpong", tile_m=128, tile_n=128, scheduler="streamk"), "pingpong-streamk",
     "ping-pong cannot use the stream-K scheduler"),
    (dict(cluster_m=4, cluster_n=4, tile_n=128), "cluster-size", "cluster of 16 CTAs exceeds 8"),
    (dict(tile_m=256, tile_n=256), "accumulator-registers", "accumulator registers"),
    (dict(tile_m=256, tile_n=256, tile_k=128, stages=8, schedule="cooperative"), "smem-capacity", "shared memory"),
    (dict(cluster_m=8, tile_n=208), "multicast-slice", "not a multiple of 4"),
    (dict(splits=4, scheduler="persistent"), "splits-need-streamk", "needs the stream-K scheduler"),
    (dict(tile_n=100), "tile_n-value", "not allowed"),
])
def test_each_rule_is_named_in_the_refusal(changes, rule, words):
    genome = good(**changes)
    with pytest.raises(InvalidGenome) as info:
        SPACE.validate(genome)
    names = [v.rule for v in info.value.violations]
    assert rule in names
    assert words in str(info.value)
    fixed = SPACE.repair(genome, random.Random(0))
    assert SPACE.is_valid(fixed)


def test_unknown_parameter_and_patch_block_are_refused():
    with pytest.raises(InvalidGenome, match="no parameter 'colour'"):
        SPACE.validate(Genome.make("sm90_cutlass", dict(good().param_dict, colour="red")))
    with pytest.raises(InvalidGenome, match="patch names block 'nowhere'"):
        SPACE.validate(good().with_patch(Patch("nowhere", "x")))


def test_unaligned_shape_is_refused_with_reason():
    with pytest.raises(InvalidGenome, match="K=1001"):
        SPACE.validate(good(), Problem(1000, 1000, 1001))
    assert SPACE.is_valid(good(), Problem(1000, 1000, 1000))
    assert "N=1001" in SPACE.supports(Problem(64, 1001, 64))


def test_sampling_thousands_all_valid_and_diverse():
    rng = random.Random(7)
    genomes = [SPACE.sample(rng) for _ in range(3000)]
    assert all(SPACE.is_valid(g) for g in genomes)
    assert all(SPACE.normalise(g) == g for g in genomes)
    assert len({g.id for g in genomes}) > 2500
    for name in ("schedule", "tile_n", "scheduler", "cluster_m", "epilogue"):
        assert len({g[name] for g in genomes}) == len(SPACE.spec(name).choices), name


def test_normalisation_merges_ineffective_knobs():
    a = good(scheduler="persistent", reduction="nondeterministic", decomposition="stream_k")
    assert SPACE.normalise(a) == SPACE.normalise(good())
    b = SPACE.normalise(good(scheduler="streamk", splits=4, decomposition="stream_k"))
    assert b["decomposition"] == "split_k"


def test_mutate_crossover_neighbours_stay_valid():
    rng = random.Random(3)
    parent = SPACE.validate(good())
    for _ in range(300):
        child = SPACE.mutate(parent, rng, n_changes=rng.randint(1, 3))
        assert SPACE.is_valid(child) and child.id != parent.id
    other = SPACE.sample(rng)
    for _ in range(100):
        child = SPACE.crossover(parent, other, rng)
        assert SPACE.is_valid(child)
    neighbours = SPACE.neighbours(parent)
    assert neighbours and all(SPACE.is_valid(n) for n in neighbours)
    assert parent.id not in {n.id for n in neighbours}
    assert len({n.id for n in neighbours}) == len(neighbours)
    # neighbours differ from the parent in exactly one parameter before normalisation effects
    assert all(sum(SPACE.params_of(n)[k] != SPACE.params_of(parent)[k] for k in SPACE.names) >= 1 for n in neighbours)


def test_repair_snaps_out_of_range_values():
    g = Genome.make("sm90_cutlass", dict(good().param_dict, tile_n=250, stages=99))
    fixed = SPACE.repair(g, random.Random(0))
    assert fixed["tile_n"] == 256 and SPACE.is_valid(fixed)


def test_classic_operators_through_the_interface():
    rng = random.Random(1)
    problem = Problem(4096, 4096, 4096)
    ctx = OperatorContext(space=SPACE, problem=problem, rng=rng)
    parent, other = SPACE.validate(good()), SPACE.sample(rng)
    for op, parents in ((ParamMutate(n_changes=2), [parent]), (ParamCrossover(), [parent, other]), (RandomSample(), [])):
        kids = apply_operator(op, parents, ctx)
        assert kids and all(SPACE.is_valid(k.genome, problem) for k in kids)
        assert kids[0].operator == op.name
        assert kids[0].parent_ids == tuple(p.id for p in parents)
    # an unaligned problem yields no children rather than invalid ones
    bad_ctx = OperatorContext(space=SPACE, problem=Problem(100, 100, 99), rng=rng)
    assert apply_operator(ParamMutate(), [parent], bad_ctx) == []


# -- implicit parameters: added to a family later, without changing its older genomes ----------------

def test_an_implicit_parameter_at_its_default_is_left_out_so_older_genomes_keep_their_ids():
    from templates import family_registry, render
    old = SPACE.validate(good())                      # made as before epilogue_tile existed
    assert "epilogue_tile" not in old.param_dict and SPACE.params_of(old)["epilogue_tile"] == "auto"
    explicit = Genome.make("sm90_cutlass", dict(old.param_dict, epilogue_tile="auto"))
    assert explicit.id != old.id and SPACE.normalise(explicit).id == old.id  # one canonical form
    source = render(old).source
    assert "EpilogueTileAuto" in source and "epilogue_tile" not in source and render(explicit).source == source
    # every hand-picked seed of every family is canonical already: ids (and so builds) as committed
    for name in family_registry().names():
        fam = family_registry().resolve(name)
        for stem, seed in fam.seeds():
            assert fam.space.normalise(seed).id == seed.id == Genome.load(fam.seeds_dir / f"{stem}.json").id


def test_an_explicit_epilogue_subtile_renders_and_follows_cutlass_rules():
    from templates import render
    coop = SPACE.validate(good(tile_n=192, epilogue_tile="128x96"))
    source = render(coop).source
    assert "Shape<_128, _96>," in source and "EpilogueTileAuto" not in source
    assert '"epilogue_tile": "128x96"' in source                       # the params comment names it
    for bad, rule in ((good(tile_n=192, epilogue_tile="128x96", epilogue="nosmem"), "TMA epilogue"),
                      (good(tile_n=256, epilogue_tile="64x128"), "M must be 128"),
                      (good(schedule="pingpong", tile_n=128, epilogue_tile="128x64"), "M must be 64"),
                      (good(tile_n=256, epilogue_tile="128x96"), "does not divide")):
        found = SPACE.violations(bad)
        assert [v.rule for v in found] == ["epilogue-subtile"] and rule in str(found[0]), found
        assert "epilogue_tile" not in SPACE.repair(bad, random.Random(0)).param_dict   # repaired to auto
    # shared memory counts the larger subtile: auto stages drop where the epilogue takes more
    from genome.sm90_cutlass_space import max_stages
    assert max_stages(SPACE.params_of(coop)) < max_stages(SPACE.params_of(SPACE.normalise(coop.with_params(
        epilogue_tile="auto"))))


def test_search_moves_reach_the_implicit_parameter_and_keep_genomes_canonical():
    rng = random.Random(5)
    parent = SPACE.validate(good())
    seen = set()
    for _ in range(400):
        child = SPACE.mutate(parent, rng, n_changes=rng.randint(1, 3))
        assert child.param_dict.get("epilogue_tile") != "auto"           # the default is never named
        seen.add(SPACE.params_of(child)["epilogue_tile"])
        other = SPACE.sample(rng)
        assert other.param_dict.get("epilogue_tile") != "auto"
        kid = SPACE.crossover(child, other, rng)
        assert SPACE.is_valid(kid) and kid.param_dict.get("epilogue_tile") != "auto"
    assert len(seen) >= 3, seen
    assert any(n.param_dict.get("epilogue_tile") for n in SPACE.neighbours(parent))
    assert all(n.param_dict.get("epilogue_tile") != "auto" for n in SPACE.neighbours(parent))
    # a family derived from sm90_cutlass that pins it to auto: never drawn, never named
    swapab = get_space("sm90_swapab")
    assert swapab.spec("epilogue_tile").choices == ("auto",)
    assert all("epilogue_tile" not in swapab.sample(rng).param_dict for _ in range(50))


# -- space revisions: a campaign searches the parameters it was created with -----------------------

def test_a_space_as_of_an_earlier_revision_pins_later_parameters_and_draws_as_it_did():
    from dataclasses import replace
    from genome import SPACE_REVISION, ParamSpec
    with pytest.raises(ValueError, match="must be implicit"):
        ParamSpec("x", (0, 1), revision=1)
    splitk = get_space("sm90_splitk")
    later = {p.name for p in splitk.params if p.revision > 0 and len(p.choices) > 1}   # wg_split: pinned here
    assert later == {"pdl", "reduce", "cluster_grid", "fixup"} and SPACE_REVISION >= 1 and splitk.as_of(SPACE_REVISION) is splitk
    pinned = splitk.as_of(0)
    at_3 = splitk.as_of(3)   # before revision 4's clusters of 8 and multicast slices
    before = replace(at_3, params=tuple(p for p in at_3.params if p.revision == 0))   # the space without them
    assert all(pinned.spec(n).choices == (splitk.spec(n).choices[0],) for n in later)
    assert get_space("sm80_cutlass").as_of(0) is get_space("sm80_cutlass")          # nothing added: itself
    for seed in range(30):
        a, b = random.Random(seed), random.Random(seed)
        x, y = pinned.sample(a), before.sample(b)
        assert x == y and not later & set(x.param_dict)
        assert pinned.mutate(x, a, n_changes=3) == before.mutate(y, b, n_changes=3)
        assert pinned.crossover(x, pinned.sample(a), a) == before.crossover(y, before.sample(b), b)
        assert a.random() == b.random()                                               # the same draws
    # the current space draws them
    drawn = [splitk.sample(random.Random(s)).param_dict for s in range(60)]
    assert any(d.get("pdl") == 1 for d in drawn) and any(d.get("reduce") == "grouped" for d in drawn)


def test_a_campaign_of_revision_3_keeps_whole_swizzle_atom_slices_and_clusters_of_at_most_4():
    from genome.space import Rule
    lean = get_space("sm90_lean")
    base = dict(schedule="ws", tile_m=64, tile_k=64, cluster_n=1, stages=0, epilogue="tma", scheduler="persistent",
                raster="heuristic", swizzle=1, splits=1, decomposition="heuristic", reduction="deterministic")
    sliced = lean.validate(Genome.make("sm90_lean", dict(base, tile_n=144, cluster_m=4)))   # 36-row slices of B
    eight = lean.validate(Genome.make("sm90_lean", dict(base, tile_n=160, cluster_m=8)))    # 20 rows, 8 CTAs
    old = lean.as_of(3)
    with pytest.raises(InvalidGenome, match=r"\[multicast-slice\] tile N 144 split over cluster M 4 is not a multiple "
                                            r"of 8 rows"):
        old.validate(sliced)
    assert not old.is_valid(eight) and old.spec("cluster_m").choices == (1, 2, 4) == old.spec("cluster_n").choices
    assert lean.spec("cluster_m").choices == (1, 2, 4, 8) and lean.as_of(4) is lean
    rule = next(r for r in lean.rules if r.name == "multicast-slice")
    assert rule.as_of(4) is rule and rule.as_of(3) is rule.before and rule.as_of(0) is rule.before
    assert next(r for r in old.rules if r.name == "multicast-slice") is rule.before
    assert Rule("new", "added at 4", lambda p: None, since=4).as_of(3) is None    # a rule added later: absent
    # the old space draws only what the old rule allows; its repair halves the cluster until it does
    rng = random.Random(0)
    assert all(old.is_valid(old.repair(old.sample(rng), rng)) for _ in range(200))
    assert old.is_valid(old.repair(sliced, rng)) and old.repair(sliced, rng).param_dict["cluster_m"] == 2
