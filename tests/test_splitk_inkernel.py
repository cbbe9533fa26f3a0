"""sm90_splitk's `fixup: inkernel` without a GPU: its space (rules, normalisation, the revision that added it),
its source, and its simulator price. The GPU side is tests/test_gpu_splitk_inkernel.py."""

import random

import pytest

from genome import Genome, Problem
from templates import family_registry
from templates.render import block_params, block_source, render

FAMILIES = family_registry()
FAM = FAMILIES.resolve("sm90_splitk")


def _seed(stem: str) -> Genome:
    return dict(FAM.seeds())[stem]


def test_fixup_is_a_parameter_of_revision_6_that_older_campaigns_never_draw():
    space = FAM.space
    assert space.spec("fixup").choices == ("launch", "inkernel") and space.spec("fixup").revision == 6
    assert space.as_of(5).spec("fixup").choices == ("launch",)
    assert space.as_of(5).spec("reduce").choices == space.spec("reduce").choices == ("serial", "grouped")
    assert "inkernel" in {space.sample(random.Random(s)).get("fixup", "launch") for s in range(200)}
    assert {space.as_of(5).sample(random.Random(s)).get("fixup", "launch") for s in range(200)} == {"launch"}


def test_only_the_epilogue_and_abi_blocks_name_fixup_and_none_names_reduce_anew():
    """A patch of a block covers the parameters the block names: reduce, drawn since revision 1, must stay out of
    the blocks it was not in (a campaign's patched genomes would mutate differently), and the wait must be in no
    block at all (a patch could drop it)."""
    named = {b: block_params("sm90_splitk", b, FAMILIES) for b in FAM.space.blocks}
    assert {b for b, ps in named.items() if "fixup" in ps} == {"epilogue", "abi"}
    assert {b for b, ps in named.items() if "reduce" in ps} == {"abi"}
    ik = FAM.space.validate(_seed("pp_64x128x64_k4").with_params(fixup="inkernel"))
    source = render(ik, FAMILIES).source
    assert "wait_for(words" in source and "count_in(words" in source
    assert not any("wait_for" in block_source(ik, b, FAMILIES) for b in FAM.space.blocks)
    # the epilogue block names the prelude's class, and the abi block (no patch may touch it) asserts that the GEMM
    # was built with exactly that epilogue: a patch naming another epilogue, or shadowing the namespace, fails to build
    assert "::evogemm_splitk::InKernelReduceEpilogue" in block_source(ik, "epilogue", FAMILIES)
    abi = block_source(ik, "abi", FAMILIES)
    assert "static_assert(cute::is_same_v<typename KernelOp::CollectiveEpilogue," in abi
    assert "KernelOp::TileSchedulerTag, cutlass::gemm::PersistentScheduler" in abi
    plain = render(_seed("pp_64x128x64_k4"), FAMILIES).source
    assert "evogemm_splitk" not in plain and "InKernelReduceEpilogue" not in plain


def test_inkernel_genomes_take_one_cta_clusters_and_fixed_launch_knobs():
    g = _seed("pp_64x128x64_k4_grouped_pdl")
    knobbed = g.with_params(swizzle=4, raster="along_n", epilogue="tma")
    ik = FAM.space.validate(knobbed.with_params(fixup="inkernel"))
    # no reduction launch, its own epilogue with no shared memory, one work tile a CTA on an unswizzled scheduler
    assert (ik.get("pdl", 0), ik.get("reduce", "serial"), ik.get("epilogue"), ik.get("swizzle"), ik.get("raster")) \
        == (0, "serial", "nosmem", 1, "heuristic")
    assert ik.id == FAM.space.validate(_seed("pp_64x128x64_k4").with_params(fixup="inkernel")).id
    assert FAM.knob_vector(ik) != FAM.knob_vector(FAM.space.validate(knobbed))        # its swizzle and raster knobs
    clustered = _seed("coop_128x256x64_c2x1_k4").with_params(fixup="inkernel")
    assert any(v.rule == "inkernel-clusters" for v in FAM.space.violations(clustered))
    assert FAM.space.validate(g).id == g.id                                          # the launch variants keep theirs


def test_inkernel_needs_every_work_tile_resident_at_once():
    ik = FAM.space.validate(_seed("pp_64x128x64_k4").with_params(fixup="inkernel"))  # 64x128 tiles, 4 splits
    assert FAM.space.is_valid(ik, Problem(512, 512, 16384))                 # 32 tiles x 4 = 128 work tiles
    bad = FAM.space.violations(ik, Problem(512, 1024, 16384))               # 64 x 4 = 256
    assert [v.rule for v in bad] == ["inkernel-resident"] and "64 tiles x 4 splits" in str(bad[0])
    serial = FAM.space.validate(_seed("pp_64x128x64_k4"))
    assert FAM.space.is_valid(serial, Problem(512, 1024, 16384))           # the launch variants: any grid


def test_inkernel_source_has_no_reduction_launch_and_a_cooperative_one_for_the_gemm():
    g = _seed("pp_64x128x64_k4")
    ik = render(FAM.space.validate(g.with_params(fixup="inkernel")), FAMILIES).source
    assert "InKernelReduceEpilogue" in ik and "cudaLaunchAttributeCooperative" in ik
    assert "reduce_splits" not in ik and "griddepcontrol" not in ik
    assert "%%gridid" in ik and "__trap()" in ik and "static_assert(evogemm_host::kOneCtaClusters" in ik
    assert ik.count("int evogemm_run(") == 1 and ik.count("int evogemm_can_implement(") == 1
    assert ik.index("namespace evogemm_splitk {") < ik.index("namespace evogemm_kernel {")   # the prelude
    # its protocol's steps are private members: no declaration outside the class can stand in for them
    assert ik.index(" private:") < ik.index("static void wait_for(")


def test_the_model_prices_inkernel_behind_the_launch_except_with_many_splits_of_one_small_tile():
    """As measured on the H200 (docs/results/h200-splitk-inkernel, call 2): dearer than the serial launch where a
    tile has few splits and 128 threads move a 128x128 tile (512x512x16384), cheaper with 64 splits of one 64x64
    tile (64x64x4096), where the serial reduction's threads walk 64 splits one load after another."""
    from evaluator.simulator import simulate_time_us
    from evaluator.sim_splitk import inkernel_reduce_us
    pp = FAM.space.validate(_seed("pp_128x128x64_k8").with_params(fixup="inkernel"))
    coop = FAM.space.validate(_seed("coop_128x128x64_k8").with_params(fixup="inkernel"))
    assert inkernel_reduce_us(coop.param_dict) < inkernel_reduce_us(pp.param_dict)       # 256 threads share it
    big = Problem(512, 512, 16384)
    assert simulate_time_us(pp, big, families=FAMILIES) > simulate_time_us(_seed("pp_128x128x64_k8"), big,
                                                                           families=FAMILIES)
    small = FAM.space.validate(_seed("pp_64x64x128_k16").with_params(ksplit=64))
    small_ik = FAM.space.validate(small.with_params(fixup="inkernel"))
    tiny = Problem(64, 64, 4096)
    assert simulate_time_us(small_ik, tiny, families=FAMILIES) < simulate_time_us(small, tiny, families=FAMILIES)
