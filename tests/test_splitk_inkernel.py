"""sm90_splitk's `reduce: inkernel` without a GPU: its space (rules, normalisation, the revision that added it),
its source, and its simulator price. The GPU side is tests/test_gpu_splitk_inkernel.py."""

import random

import pytest

from genome import Genome, Problem
from templates import family_registry
from templates.render import render

FAMILIES = family_registry()
FAM = FAMILIES.resolve("sm90_splitk")


def _seed(stem: str) -> Genome:
    return dict(FAM.seeds())[stem]


def test_inkernel_is_a_choice_of_reduce_added_at_revision_6_and_drawn_only_from_there():
    space = FAM.space
    assert "inkernel" in space.spec("reduce").choices
    assert "inkernel" not in space.as_of(5).spec("reduce").choices
    assert space.as_of(5).spec("reduce").choices == ("serial", "grouped")
    drawn = {space.sample(random.Random(s)).get("reduce", "serial") for s in range(200)}
    assert "inkernel" in drawn
    old = {space.as_of(5).sample(random.Random(s)).get("reduce", "serial") for s in range(200)}
    assert "inkernel" not in old


def test_inkernel_genomes_take_one_cta_clusters_and_the_neutral_launch_knobs():
    g = _seed("pp_64x128x64_k4_grouped_pdl")
    ik = FAM.space.validate(g.with_params(reduce="inkernel", swizzle=4, epilogue="nosmem"))
    # no reduction launch to make dependent, its own epilogue, an unswizzled scheduler: one id for all of them
    assert ik.get("pdl", 0) == 0 and ik.get("epilogue") == "tma" and ik.get("swizzle") == 1
    assert ik.id == FAM.space.validate(g.with_params(reduce="inkernel", pdl=0)).id
    clustered = _seed("coop_128x256x64_c2x1_k4").with_params(reduce="inkernel")
    assert any(v.rule == "inkernel-clusters" for v in FAM.space.violations(clustered))
    # the serial and grouped genomes keep their ids, pdl and all
    assert FAM.space.validate(g).id == g.id


def test_inkernel_needs_every_work_tile_resident_at_once():
    ik = FAM.space.validate(_seed("pp_64x128x64_k4").with_params(reduce="inkernel"))   # 64x128 tiles, 4 splits
    assert FAM.space.is_valid(ik, Problem(512, 512, 16384))                 # 32 tiles x 4 = 128 work tiles
    bad = FAM.space.violations(ik, Problem(512, 1024, 16384))               # 64 x 4 = 256
    assert [v.rule for v in bad] == ["inkernel-resident"] and "256" not in str(bad[0]) and "64 tiles" in str(bad[0])
    serial = FAM.space.validate(_seed("pp_64x128x64_k4"))
    assert FAM.space.is_valid(serial, Problem(512, 1024, 16384))           # the launch variants: any grid


def test_inkernel_source_has_no_reduction_launch_and_a_cooperative_one_for_the_gemm():
    g = _seed("pp_64x128x64_k4")
    ik = render(FAM.space.validate(g.with_params(reduce="inkernel")), FAMILIES).source
    assert "InKernelReduceEpilogue" in ik and "cudaLaunchAttributeCooperative" in ik
    assert "reduce_splits" not in ik and "griddepcontrol" not in ik
    assert "using ElementD = cutlass::half_t;" in ik and "%%gridid" in ik and "__trap()" in ik
    assert ik.count("int evogemm_run(") == 1 and ik.count("int evogemm_can_implement(") == 1
    plain = render(g, FAMILIES).source
    assert "InKernelReduceEpilogue" not in plain and "cudaLaunchAttributeCooperative" not in plain
    assert FAM.knob_vector(FAM.space.validate(g.with_params(reduce="inkernel"))) == FAM.knob_vector(g)


def test_the_model_prices_inkernel_without_a_launch_and_with_a_chain_of_ksplit_loads():
    from evaluator.sim_device import get_device
    from evaluator.simulator import simulate_time_us
    from evaluator.sim_splitk import INKERNEL_LOAD_US, INKERNEL_WAIT_US, inkernel_reduce_us
    from evaluator.sim_device import SimParams
    dev = get_device("h200")
    g = _seed("pp_64x64x128_k16")                                          # 64x64 tiles, 16 splits
    ik = FAM.space.validate(g.with_params(reduce="inkernel"))
    small = Problem(64, 64, 4096)
    t = inkernel_reduce_us(ik.param_dict, small, SimParams(), dev)
    # 1024 quads of the tile, 16 splits, 128 threads: one quad a thread, 16 loads
    assert t == pytest.approx(INKERNEL_WAIT_US + 16 * INKERNEL_LOAD_US, rel=0.05)
    assert simulate_time_us(ik, small, families=FAMILIES) < simulate_time_us(g, small, families=FAMILIES)
    more = inkernel_reduce_us(ik.with_params(ksplit=8).param_dict, small, SimParams(), dev)
    assert more < t                                                        # fewer splits, a shorter chain
