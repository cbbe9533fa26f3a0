"""The `skinny_tma` family: its rules, its shape rules, what its template renders, its simulator model against
the prototype's measurements, and (nvcc) every seed builds without spills. Its gate on a GPU is in
tests/test_gpu_families.py (FAMILY_SHAPES)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from evaluator.sim_device import DEVICES, SimParams
from evaluator.sim_skinny_tma import model
from genome import Genome, Problem
from genome import skinny_tma_space as st
from templates import family_registry, render

FAMILIES = family_registry()
FAM = FAMILIES.resolve("skinny_tma")
SPACE = FAM.space
BASE = dict(rows=32, pieces=4, stages=4, consumer_warps=8, ctas_per_sm=1)
H100_RUNS = Path(__file__).resolve().parent.parent / "docs/results/h200-tma-stream/h100-s45/skinny_tma.json"


def make(**changes) -> Genome:
    return Genome.make("skinny_tma", dict(BASE, **changes))


def test_rules_refuse_what_does_not_fit_and_repair_it():
    assert SPACE.is_valid(make())
    too_big = make(rows=64, pieces=16, stages=8)                 # 8 x 160 KB of stages
    assert "smem-capacity" in {v.rule for v in SPACE.violations(too_big)}
    uneven = make(rows=64, consumer_warps=2)                      # 4 groups of 16 rows, 2 warps
    assert "warp-tiling" in {v.rule for v in SPACE.violations(uneven)}
    steps = make(rows=16, pieces=1, consumer_warps=8)             # 8 warps on a stage's 4 k16 steps
    assert "warp-tiling" in {v.rule for v in SPACE.violations(steps)}
    two = make(rows=16, pieces=16, stages=3, consumer_warps=4, ctas_per_sm=2)   # 197 KB twice
    assert "two-ctas" in {v.rule for v in SPACE.violations(two)}
    assert SPACE.is_valid(make(rows=16, pieces=4, stages=6, consumer_warps=4, ctas_per_sm=2))
    for g in (too_big, uneven, steps, two):
        fixed = SPACE.repair(g, random.Random(0))
        assert SPACE.is_valid(fixed)
        assert st.smem_bytes(fixed.param_dict) + st.STATIC_SMEM_BYTES <= st.SMEM_BYTES_PER_BLOCK


def test_shape_rules_small_side_at_most_16_and_k_a_multiple_of_8():
    g = make()
    assert SPACE.is_valid(g, Problem.parse("16x4096x14336"))
    assert SPACE.is_valid(g, Problem.parse("8192x13x4104"))       # A streamed, K off 64
    assert not SPACE.is_valid(g, Problem.parse("17x4096x4096"))
    assert not SPACE.is_valid(g, Problem.parse("16x4096x4095"))
    msgs = " ".join(str(v) for v in SPACE.violations(g, Problem.parse("32x4096x4095")))
    assert "min(M, N) <= 16" in msgs and "multiple of 8" in msgs


def test_every_seed_is_valid_and_the_knob_is_ctas_per_sm():
    seeds = FAM.seeds()
    assert len(seeds) >= 6
    for _, g in seeds:
        assert SPACE.is_valid(g), g
        assert FAM.knobs(g.param_dict) == [g.param_dict["ctas_per_sm"]]
    assert {g.param_dict["ctas_per_sm"] for _, g in seeds} == {1, 2}


def test_render_carries_the_parameters_into_the_config_and_loads_2d_boxes():
    src = render(SPACE.validate(make(rows=64, pieces=2, stages=6, consumer_warps=8)), FAMILIES).source
    for line in ("constexpr int kRows = 64;", "constexpr int kPieces = 2;", "constexpr int kStages = 6;",
                 "constexpr int kConsumerWarps = 8;"):
        assert line in src
    assert "cp.async.bulk.tensor.2d" in src and "CU_TENSOR_MAP_SWIZZLE_128B" in src
    assert 'evogemm_family(void) { return "skinny_tma"; }' in src
    # the encoder is looked up once, the attributes and the SM count once per device
    assert "cudaGetDriverEntryPointByVersion" in src and "per_device<KernelFactsTag>" in src
    other = render(SPACE.validate(make(rows=16, pieces=8, stages=4, consumer_warps=4)), FAMILIES).source
    assert other != src


def test_the_model_prefers_long_runs_and_a_balanced_grid():
    dev, sp = DEVICES["h200"], SimParams()
    shape = Problem.parse("16x4096x14336")
    t = lambda **c: model(dict(BASE, **c), shape, sp, dev).total_us   # noqa: E731
    assert t(pieces=8, stages=3) < t(pieces=1, stages=8)
    # 4096 rows: 64-row boxes give 64 CTAs on 132 SMs, 32-row boxes 128
    assert t(rows=32) < t(rows=64, consumer_warps=8)
    assert model(dict(BASE), shape, sp, dev).dram_bytes >= 2 * 4096 * 14336


@pytest.mark.skipif(not H100_RUNS.is_file(), reason="the prototype's measurements are not in this checkout")
def test_the_model_ranks_the_prototypes_h100_runs():
    """Pooled over 12 decode shapes its rank correlation with the measured times is high (0.88 when fitted), and
    at the six shapes over 40 us its pick is within 5% of the measured best configuration."""
    from scipy.stats import spearmanr
    runs = json.loads(H100_RUNS.read_text())["shapes"]
    dev, sp = DEVICES["h100"], SimParams()
    measured, predicted = [], []
    for shape, r in runs.items():
        meas, pred = [], []
        for name, us in r["median_us"].items():
            m = re.match(r"R(\d+)_D(\d+)_S(\d+)_W(\d+)_g(\d+)", name)
            if not m:
                continue
            rows, pieces, stages, warps, grid = map(int, m.groups())
            blocks = -(-max(map(int, shape.split("x")[:2])) // rows)
            params = dict(rows=rows, pieces=pieces, stages=stages, consumer_warps=warps,
                          ctas_per_sm=1 if grid <= min(blocks, dev.n_sms) else 2)
            meas.append(us)
            pred.append(model(params, Problem.parse(shape), sp, dev).total_us)
        if min(meas) > 40:
            assert meas[pred.index(min(pred))] <= 1.05 * min(meas), shape
        measured += meas
        predicted += pred
    assert spearmanr(measured, predicted).statistic >= 0.8



def test_y_resident_is_implicit_added_at_revision_8_and_bounded_by_k():
    """y_resident (Y's whole K kept in shared memory) leaves older genomes' ids as they were, a campaign created
    before revision 8 searches without it, and a shape rule refuses a K whose Y does not fit beside the ring."""
    old = make(rows=16, pieces=16, stages=3, consumer_warps=4)
    assert old.id.startswith("e4a94592") and "y_resident" not in old.param_dict
    spec = next(p for p in SPACE.params if p.name == "y_resident")
    assert spec.implicit and spec.revision == 8
    assert next(p for p in SPACE.as_of(7).params if p.name == "y_resident").choices == (0,)
    res = make(rows=16, pieces=16, stages=2, consumer_warps=4, y_resident=1)
    assert res.id != make(rows=16, pieces=16, stages=2, consumer_warps=4).id
    # the ring holds X alone: 2 x 32 KB, Y's K of 4096 another 128 KB
    assert st.smem_bytes(res.param_dict) == 2 * 16 * 128 * 16 + 4 * 1024 + 1024
    assert st.y_region_bytes(res.param_dict, 4096) == 4096 * 16 * 2
    assert st.y_region_bytes(res.param_dict, 4100) == 5120 * 16 * 2          # whole stages of 1024 k
    assert st.y_region_bytes(old.param_dict, 4096) == 0
    assert SPACE.is_valid(res, Problem.parse("16x6144x4096"))
    assert SPACE.is_valid(res, Problem.parse("6144x9x4096"))                  # A streamed
    msgs = " ".join(str(v) for v in SPACE.violations(res, Problem.parse("16x4096x14336")))
    assert "y-resident-fits" in msgs and "448 KB" in msgs
    # three stages of 32 KB and Y's 128 KB do not fit; two CTAs an SM with Y resident only at short K
    assert not SPACE.is_valid(make(rows=16, pieces=16, stages=3, consumer_warps=4, y_resident=1),
                              Problem.parse("16x6144x4096"))
    two = make(rows=16, pieces=4, stages=4, consumer_warps=4, ctas_per_sm=2, y_resident=1)
    assert SPACE.is_valid(two, Problem.parse("16x6144x1024"))
    assert not SPACE.is_valid(two, Problem.parse("16x6144x4096"))


def test_y_resident_renders_a_ring_of_x_alone_and_a_k_sized_launch():
    src = render(SPACE.validate(make(rows=16, pieces=8, stages=4, consumer_warps=4, y_resident=1)), FAMILIES).source
    assert "constexpr bool kYResident = true;" in src and "smem_bytes_for(K, S), stream>>>" in src
    assert "kYResident ? kMaxDynamicSmem : kSmemBytes" in src
    off = render(SPACE.validate(make(rows=16, pieces=8, stages=4, consumer_warps=4)), FAMILIES).source
    assert "constexpr bool kYResident = false;" in off


def test_y_has_8_row_boxes_where_it_has_at_most_8_rows():
    """Y of at most 8 rows (decode at batch 1-8) comes in 8-row boxes: half the bytes a stage, and with y_resident
    half the shared memory, so Y's K of 8192 fits beside a 64 KB ring where 16 rows of it do not."""
    assert [st.y_box_rows(s) for s in (1, 8, 9, 16)] == [8, 8, 16, 16]
    res = make(rows=16, pieces=16, stages=2, consumer_warps=4, y_resident=1)
    assert st.y_region_bytes(res.param_dict, 8192, 8) == 8192 * 8 * 2
    assert st.y_region_bytes(res.param_dict, 8192, 9) == st.y_region_bytes(res.param_dict, 8192) == 8192 * 16 * 2
    assert SPACE.is_valid(res, Problem.parse("8x8192x8192")) and SPACE.is_valid(res, Problem.parse("8192x1x8192"))
    assert "y-resident-fits" in {v.rule for v in SPACE.violations(res, Problem.parse("9x8192x8192"))}
    src = render(SPACE.validate(res), FAMILIES).source
    assert "encode_map(&y_map, Y, S, K, 8 * evogemm_kernel::y_tiles(S))" in src
    assert "constexpr int y_tiles(int S) { return S > 8 ? 2 : 1; }" in src
    # the model: Y's bytes through L2 halve at S <= 8 (streamed Y: once a row block)
    dev = DEVICES["h200"]
    base = dict(rows=16, pieces=16, stages=2, consumer_warps=4, ctas_per_sm=1)
    y = lambda s: model(base, Problem.parse(f"{s}x6144x4096"), SimParams(), dev).l2_bytes - 2 * 6144 * 4096  # noqa
    assert y(8) == pytest.approx(y(9) / 2) and y(1) == y(8)


def test_the_model_reads_y_once_a_cta_with_y_resident():
    """Y through L2 and the TMA unit once a CTA: where the SMs' fill rate binds (the shipped H200 calibration at
    16x6144x4096, both boxes of a stage 16 rows), the resident kernel is faster; where HBM binds, as fast."""
    from evaluator.sim_device import resolve_calibration
    dev = DEVICES["h200"]
    shape = Problem.parse("16x6144x4096")                     # 384 row blocks on 132 CTAs
    base = dict(rows=16, pieces=16, stages=2, consumer_warps=4, ctas_per_sm=1)
    streamed, resident = model(base, shape, SimParams(), dev), model(dict(base, y_resident=1), shape, SimParams(), dev)
    assert resident.l2_bytes < streamed.l2_bytes and resident.total_us == pytest.approx(streamed.total_us)
    sp = resolve_calibration("h200")[0]
    assert model(dict(base, y_resident=1), shape, sp, dev).total_us < 0.9 * model(base, shape, sp, dev).total_us
    y = lambda b: b.l2_bytes - 2 * 6144 * 4096                # noqa: E731
    assert y(streamed) == pytest.approx(y(resident) * 384 / 132)


def test_y_resident_genomes_the_shape_free_rules_pass_fit_a_short_k_and_repair_shrinks_the_others():
    """The shape-free rules count one stage's worth of Y's K with y_resident, so no genome they pass is refused at
    every K, and a ring that leaves no room for Y is repaired (fewer stages or pieces) rather than kept."""
    import itertools
    short = Problem.parse("16x4096x64")
    passed = 0
    for rows, pieces, stages, warps, ctas in itertools.product((16, 32, 64), (1, 2, 4, 8, 16), (2, 3, 4, 6, 8),
                                                               (2, 4, 8), (1, 2)):
        g = make(rows=rows, pieces=pieces, stages=stages, consumer_warps=warps, ctas_per_sm=ctas, y_resident=1)
        if SPACE.is_valid(g):
            passed += 1
            assert SPACE.is_valid(g, short), g.params
    assert passed > 200
    full = make(rows=16, pieces=16, stages=6, consumer_warps=4, y_resident=1)   # 192 KB of ring: no room for Y
    assert st.smem_bytes(full.param_dict) + st.STATIC_SMEM_BYTES <= st.SMEM_BYTES_PER_BLOCK
    assert "smem-capacity" in {v.rule for v in SPACE.violations(full)}
    fixed = SPACE.repair(full, random.Random(0))
    assert SPACE.is_valid(fixed, short) and fixed.param_dict["y_resident"] == 1
