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


def test_the_model_prices_inkernel_by_its_wait_and_the_bytes_each_thread_moves():
    """Fitted to the H200 (docs/results/h200-splitk-inkernel): dearer than the serial launch where a tile has few
    splits and 128 threads move a 128x128 tile (512x512x16384), cheaper with 64 splits of one 64x64 tile
    (64x64x4096), where the serial reduction's threads walk 64 splits one load after another."""
    from evaluator.simulator import simulate_time_us
    from evaluator.sim_splitk import INKERNEL_THREAD_BYTE_US, INKERNEL_WAIT_US, inkernel_reduce_us
    pp = FAM.space.validate(_seed("pp_128x128x64_k8").with_params(reduce="inkernel"))
    coop = FAM.space.validate(_seed("coop_128x128x64_k8").with_params(reduce="inkernel"))
    assert inkernel_reduce_us(pp.param_dict) == pytest.approx(INKERNEL_WAIT_US + 1024 * INKERNEL_THREAD_BYTE_US)
    assert inkernel_reduce_us(coop.param_dict) < inkernel_reduce_us(pp.param_dict)       # 256 threads share it
    big = Problem(512, 512, 16384)
    assert simulate_time_us(pp, big, families=FAMILIES) > simulate_time_us(_seed("pp_128x128x64_k8"), big,
                                                                           families=FAMILIES)
    small = FAM.space.validate(_seed("pp_64x64x128_k16").with_params(ksplit=64))
    small_ik = FAM.space.validate(small.with_params(reduce="inkernel"))
    tiny = Problem(64, 64, 4096)
    assert simulate_time_us(small_ik, tiny, families=FAMILIES) < simulate_time_us(small, tiny, families=FAMILIES)
