"""wg_split n: the cooperative schedule's two consumer warpgroups side by side along N (space revision 2).

Its rules, the tile M choices it brings (192, 320, 448) and how campaigns created before it keep their
draws, its source (a CuTe TiledMma and a 64 x tile N epilogue subtile instead of CUTLASS's builders) and
its simulator model. That the kernels build and pass the gate is the gpu tests' and `evogemm bench`'s part.
"""

import random
from dataclasses import replace

import pytest

from genome import Genome, InvalidGenome, ParamSpec
from genome import sm90_cutlass_space as sm90
from templates import get_space, render

SPACE = get_space("sm90_cutlass")
SWAPAB = get_space("sm90_swapab")


def split_n(family="sm90_cutlass", **changes):
    space = get_space(family)
    params = dict(space.default_params(), schedule="cooperative", wg_split="n", tile_m=192, tile_n=128, tile_k=64)
    params.update(changes)
    return Genome.make(family, space.canonical(params))


def test_a_split_n_genome_is_valid_names_it_and_keeps_older_ids():
    genome = SPACE.validate(split_n())
    assert genome.param_dict["wg_split"] == "n" and SPACE.params_of(genome)["tile_m"] == 192
    old = SPACE.validate(split_n(wg_split="m", tile_m=128))
    assert "wg_split" not in old.param_dict                         # the default is not named: ids as before
    for tile_m in (128, 192, 256, 320):
        assert SPACE.is_valid(split_n(tile_m=tile_m, tile_n=128, cluster_n=2)), tile_m
    assert SWAPAB.is_valid(split_n("sm90_swapab", tile_m=448, tile_n=64, cluster_n=2))
    assert not SWAPAB.is_valid(split_n("sm90_swapab", tile_m=448, tile_n=64))   # 448 rows in one TMA box
    # C^T column-major: the epilogue subtile's swizzle atoms run along M, so any tile N splits (C row-major:
    # 128 and 256 only, whole 64-column atoms a warpgroup)
    assert SWAPAB.is_valid(split_n("sm90_swapab", tile_n=192)) and not SPACE.is_valid(split_n(tile_n=192))
    assert [n for n in sm90.PARAMS[2].choices if SPACE.is_valid(split_n(tile_m=128, tile_n=n))] == [128, 256]


@pytest.mark.parametrize("changes, rule, words", [
    (dict(wg_split="m"), "tile-m-wg-split", "needs the cooperative schedule with wg_split n"),
    (dict(wg_split="m", tile_m=320, tile_n=64), "tile-m-wg-split", "tile M 320"),
    (dict(schedule="pingpong", tile_n=64), "wg-split-n", "split of the cooperative schedule"),
    (dict(tile_m=128, scheduler="streamk"), "wg-split-n", "persistent tile scheduler"),
    (dict(tile_m=128, epilogue="nosmem"), "wg-split-n", "TMA epilogue"),
    (dict(tile_m=128, epilogue_tile="128x64"), "wg-split-n", "its own subtile"),
    (dict(tile_m=64), "cooperative-tile-m", "tile M >= 128"),
    (dict(tile_m=448, tile_n=128), "accumulator-registers", "224 fp32 accumulator registers"),
    (dict(tile_n=192), "wg-split-n", "tile N 128 or 256"),
    (dict(tile_m=320, cluster_m=2), "tma-box", "320 rows in one TMA box"),
])
def test_each_wg_split_rule_is_named_and_repaired(changes, rule, words):
    genome = split_n(**changes)
    with pytest.raises(InvalidGenome) as info:
        SPACE.validate(genome)
    assert rule in [v.rule for v in info.value.violations] and words in str(info.value)
    for seed in range(10):
        fixed = SPACE.params_of(SPACE.repair(genome, random.Random(seed)))
        assert SPACE.is_valid(Genome.make("sm90_cutlass", SPACE.canonical(fixed)))
        assert fixed["tile_m"] in (64, 128, 256) or fixed["wg_split"] == "n"


def test_the_epilogue_subtile_and_shared_memory_of_a_split_n_tile():
    params = SPACE.params_of(SPACE.validate(split_n(tile_m=320, tile_n=128, cluster_n=2)))
    assert sm90.split_n(params) and sm90.epilogue_tile(params) == (64, 128)
    assert sm90.epilogue_smem_bytes(params) == 2 * 64 * 128 * 2 + 256
    assert sm90.acc_regs_per_thread(params) == 320 * 128 // 256
    as_m = dict(params, wg_split="m", tile_m=256)
    assert not sm90.split_n(as_m) and sm90.epilogue_tile(as_m) == (128, 32)


def test_a_split_n_kernel_renders_its_own_mainloop_and_epilogue():
    source = render(SPACE.validate(split_n(tile_m=192, tile_n=128))).source
    assert "Layout<Shape<_1, _2, _1>>" in source and "Shape<_192, _64, _64>" in source
    assert "using EpilogueTile = Shape<_64, _128>;" in source and "Sm90TmaBuilderImpl" in source
    assert "using TileShape = Shape<_192, _128, _64>;" in source
    assert "#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED" not in source      # each WGMMA is 64 wide: a base width
    narrow = render(SWAPAB.validate(split_n("sm90_swapab", tile_m=128, tile_n=96))).source   # 48 wide: not a base width
    assert "#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED" in narrow
    as_m = render(SPACE.validate(split_n(wg_split="m", tile_m=128))).source
    assert "Layout<Shape<_1, _2, _1>>" not in as_m and "collective::CollectiveBuilder<" in as_m
    swapab = render(SWAPAB.validate(split_n("sm90_swapab", tile_m=448, tile_n=64, cluster_n=2))).source
    assert "Layout<Shape<_1, _2, _1>>" in swapab and "LayoutA = cutlass::layout::RowMajor;        // W[N,K]" in swapab


def test_families_whose_templates_do_not_build_it_keep_the_choices_they_had():
    for family in ("sm90_lean", "sm90_padded", "sm90_splitk", "sm90_cpasync"):
        space = get_space(family)
        assert space.spec("wg_split").choices == ("m",) and 192 not in space.spec("tile_m").choices, family
        assert space.as_of(1).params == space.as_of(3).params and space.as_of(1).rules == space.as_of(3).rules
    assert SPACE.spec("tile_m").choices == (64, 128, 192, 256, 320, 448)
    assert "wg_split" in SWAPAB.names and SWAPAB.spec("wg_split").choices == ("m", "n")


def test_added_choices_are_checked_and_left_out_as_of_an_earlier_revision():
    with pytest.raises(ValueError, match="added choice"):
        ParamSpec("x", (1, 2), added=((3, 2),))
    with pytest.raises(ValueError, match="added choice"):
        ParamSpec("x", (1, 2), added=((1, 2),))                  # the default cannot be added later
    spec = ParamSpec("x", (1, 2, 3, 4), added=((2, 1), (4, 2)))
    assert spec.as_of(2) is spec and spec.as_of(1).choices == (1, 2, 3) and spec.as_of(0).choices == (1, 3)


def test_a_campaign_of_revision_1_draws_as_before_the_split():
    """A space as of revision 1 is the space before wg_split existed: the same samples, mutations and
    crossovers from the same seeds, so such a campaign's resume by replay stays as it was."""
    pinned = SPACE.as_of(1)
    at_3 = SPACE.as_of(3)   # before revision 4's clusters of 8 and multicast slices
    before = replace(at_3, params=tuple(replace(p, choices=(64, 128, 256), added=()) if p.name == "tile_m" else p
                                        for p in at_3.params if p.name != "wg_split"))
    assert pinned.spec("wg_split").choices == ("m",) and pinned.spec("tile_m").choices == (64, 128, 256)
    for seed in range(40):
        a, b = random.Random(seed), random.Random(seed)
        x, y = pinned.sample(a), before.sample(b)
        assert x == y
        assert pinned.mutate(x, a, n_changes=2) == before.mutate(y, b, n_changes=2)
        assert pinned.crossover(x, pinned.sample(a), a) == before.crossover(y, before.sample(b), b)
        assert a.random() == b.random()
    # the current space reaches the split and its tile M choices through search moves
    rng = random.Random(3)
    parent = SPACE.validate(split_n(wg_split="m", tile_m=256, tile_n=128))
    seen = {SPACE.params_of(SPACE.mutate(parent, rng, n_changes=2))["tile_m"] for _ in range(300)}
    assert {192, 320} & seen


def test_the_simulator_counts_the_re_read_a_tile():
    from evaluator.sim_device import SimParams, get_device
    from evaluator.sim_sm90 import mma_iteration_us
    from evaluator.simulator import simulate_time_us
    dev, sp = get_device("h200"), SimParams()
    wide = mma_iteration_us(256, 128, 64, "cooperative", 1, sp, dev)
    assert mma_iteration_us(256, 128, 64, "cooperative", 1, sp, dev, split_n=True) > wide
    times = [simulate_time_us(g, "4096x4096x4096") for g in (split_n(tile_m=256), split_n(wg_split="m", tile_m=256))]
    assert times[0] > times[1] > 0
    assert simulate_time_us(split_n("sm90_swapab", tile_m=448, tile_n=64, cluster_n=2), "128x28672x4096") > 0
