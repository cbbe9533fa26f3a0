"""The built-in template families: spaces, templates, seeds, domains, simulator models, and the
operator that moves genomes between families."""

import random
import re
import shutil

import pytest

from evaluator.simulator import simulate_time_us
from genome import FamilyJump, Genome, OperatorContext, Problem, apply_operator
from templates import family_registry, render, template_blocks

FAMILIES = family_registry()
UNRENDERED = re.compile(r"\{\{\s*\w|\{%-?\s*(block|endblock|if|endif|for|raw|endraw|extends)\b")
NAMES = ("sm90_cutlass", "skinny_mma", "sm90_padded", "sm80_cutlass", "sm90_splitk", "sm90_lean", "sm90_cpasync",
         "sm90_swapab", "skinny_tma", "stream_wgmma", "sm90_swapab_splitk")


@pytest.mark.parametrize("name", NAMES)
def test_each_family_renders_its_space_and_ships_valid_seeds(name):
    fam = FAMILIES.resolve(name)
    space = fam.space
    assert sorted(space.blocks) == template_blocks(name, FAMILIES)
    rng = random.Random(5)
    sources = set()
    for _ in range(150):
        kernel = render(space.sample(rng), FAMILIES)
        assert not UNRENDERED.search(kernel.source)
        assert f'evogemm_family(void) {{ return "{name}"; }}' in kernel.source
        assert len(kernel.knobs) == len(fam.knob_vector(space.sample(rng)))
        sources.add(kernel.source)
    assert len(sources) > 20
    seeds = fam.seeds()
    assert len(seeds) >= 5 and all(g.family == name for _, g in seeds)


def test_family_domains_say_why_a_shape_is_not_theirs():
    sk, pad, sm90, sm80 = (FAMILIES.resolve(n).space for n in ("skinny_mma", "sm90_padded", "sm90_cutlass",
                                                                "sm80_cutlass"))
    assert sk.supports(Problem(16, 4096, 14336)) is None
    assert sk.supports(Problem(8192, 64, 8192)) is None          # skinny N streams A instead
    assert sk.supports(Problem(1, 8191, 4096)) is None           # any N, M
    assert "min(M, N) <= 256" in sk.supports(Problem(512, 512, 4096))
    assert sk.supports(Problem(16, 4096, 4095)) is None          # any K since space revision 7
    assert "multiple of 8" in sk.as_of(6).supports(Problem(16, 4096, 4095))
    assert "aligned" in pad.supports(Problem(1024, 1024, 1024))
    assert pad.supports(Problem(1023, 1023, 1024)) is None and pad.supports(Problem(1000, 1000, 999)) is None
    assert "TMA" in sm90.supports(Problem(1000, 1000, 999))
    # sm80: the alignment is a genome parameter; K = 999 needs align_ab 1
    odd = Problem(1000, 1000, 999)
    g = Genome.make("sm80_cutlass", dict(sm80.default_params(), align_ab=8, align_c=8))
    assert any("align_ab" in str(v) for v in sm80.violations(g, odd))
    g1 = sm80.repair(g.with_params(align_ab=1, align_c=8), random.Random(0))
    assert g1["stages"] == 2 and not sm80.violations(g1, odd)


def test_skinny_rules_bound_registers_threads_and_shared_memory():
    sk = FAMILIES.resolve("skinny_mma").space
    big = Genome.make("skinny_mma", dict(warp_rows=64, warps_r=4, warps_k=8, s_tile=64, unroll=8, cluster_k=1,
                                         prefetch=1))
    rules = {v.rule for v in sk.violations(big)}
    assert {"registers", "threads", "smem-capacity"} <= rules
    fixed = sk.repair(big, random.Random(1))
    assert not sk.violations(fixed)


def test_skinny_k_interleave_and_l2_prefetch_render_only_when_asked():
    """The K splits in turn (k_interleave) and the L2 prefetch size of X's loads: implicit parameters of
    revision 3, so a genome that names neither keeps its id and its source; a campaign of revision 2 has them
    pinned; the interleaved loop steps over every split's group and runs to K."""
    from genome import SPACE_REVISION
    sk = FAMILIES.resolve("skinny_mma").space
    base = dict(warp_rows=16, warps_r=1, warps_k=4, s_tile=16, unroll=2, prefetch=1, cluster_k=2)
    plain = sk.validate(Genome.make("skinny_mma", base))
    same = sk.validate(Genome.make("skinny_mma", dict(base, k_interleave=0, l2_prefetch=256)))
    assert plain.id == same.id == "d0fb942b6c360fae"          # the public record's kernel at 16x4096x14336
    src = render(plain, FAMILIES).source
    assert "L2::256B" in src and "kStride" not in src and "const int kb = split * per * 32;" in src
    inter = render(sk.validate(Genome.make("skinny_mma", dict(base, k_interleave=1, l2_prefetch=128))),
                   FAMILIES).source
    assert "L2::128B" in inter and "L2::256B" not in inter
    assert "const int kStride = nsplit * kStep;" in inter and "const int ke = K;" in inter
    assert "k0 += 2 * kStride" in inter and "load_group(k0 + kStride, xb, yb)" in inter
    unrolled = render(sk.validate(Genome.make("skinny_mma", dict(base, prefetch=0, k_interleave=1))),
                      FAMILIES).source
    assert "k0 += kStride" in unrolled and "L2::256B" in unrolled
    assert SPACE_REVISION >= 3
    old = sk.as_of(2)
    assert {p.name: p.choices for p in old.params if p.name in ("k_interleave", "l2_prefetch")} == {
        "k_interleave": (0,), "l2_prefetch": (256,)}
    assert not old.is_valid(Genome.make("skinny_mma", dict(base, k_interleave=1)))


def test_skinny_model_prices_the_stream_pattern_as_measured():
    """Interleaved splits with 128-byte prefetches stream a little faster than contiguous ones with 256
    (the kernels as they ran on the H200), interleaved with 256 bytes slower, contiguous with 128 slower still."""
    sk = FAMILIES.resolve("skinny_mma").space
    base = dict(warp_rows=16, warps_r=1, warps_k=4, s_tile=16, unroll=2, prefetch=1, cluster_k=2)
    t = {(il, pf): simulate_time_us(sk.validate(Genome.make("skinny_mma", dict(base, k_interleave=il, l2_prefetch=pf))),
                                    "16x4096x14336", families=FAMILIES)
         for il in (0, 1) for pf in (256, 128)}
    assert t[(1, 128)] < t[(0, 256)] < t[(1, 256)] < t[(0, 128)]


def test_skinny_model_prices_waves_of_ctas_one_after_another():
    """Model revision 2: a skinny_mma grid of many waves of short CTAs pays each CTA's chain of load rounds and
    reductions once per wave. On the H200, 3584 one-group CTAs in clusters of 4 (27 waves) took 119 us at
    8x14336x4096, 3.5x the 896 CTAs of one wave (34.3 us); revision 1 priced the two alike."""
    from dataclasses import replace
    from evaluator.sim_device import get_device
    sk = FAMILIES.resolve("skinny_mma").space
    waves = sk.validate(Genome.make("skinny_mma", dict(warp_rows=16, warps_r=1, warps_k=8, s_tile=16, unroll=4,
                                                       prefetch=1, cluster_k=4)))
    one = sk.validate(Genome.make("skinny_mma", dict(warp_rows=16, warps_r=1, warps_k=4, s_tile=16, unroll=2,
                                                     prefetch=1, cluster_k=1)))
    new, old = get_device("h200"), replace(get_device("h200"), model_revision=1)
    t = {(name, rev): simulate_time_us(g, "8x14336x4096", device=dev, families=FAMILIES)
         for name, g in (("waves", waves), ("one", one)) for rev, dev in ((2, new), (1, old))}
    assert t[("waves", 2)] > 2.0 * t[("one", 2)]
    assert t[("waves", 1)] < 1.1 * t[("one", 1)] and t[("one", 1)] == pytest.approx(t[("one", 2)])


def test_skinny_model_ranks_the_committed_decode_bench_within_each_shape():
    """The 336 runs of 42 decode kernels at 8 shapes of docs/results/h200-skinny-stream/bench (six vendor
    baselines, the gate): the model ranks them within a shape (Spearman 0.53; 0.06 before revision 2) and
    its three fastest contain a kernel within 10% of the measured best (geomean; 13% before)."""
    import json
    import math
    from pathlib import Path
    from evaluator.sim_fit import rank_report
    path = Path(__file__).resolve().parent.parent / "docs" / "results" / "h200-skinny-stream" / "bench" / "bench.json"
    if not path.is_file():
        pytest.skip("the committed decode bench is not in this checkout")
    records = [{"genome": k["genome"], "problem": s["problem"], "time_us": k["measurement"]["device"]["median_us"]}
               for s in json.loads(path.read_text())["shapes"] for k in s["kernels"]
               if k["measurement"]["status"] == "ok" and k["genome"]["family"] == "skinny_mma"]
    assert len(records) == 336
    assert rank_report(records)["spearman_within_shape_mean"] > 0.45
    by_shape: dict = {}
    for r in records:
        by_shape.setdefault(r["problem"], []).append(r)
    ratios = []
    for shape, rs in by_shape.items():
        top3 = sorted(rs, key=lambda r: simulate_time_us(Genome.from_dict(r["genome"]), shape, families=FAMILIES))[:3]
        ratios.append(min(r["time_us"] for r in top3) / min(r["time_us"] for r in rs))
    assert math.exp(sum(map(math.log, ratios)) / len(ratios)) < 1.10


def test_padded_family_extends_sm90_and_keeps_its_blocks_patchable():
    pad = FAMILIES.resolve("sm90_padded")
    g = pad.seeds()[0][1]
    src = render(g, FAMILIES).source
    assert "KernelTmaWarpSpecialized" in src and "pad_k_kernel" in src and "unpad_n_kernel" in src
    assert src.count("int evogemm_run(") == 1
    from genome import Patch
    patched = render(g.with_patch(Patch("epilogue", "// my epilogue\n")), FAMILIES).source
    assert "// my epilogue" in patched and "pad_k_kernel" in patched


@pytest.mark.parametrize("name,shape", [("skinny_mma", "16x4096x14336"), ("skinny_mma", "64x64x4096"),
                                        ("sm90_padded", "4096x4093x4096"), ("sm80_cutlass", "1000x1000x999"),
                                        ("sm80_cutlass", "512x512x16384")])
def test_simulator_models_never_beat_the_roofline(name, shape):
    from evaluator.sim_device import get_device
    problem = Problem.parse(shape)
    dev = get_device("h200")
    floor = max(problem.flops / (dev.peak_tflops * 1e6), problem.min_bytes / (dev.hbm_tbps * 1e6))
    fam = FAMILIES.resolve(name)
    times = []
    for _, g in fam.seeds():
        if fam.space.is_valid(g, problem):
            t = simulate_time_us(g, problem, families=FAMILIES)
            assert t > floor
            times.append(t)
    assert times and (len(times) < 3 or len(set(round(t, 3) for t in times)) > 1)  # it tells seeds apart


def test_family_jump_moves_a_parent_into_another_family_that_fits_the_shape():
    problem = Problem(1023, 1023, 1024)   # N unaligned: sm90_padded and sm80_cutlass, not sm90_cutlass
    spaces = {n: FAMILIES.resolve(n).space for n in ("sm90_padded", "sm80_cutlass")}
    parent = FAMILIES.resolve("sm90_padded").seeds()[0][1]
    ctx = OperatorContext(space=spaces["sm90_padded"], problem=problem, rng=random.Random(3), spaces=spaces)
    kids = apply_operator(FamilyJump(), [parent], ctx)
    assert len(kids) == 1
    kid = kids[0].genome
    assert kid.family == "sm80_cutlass" and spaces["sm80_cutlass"].is_valid(kid, problem)
    assert kid["tile_m"] == parent["tile_m"] or "tile_m" in kids[0].note
    assert kid["align_c"] in (1,)  # repaired for N = 1023
    # with no other family the operator proposes nothing
    alone = OperatorContext(space=spaces["sm90_padded"], problem=problem, rng=random.Random(3),
                            spaces={"sm90_padded": spaces["sm90_padded"]})
    assert apply_operator(FamilyJump(), [parent], alone) == []


def test_family_jump_carries_an_implicit_parameter_at_its_default_too():
    """A parent that leaves `epilogue_tile` at its default (auto) passes it on like any other parameter
    the two families share: the child does not take a randomly sampled subtile instead."""
    problem = Problem(4096, 4096, 4096)
    spaces = {n: FAMILIES.resolve(n).space for n in ("sm90_splitk", "sm90_cutlass")}
    parent = FAMILIES.resolve("sm90_splitk").seeds()[0][1]
    assert "epilogue_tile" not in parent.param_dict
    for seed in range(40):
        ctx = OperatorContext(space=spaces["sm90_splitk"], problem=problem, rng=random.Random(seed), spaces=spaces)
        for kid in apply_operator(FamilyJump(), [parent], ctx):
            assert kid.genome.family == "sm90_cutlass" and "epilogue_tile" not in kid.genome.param_dict


def test_sm80_split_k_adds_fp32_partials_and_never_fp16_ones():
    fam = FAMILIES.resolve("sm80_cutlass")
    space = fam.space
    base = dict(space.default_params(), tile_m=64, tile_n=64, tile_k=64, warp_m=32, warp_n=32, stages=4,
                align_ab=8, align_c=8)
    par = space.normalise(Genome.make("sm80_cutlass", dict(base, split_mode="parallel", splits=8)))
    none = space.normalise(Genome.make("sm80_cutlass", dict(base, split_mode="none", splits=8)))
    assert none["splits"] == 1 and fam.knob_vector(par) == (8,)   # the knob means nothing without the split
    src = render(par, FAMILIES).source
    assert "kGemmSplitKParallel" in src and "using ElementOut = float;" in src and "reduce_partitions" in src
    plain = render(none, FAMILIES).source
    assert "using ElementOut = cutlass::half_t;" in plain and "constexpr bool kParallelSplitK = false;" in plain
    # no serial split-K anywhere: it would add fp16-rounded partial sums
    assert "set_k_partition" not in src and "GemmUniversalMode::kGemm," in plain


def test_padded_c_can_be_stored_directly_with_the_nosmem_epilogue():
    space = FAMILIES.resolve("sm90_padded").space
    seed = dict(FAMILIES.resolve("sm90_padded").seeds()[0][1].param_dict)
    direct_tma = Genome.make("sm90_padded", dict(seed, epilogue="tma", c_align=2))
    assert any(v.rule == "direct-c-nosmem" for v in space.violations(direct_tma))
    direct = Genome.make("sm90_padded", dict(seed, epilogue="nosmem", c_align=2))
    assert not space.violations(direct, Problem(1536, 6002, 2500))
    assert any("c_align" in str(v) for v in space.violations(direct, Problem(1023, 1023, 1024)))
    src = render(direct, FAMILIES).source
    assert "constexpr int AlignmentD = 2;" in src and "NoSmemWarpSpecialized" in src
    assert "constexpr int AlignmentD = 8;" in render(Genome.make("sm90_padded", dict(seed, c_align=8)), FAMILIES).source


def test_sm90_splitk_splits_k_evenly_into_a_batch_and_reduces_in_fp32():
    fam = FAMILIES.resolve("sm90_splitk")
    space = fam.space
    g = fam.seeds()[0][1]
    assert fam.knob_vector(g)[:5] == tuple(FAMILIES.resolve("sm90_cutlass").knob_vector(
        Genome.make("sm90_cutlass", {k: v for k, v in g.param_dict.items() if k != "ksplit"})))
    assert fam.knob_vector(g.with_params(ksplit=16))[-1] == 16
    assert space.is_valid(g.with_params(ksplit=8), Problem(512, 512, 16384))
    assert "equal parts" in str(space.violations(g.with_params(ksplit=3), Problem(512, 512, 16384))[0])
    assert any(v.rule == "persistent-scheduler"
               for v in space.violations(g.with_params(scheduler="streamk", schedule="cooperative", tile_m=128)))
    src = render(g, FAMILIES).source
    assert "using ElementD = float;" in src and "make_split_arguments" in src and "reduce_splits" in src
    assert src.count("int evogemm_run(") == 1 and "KernelTmaWarpSpecialized" in src


def test_sm90_splitk_reduction_launch_variants_render_only_when_asked():
    """pdl: the GEMM built with grid-dependency control, the reduction launched as its programmatic
    dependent and waiting on the device; reduce grouped: up to 32 threads a quad, shuffles. Both implicit:
    the default genome keeps its id and its source (every earlier build stays valid)."""
    fam = FAMILIES.resolve("sm90_splitk")
    g = fam.seeds()[0][1]
    assert "pdl" not in g.param_dict and "reduce" not in g.param_dict
    plain = render(g, FAMILIES).source
    assert "CUTLASS_ENABLE_GDC_FOR_SM90" not in plain and "griddepcontrol" not in plain
    assert "reduce_splits_grouped" not in plain and "reduce_splits<<<" in plain
    assert fam.space.validate(g.with_params(pdl=0, reduce="serial")).id == g.id
    pdl = render(g.with_params(pdl=1), FAMILIES).source
    assert pdl.index("#define CUTLASS_ENABLE_GDC_FOR_SM90 1") < pdl.index('#include "cutlass/cutlass.h"')
    assert "griddepcontrol.wait" in pdl and "cudaLaunchAttributeProgrammaticStreamSerialization" in pdl
    assert "reduce_splits<<<" not in pdl
    grouped = render(g.with_params(reduce="grouped"), FAMILIES).source
    assert "reduce_splits_grouped<<<" in grouped and "griddepcontrol" not in grouped
    both = render(g.with_params(pdl=1, reduce="grouped"), FAMILIES).source
    assert "cudaLaunchKernelEx(&config, evogemm_reduce::reduce_splits_grouped" in both
    assert both.count("griddepcontrol.wait") == 2
    assert fam.knob_vector(g.with_params(pdl=1, reduce="grouped")) == fam.knob_vector(g)   # compile-time only


def test_a_first_population_smaller_than_the_seeds_holds_every_familys_seeds():
    from evolution.evolve import _round_robin_by_family
    seeds = [(g, "seed", n) for fam in ("sm90_cutlass", "skinny_mma") for n, g in FAMILIES.resolve(fam).seeds()]
    dealt = _round_robin_by_family(seeds)
    assert sorted(id(s) for s in dealt) == sorted(id(s) for s in seeds)
    assert [s[0].family for s in dealt[:4]] == ["sm90_cutlass", "skinny_mma"] * 2
    sm90 = [s for s in dealt if s[0].family == "sm90_cutlass"]
    assert sm90 == [s for s in seeds if s[0].family == "sm90_cutlass"]      # each family keeps its order


def test_sm90_lean_is_the_non_persistent_warp_specialised_schedule():
    fam = FAMILIES.resolve("sm90_lean")
    space = fam.space
    assert space.spec("schedule").choices == ("ws",) and space.spec("scheduler").choices == ("persistent",)
    g = fam.seeds()[0][1]
    src = render(g, FAMILIES).source
    assert "cutlass::gemm::KernelTmaWarpSpecialized;" in src and "Cooperative" not in src and "Pingpong" not in src
    # one consumer warpgroup holds the whole tile's accumulators
    big = g.with_params(tile_m=256, tile_n=256)
    assert any(v.rule == "accumulator-registers" for v in space.violations(big))
    assert fam.knob_vector(g) == (0, 1, 1, 0, 0)


def test_sm90_swapab_runs_sm90_cutlass_on_the_transposed_problem():
    fam, sm90 = FAMILIES.resolve("sm90_swapab"), FAMILIES.resolve("sm90_cutlass")
    assert fam.space.names == sm90.space.names
    assert [r.name for r in fam.space.rules] == [*(r.name for r in sm90.space.rules), "ws-persistent"]
    g = dict(fam.seeds())["coop_256x128x64_c1x2"]
    src = render(g, FAMILIES).source
    # W is the kernel's A operand, A its B operand, the problem (N, M, K), C^T stored column-major
    assert "args.problem_shape = {N, M, K, 1};" in src
    assert "args.mainloop.ptr_A = static_cast<const ElementA*>(B);" in src
    assert "args.mainloop.ptr_B = static_cast<const ElementB*>(A);" in src
    assert "using LayoutD = cutlass::layout::ColumnMajor;" in src
    # the same parameters in sm90_cutlass render the untransposed kernel, with the same knobs
    plain = render(Genome.make("sm90_cutlass", g.param_dict), FAMILIES).source
    assert "args.problem_shape = {M, N, K, 1};" in plain and "using LayoutD = cutlass::layout::RowMajor;" in plain
    assert fam.knob_vector(g) == sm90.knob_vector(Genome.make("sm90_cutlass", g.param_dict))
    # sm90_lean's one-warpgroup, one-CTA-a-tile schedule as a third one
    ws = render(fam.space.validate(g.with_params(schedule="ws", tile_m=128, tile_n=64)), FAMILIES).source
    assert "cutlass::gemm::KernelTmaWarpSpecialized;" in ws and "args.problem_shape = {N, M, K, 1};" in ws
    assert any(v.rule == "ws-persistent" for v in fam.space.violations(g.with_params(schedule="ws", scheduler="streamk")))
    # the hand-picked seeds' fit to a shape reads tile_m along N and tile_n along M
    from evolution.seeding import fits
    assert fam.space.tile_axes == ("n", "m") and sm90.space.tile_axes == ("m", "n")
    wide_m = g.with_params(tile_m=256, tile_n=64)               # 256 along N, 64 along M
    assert fits(wide_m, Problem(16, 4096, 4096), fam.space.tile_axes)
    assert not fits(wide_m, Problem(16, 4096, 4096), sm90.space.tile_axes)
    assert not fits(wide_m, Problem(4096, 16, 4096), fam.space.tile_axes)
    # alignment is K's and N's, as for sm90_cutlass; the simulator times the transposed problem
    assert fam.space.supports(Problem(1000, 1000, 1000)) is None and fam.space.supports(Problem(8, 1000, 64)) is None
    assert "not aligned" in fam.space.supports(Problem(1024, 1023, 1024))
    tall, wide = Problem(4096, 128, 4096), Problem(128, 4096, 4096)
    p = dict(g.param_dict, tile_m=256, tile_n=64, schedule="cooperative", cluster_m=1, cluster_n=1)
    swapped = simulate_time_us(Genome.make("sm90_swapab", p), tall)
    assert swapped == pytest.approx(simulate_time_us(Genome.make("sm90_cutlass", p), wide))
    assert swapped != pytest.approx(simulate_time_us(Genome.make("sm90_cutlass", p), tall))


def test_sm90_swapab_splitk_runs_sm90_splitk_on_the_transposed_problem():
    fam, splitk = FAMILIES.resolve("sm90_swapab_splitk"), FAMILIES.resolve("sm90_splitk")
    assert fam.space.names == splitk.space.names
    assert [r.name for r in fam.space.rules] == [*(r.name for r in splitk.space.rules), "ws-persistent"]
    assert fam.space.spec("fixup").choices == ("launch",) and fam.space.tile_axes == ("n", "m")
    g = dict(fam.seeds())["ws_64x16x64_c4x1_k2"]
    src = render(g, FAMILIES).source
    # the batch of K slices on the kernel's problem (N, M, K): W its A operand, A its B operand, every fp32
    # slice C^T column-major (C's row-major order), added by sm90_splitk's reduction launch unchanged
    assert "args.problem_shape = {N, M, Ks, splits};" in src
    assert "cute::make_shape(N, M, splits)" in src
    assert "args.mainloop.ptr_A = static_cast<const ElementA*>(B);" in src
    assert "using ElementD = float;" in src and "using LayoutD = cutlass::layout::ColumnMajor;" in src
    assert "cutlass::gemm::KernelTmaWarpSpecialized;" in src and "reduce_splits<<<" in src
    assert "InKernelReduceEpilogue" not in src
    # sm90_splitk's kernel of the same parameters is untransposed, its knobs the same
    same = dict(g.param_dict)
    plain = render(splitk.space.validate(Genome.make("sm90_splitk", dict(same, schedule="pingpong"))), FAMILIES).source
    assert "args.problem_shape = {M, N, Ks, splits};" in plain and "cute::make_shape(M, N, splits)" in plain
    assert fam.knob_vector(g) == splitk.knob_vector(Genome.make("sm90_splitk", same))
    # in-kernel fix-up is not of this family; K must split evenly, as in sm90_splitk
    assert not fam.space.is_valid(Genome.make("sm90_swapab_splitk", dict(same, fixup="inkernel")))
    assert fam.space.is_valid(g, Problem(16, 4096, 14336))
    assert "equal parts" in str(fam.space.violations(g.with_params(ksplit=3), Problem(16, 4096, 14336))[0])
    # the model prices sm90_splitk's model of the transposed problem, the ws schedule with sm90_lean's GEMM
    p = dict(same, schedule="cooperative", tile_m=128, tile_n=64, cluster_m=1, cluster_n=1)
    assert simulate_time_us(Genome.make("sm90_swapab_splitk", p), Problem(64, 4096, 8192)) == pytest.approx(
        simulate_time_us(Genome.make("sm90_splitk", p), Problem(4096, 64, 8192)))
    ws_k2 = simulate_time_us(g, Problem(16, 4096, 14336))
    assert ws_k2 > 0 and ws_k2 != pytest.approx(simulate_time_us(g.with_params(ksplit=4), Problem(16, 4096, 14336)))
    from evaluator import sim_lean, sim_sm90, sim_splitk, sim_swapab_splitk
    from evaluator.sim_device import SimParams, get_device
    sp, dev, decode = SimParams(), get_device("h200"), Problem(128, 4096, 14336)
    params = fam.space.params_of(g)
    lean = sim_splitk.model(params, Problem(4096, 128, 14336), sp, dev, inner_model=sim_lean.model).total_us
    assert sim_swapab_splitk.model(params, decode, sp, dev).total_us == pytest.approx(lean)
    assert lean != pytest.approx(sim_splitk.model(params, Problem(4096, 128, 14336), sp, dev,
                                                  inner_model=sim_sm90.model).total_us)
    assert [r.name for r in fam.space.shape_rules] == ["even-split"]


def test_padded_k_pad_is_a_runtime_knob_that_also_opens_aligned_k_with_a_bad_pitch():
    fam = FAMILIES.resolve("sm90_padded")
    seed = dict(fam.seeds()[0][1].param_dict, k_pad=8)
    by8, by64 = Genome.make("sm90_padded", seed), Genome.make("sm90_padded", dict(seed, k_pad=64))
    # one build serves both: k_pad is knob 5, read by the template at run time
    assert fam.knob_vector(by8)[-1] == 8 and fam.knob_vector(by64)[-1] == 64
    assert fam.knob_vector(by8)[:-1] == fam.knob_vector(by64)[:-1]
    assert render(by8, FAMILIES).source == render(by64, FAMILIES).source
    assert "k_pad_of(knobs, n_knobs)" in render(by8, FAMILIES).source
    # K = 1000 is a multiple of 8 (rows of 2000 bytes, not whole 128-byte lines): only k_pad 64 copies
    assert not fam.space.is_valid(by8, Problem(1000, 1000, 1000))
    assert fam.space.is_valid(by64, Problem(1000, 1000, 1000))
    for g in (by8, by64):   # K a multiple of 64 and N aligned: nothing to copy, use sm90_cutlass
        assert any("sm90_cutlass" in str(v) for v in fam.space.violations(g, Problem(1024, 1024, 1024)))
        assert fam.space.is_valid(g, Problem(1000, 1000, 999))
    # the simulator counts the wider copy: 1000x1000x999 is padded to 1024 with k_pad 64, not 1000
    from evaluator.sim_padded import copy_bytes
    p = Problem(1000, 1000, 999)
    assert copy_bytes(p, 64) - copy_bytes(p, 8) == 2.0 * 2000 * (1024 - 1000)
    assert copy_bytes(Problem(1000, 1000, 1000), 8) == 0


def test_padded_ws_schedule_is_sm90_leans_kernel_behind_the_copies():
    fam, lean = FAMILIES.resolve("sm90_padded"), FAMILIES.resolve("sm90_lean")
    ws = dict(fam.seeds()[0][1].param_dict, schedule="ws", scheduler="persistent", tile_m=64, tile_n=128,
              cluster_m=1, cluster_n=1, k_pad=64)
    g = Genome.make("sm90_padded", ws)
    assert not fam.space.violations(g) and fam.space.is_valid(g, Problem(1000, 1000, 999))
    src = render(g, FAMILIES).source
    assert "cutlass::gemm::KernelTmaWarpSpecialized;" in src and "pad_k_kernel" in src
    # the same tile_config text as sm90_lean's kernel of that tile (one include serves both)
    lean_g = Genome.make("sm90_lean", {k: v for k, v in ws.items() if k in lean.space.names})
    tile_config = lambda s: s[s.index("using TileShape"):s.index("using TileScheduler")]
    assert tile_config(src) == tile_config(render(lean_g, FAMILIES).source)
    # stream-K is refused for ws and repaired to the persistent scheduler
    streamk = Genome.make("sm90_padded", dict(ws, scheduler="streamk"))
    assert any(v.rule == "ws-persistent" for v in fam.space.violations(streamk))
    assert fam.space.repair(streamk, random.Random(0))["scheduler"] == "persistent"
    # the other schedules render sm90_cutlass's tile_config as before
    pingpong = dict(fam.seeds())["pp_64x128x64_c1x1"]
    assert "KernelTmaWarpSpecializedPingpong" in render(pingpong, FAMILIES).source


def test_sm90_cpasync_loads_with_cp_async_any_pitch_even_k_and_direct_c():
    fam = FAMILIES.resolve("sm90_cpasync")
    space, seeds = fam.space, dict(fam.seeds())
    # the three schedules are CUTLASS's cp.async warp-specialised kernels; no cluster, no stream-K
    expect = {"ws": "cutlass::gemm::KernelCpAsyncWarpSpecialized;",
              "pingpong": "cutlass::gemm::KernelCpAsyncWarpSpecializedPingpong;",
              "cooperative": "cutlass::gemm::KernelCpAsyncWarpSpecializedCooperative;"}
    for g in seeds.values():
        src = render(g, FAMILIES).source
        assert expect[g["schedule"]] in src and "KernelTma" not in src
        assert "using ClusterShape = Shape<_1, _1, _1>;" in src
        assert f"constexpr int AlignmentA = {g['ab_align']};" in src and f"constexpr int AlignmentD = {g['c_align']};" in src
    assert space.spec("cluster_m").choices == (1,) and space.spec("scheduler").choices == ("persistent",)
    # the domain: any row pitch (K = 1000: 2000-byte rows), K a multiple of ab_align, N of c_align
    ws = seeds["ws_128x64x64"]
    assert space.is_valid(ws, Problem(1000, 1000, 1000)) and space.is_valid(ws, Problem(1024, 1024, 1024))
    assert "ab_align" in str(space.violations(ws, Problem(1536, 6002, 2500)))        # K = 2500: 8-byte rows
    direct = seeds["ws_128x64x64_a4_direct2"]
    assert space.is_valid(direct, Problem(1536, 6002, 2500))
    assert "c_align" in str(space.violations(direct, Problem(1023, 1023, 1024)))
    assert "sm90_padded" in space.supports(Problem(1000, 1000, 999))    # odd K: no 4-byte cp.async
    assert space.supports(Problem(1023, 1023, 1024)) is None            # c_align 1 (nosmem) exists
    # without setmaxnreg every thread has 168 registers: 64 accumulators in a persistent schedule, 128 in ws
    assert not space.violations(seeds["coop_128x128x64"]) and not space.violations(seeds["ws_128x128x64"])
    big = seeds["pp_64x128x64"].with_params(tile_m=128)
    assert any(v.rule == "accumulator-registers" for v in space.violations(big))
    assert not space.violations(space.repair(big, random.Random(1)))
    assert any(v.rule == "accumulator-registers" for v in space.violations(ws.with_params(tile_n=256)))


def test_cpasync_model_pays_less_than_tma_for_rows_that_are_not_whole_lines():
    lean = FAMILIES.resolve("sm90_lean").seeds()
    tma = dict(lean)["ws_128x64x64"]
    cp = dict(FAMILIES.resolve("sm90_cpasync").seeds())["ws_128x64x64"]
    t = {(g.family, k): simulate_time_us(g, Problem(1024, 1024, k), families=FAMILIES) for g in (tma, cp) for k in (1024, 1000)}
    tma_cost = t["sm90_lean", 1000] / t["sm90_lean", 1024]
    cp_cost = t["sm90_cpasync", 1000] / t["sm90_cpasync", 1024]
    assert 1.0 <= cp_cost < tma_cost


def test_splitk_model_reads_all_of_w_once_whatever_the_split():
    from evaluator.sim_device import get_device
    fam = FAMILIES.resolve("sm90_splitk")
    dev = get_device("h200")
    for shape in (Problem(16, 4096, 14336), Problem(64, 64, 4096), Problem(512, 512, 16384)):
        floor_us = 2.0 * (shape.m + shape.n) * shape.k / (dev.hbm_tbps * 1e6)   # A and W leave DRAM once
        for _, g in fam.seeds():
            if fam.space.is_valid(g, shape):
                assert simulate_time_us(g, shape, families=FAMILIES) >= floor_us, (g.short(), shape)


def test_splitk_model_prices_the_reduction_launch_variants():
    """pdl saves a fixed part of the reduction's launch (ping-pong) or costs some (cooperative); the grouped reduction shortens each thread's chain
    of loads only where C has few quads (64x64: 16 threads a quad with 16 splits), and is one thread a quad,
    the serial reduction's time, at 512x512."""
    from evaluator.sim_splitk import PDL_SAVED_US, reduce_groups
    fam = FAMILIES.resolve("sm90_splitk")
    g = fam.seeds()[0][1]
    assert [reduce_groups(64, 64, s, 132) for s in (1, 3, 5, 16, 64)] == [1, 2, 4, 16, 16]
    assert reduce_groups(512, 512, 8, 132) == 1 and reduce_groups(125, 264, 8, 132) == 2
    for shape, ksplit in ((Problem(64, 64, 4096), 16), (Problem(512, 512, 16384), 8)):
        t = {v: simulate_time_us(fam.space.validate(g.with_params(ksplit=ksplit, **p)), shape, families=FAMILIES)
             for v, p in (("serial", {}), ("pdl", {"pdl": 1}), ("grouped", {"reduce": "grouped"}))}
        assert t["serial"] - t["pdl"] == pytest.approx(PDL_SAVED_US[g["schedule"]])
        if shape.m == 64:
            assert t["serial"] - t["grouped"] > 0.5      # 16 loads a thread in place of one
        else:
            assert t["grouped"] == pytest.approx(t["serial"])


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("name", ["skinny_tma", "stream_wgmma"])   # hand-written kernels, seconds a build
def test_every_seed_of_the_hand_written_tma_families_builds_without_spills(tmp_path, name):
    from evaluator.compile import Compiler
    compiler = Compiler.default(tmp_path / "cache")
    genomes = [g for _, g in FAMILIES.resolve(name).seeds()]
    results = compiler.build_many(genomes)
    for g, r in zip(genomes, results):
        assert r.ok and r.spill_bytes == 0, (g.short(), r.reason)
