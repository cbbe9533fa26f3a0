"""The analytic simulator (evaluator/simulator.py and evaluator/sim_*.py): sanity of the sm90 model,
vendor baselines against the MEASURE.md reference table, the Evaluator contract, the family ->
model dispatch (plug-in families, families without a model), honesty (no invented spread or
correctness figure), deterministic noise, and calibration."""

from __future__ import annotations

import dataclasses
import json
import math
import random
import time
from pathlib import Path

import numpy as np
import pytest

from evaluator.api import STATUS_INVALID, STATUS_OK, STATUS_UNSUPPORTED, BaselineSet, Evaluator, Measurement, Timing
from evaluator.sim_device import (DEFAULT_CALIBRATION, SimBreakdown, SimParams, load_calibration, resolve_calibration,
                                  save_calibration)
from evaluator.sim_fit import FIT_BOUNDS, calibrate_file, fit_calibration, load_records, rank_report, spearman
from evaluator.sim_vendor import simulate_baselines, vendor_configs
from evaluator.simulator import NoModel, SimulatedEvaluator, simulate_breakdown, simulate_time_us
from genome import Genome, PluginError, Problem
from templates import FamilyRegistry, get_family, get_space

FAMILY = "sm90_cutlass"


def make(**changes) -> Genome:
    params = {"schedule": "cooperative", "tile_m": 128, "tile_n": 256, "tile_k": 64, "cluster_m": 2,
              "cluster_n": 1, "stages": 0, "epilogue": "tma", "scheduler": "persistent", "raster": "heuristic",
              "swizzle": 1, "splits": 1, "decomposition": "heuristic", "reduction": "deterministic"}
    params.update(changes)
    return Genome.make(FAMILY, params)


SP = SimParams()

# MEASURE.md reference figures: (torch.matmul best layout, best vendor), device time in us
REFERENCE = {
    "128x128x128": (2.1, 2.1),
    "1024x1024x1024": (5.9, 5.6),
    "128x4096x4096": (13.1, 12.9),
    "2048x2048x2048": (24.6, 24.0),
    "8192x8192x1024": (193, 177),
    "8192x8192x8192": (1427, 1392),
    "512x8192x28672": (362, 306),
    "12288x12288x12288": (5369, 5067),
}


# -- model sanity -------------------------------------------------------------------------------

@pytest.mark.parametrize("genome", [
    make(),
    make(schedule="pingpong", tile_m=64, tile_n=128, cluster_m=1),
    make(tile_n=128, scheduler="streamk"),
    make(tile_n=64, scheduler="streamk", splits=4),
    make(schedule="pingpong", tile_m=64, tile_n=16, cluster_m=1, epilogue="nosmem", stages=2),
])
@pytest.mark.parametrize("mn", [(128, 128), (1024, 4096), (8192, 8192)])
def test_more_k_takes_longer(genome, mn):
    m, n = mn
    times = [simulate_time_us(genome, Problem(m, n, k), SP) for k in (256, 512, 1024, 2048, 4096, 8192, 16384)]
    assert all(b > a for a, b in zip(times, times[1:])), times


def test_bigger_problem_takes_longer_and_tflops_are_plausible():
    g = make()
    small = simulate_time_us(g, "1024x1024x1024", SP)
    big = simulate_time_us(g, "8192x8192x8192", SP)
    assert big > 50 * small
    tflops = Problem(8192, 8192, 8192).flops / big / 1e6
    assert 500 < tflops < 989  # below the datasheet peak, near the ~790 measured


def test_large_tile_beats_tiny_tile_on_8192_cubed():
    good = simulate_time_us(make(), "8192x8192x8192", SP)
    tiny = simulate_time_us(make(schedule="pingpong", tile_m=64, tile_n=16, cluster_m=1), "8192x8192x8192", SP)
    assert good * 2 < tiny


def test_two_stages_expose_latency_and_epilogue_and_cluster_effects():
    p = "4096x4096x4096"
    auto = simulate_time_us(make(), p, SP)
    assert simulate_time_us(make(stages=2), p, SP) > auto * 1.02
    assert simulate_time_us(make(cluster_m=1), p, SP) > auto  # no B multicast: more L2 traffic
    # ping-pong hides most of the epilogue: its share of time is smaller than cooperative's
    bd = simulate_breakdown(make(schedule="pingpong", tile_m=64, cluster_m=1, tile_n=128), "8192x8192x512", SP)
    assert bd.epilogue_us > 0


def test_raster_and_swizzle_matter_a_little_for_problems_beyond_l2():
    default = simulate_time_us(make(), "8192x8192x8192", SP)
    best = min(simulate_time_us(make(raster=r, swizzle=s), "8192x8192x8192", SP)
               for r in ("along_m", "along_n") for s in (2, 4, 8))
    assert 0.88 * default < best < 0.995 * default
    # a problem that fits in L2 does not care
    small = [simulate_time_us(make(raster=r, swizzle=s), "2048x2048x2048", SP)
             for r in ("heuristic", "along_m", "along_n") for s in (1, 8)]
    assert max(small) / min(small) < 1.01


def test_cluster_reduces_usable_sms_when_size_does_not_divide_gpcs():
    one = simulate_breakdown(make(cluster_m=1, cluster_n=1), "8192x8192x8192", SP)
    eight = simulate_breakdown(make(cluster_m=4, cluster_n=2), "8192x8192x8192", SP)
    assert one.ctas == 132
    assert eight.ctas < 132


def test_h200_cluster_capacity_is_the_measured_one():
    """A lent H200 ran at most 66 / 30 / 15 / 7 clusters of 2 / 4 / 8 / 16 CTAs at once (one CTA per SM)."""
    from evaluator.sim_device import get_device
    from evaluator.sim_sm90 import usable_ctas
    dev = get_device("h200")
    assert {size: usable_ctas(size, dev) // size for size in (1, 2, 4, 8, 16)} == {1: 132, 2: 66, 4: 30, 8: 15, 16: 7}
    # so a non-persistent grid of 32 clusters of 4 (sm90_lean 64x128 with a 4x1 cluster at 1000^3) takes
    # two waves, and 28 of them (64x160) one
    lean = {"schedule": "ws", "tile_m": 64, "tile_n": 128, "tile_k": 64, "cluster_m": 4, "cluster_n": 1,
            "stages": 0, "epilogue": "tma", "scheduler": "persistent", "raster": "heuristic", "swizzle": 1,
            "splits": 1, "decomposition": "heuristic", "reduction": "deterministic"}
    g128 = Genome.from_dict({"family": "sm90_lean", "params": lean})
    g160 = Genome.from_dict({"family": "sm90_lean", "params": dict(lean, tile_n=160)})
    assert simulate_time_us(g128, "1000x1000x1000", SP) > 1.3 * simulate_time_us(g160, "1000x1000x1000", SP)


def test_persistent_kernels_get_the_clusters_cutlass_launches():
    """Model revision 3. CUTLASS's persistent scheduler, told only the SM count, assumes GPCs of 18 SMs and
    launches 116 CTAs in clusters of 4 and 112 in clusters of 8 on 132 SMs (tile_scheduler_params.h,
    get_max_cta_occupancy), one cluster fewer than the H200 runs. On the H200 at 5000x1000x3000
    (docs/results/h200-cluster-capacity/benchKp3) the cooperative 256x192 tile, 120 tiles, took 60.5 us with
    a cluster of 2 and 115-118 us with clusters of 4 and 8: the 30th (15th) cluster's tiles ran as a second
    round. Revision 2 priced the three grids of exactly 30 (15) clusters (2x2, 4x1, 4x2) as the pair's; a campaign
    created at it keeps that (seed_model_device). (1x4 and 2x4 pad 6 tiles along N to 8: two rounds either way.)"""
    from dataclasses import replace
    from evaluator.sim_device import get_device
    from evaluator.sim_sm90 import persistent_ctas
    dev = get_device("h200")
    assert {size: persistent_ctas(size, dev) for size in (1, 2, 4, 8, 16)} == {1: 132, 2: 132, 4: 116, 8: 112, 16: 112}
    old = replace(dev, model_revision=2)
    path = Path(__file__).resolve().parent.parent / "docs/results/h200-cluster-capacity/benchKp3/bench.json"
    runs = [(k["genome"], k["measurement"]["device"]["median_us"])
            for s in json.loads(path.read_text())["shapes"] for k in s["kernels"] if k["measurement"]["status"] == "ok"]
    assert len(runs) == 29
    times = {rev: [simulate_time_us(Genome.from_dict(g), "5000x1000x3000", device=d) for g, _ in runs]
             for rev, d in ((3, dev), (2, old))}
    measured = [us for _, us in runs]
    assert spearman(times[3], measured) > 0.8 > 0.5 > spearman(times[2], measured)
    coop = {(g["params"]["cluster_m"], g["params"]["cluster_n"]): i for i, (g, _) in enumerate(runs)
            if g["params"]["schedule"] == "cooperative" and (g["params"]["tile_m"], g["params"]["tile_n"]) == (256, 192)}
    assert len(coop) == 6 and min(measured[i] for c, i in coop.items() if c != (2, 1)) > 1.8 * measured[coop[2, 1]]
    for cluster, i in coop.items():
        if cluster != (2, 1):
            assert times[3][i] > 1.6 * times[3][coop[2, 1]]
            if cluster[1] != 4:
                assert times[2][i] < 1.05 * times[2][coop[2, 1]]


def test_a_lean_grid_is_padded_to_its_clusters_not_to_the_swizzle():
    """sm90_lean runs one CTA per tile (CUTLASS's non-persistent kernel: the tile grid rounded up to whole
    clusters), so its swizzle knob moves nothing. On the H200 the 64x160 tile with a 4x1 cluster at 1000^3 ran
    at 0.936x and 0.938x the vendor with swizzle 1 and 8 (docs/results, session 27); revision 2 priced swizzle 8
    at 2.3x, padding 112 CTAs to 120 and then to two waves."""
    from dataclasses import replace
    from evaluator.sim_device import get_device
    lean = {"schedule": "ws", "tile_m": 64, "tile_n": 160, "tile_k": 64, "cluster_m": 4, "cluster_n": 1,
            "stages": 0, "epilogue": "tma", "scheduler": "persistent", "raster": "heuristic", "swizzle": 1,
            "splits": 1, "decomposition": "heuristic", "reduction": "deterministic"}
    one, eight = (Genome.from_dict({"family": "sm90_lean", "params": dict(lean, swizzle=s)}) for s in (1, 8))
    dev = get_device("h200")
    t = {(s, rev): simulate_time_us(g, "1000x1000x1000", SP, device=d)
         for s, g in ((1, one), (8, eight)) for rev, d in ((3, dev), (2, replace(dev, model_revision=2)))}
    assert t[8, 3] == pytest.approx(t[1, 3]) and t[1, 3] == pytest.approx(t[1, 2])
    assert t[8, 2] > 1.5 * t[1, 2]
    # nor its raster knob: its CTAs start in the hardware's order (blockIdx.x, M, fastest); revision 2 priced
    # 128x128 tiles at 16384x2048x8192 25% apart by it
    tile = dict(lean, tile_m=128, tile_n=128, cluster_m=2)
    by_raster = {(r, rev): simulate_time_us(Genome.from_dict({"family": "sm90_lean", "params": dict(tile, raster=r)}),
                                            "16384x2048x8192", SP, device=d)
                 for r in ("heuristic", "along_m", "along_n") for rev, d in ((3, dev), (2, replace(dev, model_revision=2)))}
    assert by_raster["heuristic", 3] == pytest.approx(by_raster["along_m", 3]) == pytest.approx(by_raster["along_n", 3])
    assert by_raster["along_m", 2] > 1.1 * by_raster["along_n", 2]


def test_ws_resident_ctas_follow_shared_memory_threads_and_registers():
    """A ws kernel (256 threads, one CTA a tile) with an explicit stage count leaves room for more CTAs an SM; the
    automatic stage count fills the SM. sm90_swapab_splitk's 64x128x64 tile with 4 stages built to 99,328 bytes of
    shared memory and 90 registers a thread (session 54): two an SM."""
    from genome.sm90_resources import ws_resident_ctas
    tile = {"schedule": "ws", "tile_m": 64, "tile_n": 128, "tile_k": 64, "epilogue": "tma"}
    assert ws_resident_ctas(dict(tile, stages=0)) == 1
    assert ws_resident_ctas(dict(tile, stages=4)) == 2
    assert ws_resident_ctas(dict(tile, stages=8)) == 1                        # 197 KB
    assert ws_resident_ctas(dict(tile, tile_n=64, stages=4)) == 3             # 66 KB, 58 registers
    assert ws_resident_ctas(dict(tile, tile_m=128, tile_n=256, stages=2)) == 1  # 256 accumulators a thread


def test_ws_kernels_with_few_stages_share_an_sm_from_revision_6():
    """Model revision 6: a one-CTA-a-tile kernel whose grid exceeds the SMs runs two or more CTAs an SM where its
    shared memory, threads and registers allow, sharing the SM's pipes; a grid that fits the SMs runs one an SM.
    Session 37 timed 40 sm90_lean kernels with 3-4 stages (two or more an SM) and the automatic count at 20 shapes on
    the H200 (docs/results/h200-occupancy-prefetch/call1/occ): revision 5, one CTA an SM whatever the stages, ranked
    them with a mean Spearman of 0.46, revision 6 with 0.75."""
    from dataclasses import replace
    from evaluator.sim_device import get_device
    dev = get_device("h200")
    old = replace(dev, model_revision=5)
    lean = {"schedule": "ws", "tile_m": 64, "tile_n": 128, "tile_k": 64, "cluster_m": 1, "cluster_n": 1,
            "stages": 4, "epilogue": "tma", "scheduler": "persistent", "raster": "heuristic", "swizzle": 1,
            "splits": 1, "decomposition": "heuristic", "reduction": "deterministic"}
    few, auto = (Genome.from_dict({"family": "sm90_lean", "params": dict(lean, stages=s)}) for s in (4, 0))
    # 8 x 16 = 128 tiles: one an SM, at both revisions; 16 x 16 = 256: two an SM, one wave instead of two
    for shape, shared in (("512x2048x4096", False), ("1024x2048x4096", True), ("2048x1024x1024", True)):
        b6, b5 = (simulate_breakdown(few, shape, SP, device=d) for d in (dev, old))
        if shared:
            assert b6.waves < 1 < b5.waves and b6.compute_us < 0.9 * b5.compute_us and b6.total_us < b5.total_us
        else:
            assert b6 == b5
        assert simulate_breakdown(auto, shape, SP, device=dev) == simulate_breakdown(auto, shape, SP, device=old)
    path = Path(__file__).resolve().parent.parent / "docs/results/h200-occupancy-prefetch/call1/occ/bench.json"
    runs = [{"genome": k["genome"], "problem": s["problem"], "time_us": k["measurement"]["device"]["median_us"]}
            for s in json.loads(path.read_text())["shapes"] for k in s["kernels"] if k["measurement"]["status"] == "ok"]
    rho = {rev: rank_report(runs, SP, device=d) for rev, d in ((6, dev), (5, old))}
    assert rho[6]["shapes"] == 20 and rho[6]["skipped"] == 0
    assert rho[6]["spearman_within_shape_mean"] > 0.7 > 0.5 > rho[5]["spearman_within_shape_mean"]


def test_split_k_and_stream_k_help_small_mn_with_large_k():
    p = "64x64x4096"
    plain = simulate_time_us(make(tile_n=64, cluster_m=1), p, SP)
    split = simulate_time_us(make(tile_n=64, cluster_m=1, scheduler="streamk", splits=8), p, SP)
    assert split < plain
    big = "8192x8192x8192"  # ...but split-K of a large problem only adds reduction traffic
    assert simulate_time_us(make(scheduler="streamk", splits=2), big, SP) > simulate_time_us(make(), big, SP)


def test_h100_is_slower_than_h200_on_a_memory_bound_shape():
    g = make(schedule="pingpong", tile_m=64, tile_n=128, cluster_m=1)
    assert simulate_time_us(g, "128x28672x4096", SP, "h100") > simulate_time_us(g, "128x28672x4096", SP, "h200")


def test_tiny_shapes_floor_near_three_microseconds_for_cutlass():
    space = get_space(FAMILY)
    rng = random.Random(1)
    p = Problem(128, 128, 128)
    times = []
    for _ in range(300):
        g = space.sample(rng)
        if space.is_valid(g, p):
            times.append(simulate_time_us(g, p, SP))
    assert 2.6 < min(times) < 3.4


# -- vendor baselines -----------------------------------------------------------------------------

@pytest.mark.parametrize("shape", sorted(REFERENCE))
def test_baselines_near_measure_md_reference(shape):
    torch_ref, best_ref = REFERENCE[shape]
    b = simulate_baselines(shape, SP)
    assert isinstance(b, BaselineSet) and b.simulated
    assert set(b.device) == {"torch_tn", "torch_nn", "cublaslt_heuristic", "cublaslt_autotuned"}
    assert all(isinstance(t, Timing) for t in b.device.values())
    _, best = b.best("device")
    assert best == b.device["cublaslt_autotuned"].median_us  # autotuning never loses to the heuristic
    assert abs(best / best_ref - 1) < 0.25, (shape, best, best_ref)
    assert abs(b.torch_us() / torch_ref - 1) < 0.25, (shape, b.torch_us(), torch_ref)
    assert best >= 2.0  # the vendor floor on tiny shapes
    for mode in ("server", "call"):
        assert getattr(b, mode)["cublaslt_autotuned"].median_us > best


def test_vendor_beats_cutlass_on_tiny_shapes_and_configs_are_valid():
    space = get_space(FAMILY)
    for cfg in vendor_configs():
        assert not space.violations(Genome.make(FAMILY, cfg)), cfg
    vendor = simulate_baselines("128x128x128", SP).best_vendor_us
    cutlass = min(simulate_time_us(Genome.make(FAMILY, c), "128x128x128", SP) for c in vendor_configs())
    assert vendor < cutlass - 0.5


def test_baselines_for_unaligned_shape():
    b = simulate_baselines("1000x999x1001", SP)
    assert b.best_vendor_us > 0 and b.simulated


# -- the Evaluator contract ---------------------------------------------------------------------

def test_evaluator_protocol_and_measurements():
    ev = SimulatedEvaluator()
    assert isinstance(ev, Evaluator)
    assert ev.simulated is True
    assert "simulated" in ev.describe() and "H200" in ev.describe()
    p = Problem(4096, 4096, 4096)
    (m,) = ev.evaluate([make()], p)
    assert m.status == STATUS_OK and m.ok and m.simulated
    assert m.problem == p.name and m.genome_id == make().id
    assert m.server.median_us > m.device.median_us
    assert m.call.median_us == pytest.approx(m.device.median_us + 5.0, rel=1e-9)
    assert m.device.median_us == pytest.approx(ev.predict_us(make(), p))
    assert ev.baselines(p).simulated
    ev.close()


def test_invalid_genomes_name_the_rule():
    ev = SimulatedEvaluator()
    bad_coop = make(schedule="cooperative", tile_m=64, tile_n=64, cluster_m=1)
    bad_regs = make(tile_m=256, tile_n=256, cluster_m=1)
    good = make()
    ms = ev.evaluate([bad_coop, bad_regs, good], Problem(1024, 1024, 1024))
    assert [m.status for m in ms] == [STATUS_INVALID, STATUS_INVALID, STATUS_OK]
    assert "cooperative-tile-m" in ms[0].reason
    assert "accumulator-registers" in ms[1].reason
    assert all(m.simulated for m in ms) and ms[0].device is None
    (unaligned,) = ev.evaluate([good], Problem(1024, 1024, 1001))
    assert unaligned.status == STATUS_INVALID and "tma-alignment" in unaligned.reason
    (other,) = ev.evaluate([Genome.make("sm80_cute", {"tile_m": 128})], Problem(1024, 1024, 1024))
    assert other.status == STATUS_UNSUPPORTED and other.simulated and other.device is None
    assert "no model of family 'sm80_cute'" in other.reason and "not a known template family" in other.reason


# -- honesty: only what was computed -------------------------------------------------------------

def _no_spread(t: Timing) -> None:
    assert t.min_us is None and t.max_us is None and t.spread is None and t.repeats == 0
    assert t.median_us > 0


@pytest.mark.parametrize("noise", [0.0, 0.1])
def test_simulated_measurements_report_no_correctness_and_no_spread(noise):
    """Nothing ran: a simulated measurement must not claim an error figure or a timing spread."""
    (m,) = SimulatedEvaluator(noise=noise, seed=1).evaluate([make()], Problem(2048, 2048, 2048))
    assert m.status == STATUS_OK and m.simulated
    assert m.rel_error is None
    for t in (m.device, m.server, m.call):
        _no_spread(t)
    # and it survives the round trip through a dict (the database, bench.json)
    again = Measurement.from_dict(json.loads(json.dumps(m.to_dict())))
    assert again == m and again.device.spread is None


def test_simulated_baselines_report_no_correctness_and_no_spread():
    b = simulate_baselines("1024x1024x1024", SP)
    assert b.simulated and b.rel_error == {}
    for table in (b.device, b.server, b.call):
        assert set(table) == {"torch_tn", "torch_nn", "cublaslt_heuristic", "cublaslt_autotuned"}
        for t in table.values():
            _no_spread(t)
    assert BaselineSet.from_dict(json.loads(json.dumps(b.to_dict()))) == b


def test_measured_timing_spread_is_unchanged():
    assert Timing(10.0, 9.0, 11.0, 5).spread == pytest.approx(0.2)
    assert Timing(10.0, None, None, 0).spread is None


# -- family -> model dispatch ----------------------------------------------------------------------

def _copy_family(name: str = "sm90_copy", **changes):
    """The built-in sm90_cutlass family under another name, as a plug-in would define one."""
    base = get_family(FAMILY)

    def make_space():
        return dataclasses.replace(base.make_space(), family=name)

    return dataclasses.replace(base, name=name, make_space=make_space, **changes)


def test_plug_in_family_is_simulated_through_its_simulator_model():
    calls = []

    def counting_model(params, problem, sim_params, device):
        from evaluator.sim_sm90 import model
        calls.append((dict(params), problem.name))
        return model(params, problem, sim_params, device)

    by_path = _copy_family("sm90_copy")  # simulator_model "evaluator.sim_sm90:model", by import path
    by_callable = _copy_family("sm90_counted", simulator_model=counting_model)
    reg = FamilyRegistry([get_family(FAMILY), by_path, by_callable])
    ev = SimulatedEvaluator(families=reg)
    p = Problem(4096, 4096, 4096)
    params = make().param_dict
    builtin, copy, counted = ev.evaluate([make(), Genome.make("sm90_copy", params),
                                          Genome.make("sm90_counted", params)], p)
    assert [m.status for m in (builtin, copy, counted)] == [STATUS_OK] * 3
    assert copy.time_us == builtin.time_us == counted.time_us
    assert calls == [(by_callable.space.normalise(Genome.make("sm90_counted", params)).param_dict, p.name)]
    # the plug-in family's own rules decide validity
    (bad,) = ev.evaluate([Genome.make("sm90_copy", dict(params, schedule="cooperative", tile_m=64, tile_n=64,
                                                        cluster_m=1))], p)
    assert bad.status == STATUS_INVALID and "cooperative-tile-m" in bad.reason
    # the direct helpers go through the family's model too
    assert simulate_time_us(Genome.make("sm90_copy", params), p, ev.params, families=reg) == builtin.time_us
    bd = simulate_breakdown(params, p, ev.params, family="sm90_counted", families=reg)
    assert isinstance(bd, SimBreakdown) and len(calls) == 2
    # the default registry does not know the plug-in
    (unknown,) = SimulatedEvaluator().evaluate([Genome.make("sm90_copy", params)], p)
    assert unknown.status == STATUS_UNSUPPORTED and "no model of family 'sm90_copy'" in unknown.reason


def test_family_without_simulator_model_is_unsupported_with_a_clear_reason():
    reg = FamilyRegistry([get_family(FAMILY), _copy_family("sm90_nomodel", simulator_model=None)])
    ev = SimulatedEvaluator(families=reg)
    genome = Genome.make("sm90_nomodel", make().param_dict)
    (m,) = ev.evaluate([genome], Problem(1024, 1024, 1024))
    assert m.status == STATUS_UNSUPPORTED and m.simulated and m.device is None and m.rel_error is None
    assert "the simulator has no model of family 'sm90_nomodel'" in m.reason and "simulator_model" in m.reason
    with pytest.raises(NoModel, match="sm90_nomodel"):
        simulate_time_us(genome, "1024x1024x1024", SP, families=reg)
    # fitting skips its records rather than guessing a model
    records = [(genome, "1024x1024x1024", 10.0), (make(), "1024x1024x1024", 10.0)]
    assert rank_report(records, SP, families=reg)["skipped"] == 1


def test_broken_simulator_model_fails_when_the_evaluator_is_built():
    reg = FamilyRegistry([_copy_family("sm90_broken", simulator_model="evaluator.sim_sm90:no_such_model")])
    with pytest.raises(PluginError, match="no_such_model"):
        SimulatedEvaluator(families=reg)
    reg = FamilyRegistry([_copy_family("sm90_number", simulator_model=3)])
    with pytest.raises(PluginError, match="sm90_number.*not a function"):
        SimulatedEvaluator(families=reg)


def test_simulator_code_names_no_family():
    """The dispatch reads the family's simulator_model; only the sm90 model's code (not its
    docstrings) names sm90_cutlass."""
    import ast
    import pathlib

    import evaluator
    root = pathlib.Path(evaluator.__file__).parent
    for path in [root / "simulator.py", *root.glob("sim_*.py")]:
        if path.name == "sim_sm90.py":
            continue
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                      and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        words = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                words.append(node.value)
            elif isinstance(node, ast.Name):
                words.append(node.id)
            elif isinstance(node, ast.Attribute):
                words.append(node.attr)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                words += [getattr(node, "module", None) or ""] + [a.name for a in node.names]
        assert not [w for w in words if "sm90_cutlass" in w or "SUPPORTED_FAMILIES" in w], path.name


def test_noise_is_reproducible_and_order_independent():
    space = get_space(FAMILY)
    rng = random.Random(5)
    p = Problem(2048, 4096, 1024)
    gs = [g for g in (space.sample(rng) for _ in range(40)) if space.is_valid(g, p)]
    a = {m.genome_id: m.device.median_us for m in SimulatedEvaluator(noise=0.1, seed=7).evaluate(gs, p)}
    b = {m.genome_id: m.device.median_us for m in SimulatedEvaluator(noise=0.1, seed=7).evaluate(gs[::-1], p)}
    ev = SimulatedEvaluator(noise=0.1, seed=7)
    c = {g.id: ev.evaluate([g], p)[0].device.median_us for g in gs}
    assert a == b == c
    other = {m.genome_id: m.device.median_us for m in SimulatedEvaluator(noise=0.1, seed=8).evaluate(gs, p)}
    assert other != a
    clean = SimulatedEvaluator()
    ratios = np.array([a[g.id] / clean.predict_us(g, p) for g in gs])
    assert 0.02 < np.std(np.log(ratios)) < 0.25  # it is noise of about the requested size
    # the global random state is neither used nor disturbed
    random.seed(123)
    before = random.random()
    random.seed(123)
    SimulatedEvaluator(noise=0.1, seed=7).evaluate(gs, p)
    assert random.random() == before
    assert SimulatedEvaluator().evaluate(gs[:1], p)[0].device.median_us == pytest.approx(clean.predict_us(gs[0], p))


def test_thousand_evaluations_are_fast():
    space = get_space(FAMILY)
    rng = random.Random(0)
    gs = [space.sample(rng) for _ in range(250)]
    problems = [Problem(4096, 4096, 4096), Problem(128, 4096, 4096), Problem(1000, 1000, 1000), Problem(8192, 64, 8192)]
    ev = SimulatedEvaluator(noise=0.05)
    start = time.perf_counter()
    n = sum(len(ev.evaluate(gs, p)) for p in problems)
    elapsed = time.perf_counter() - start
    assert n == 1000
    assert elapsed < 1.0, elapsed


# -- calibration ------------------------------------------------------------------------------

def test_default_calibration_file_loads_and_is_the_default():
    params, meta = load_calibration(DEFAULT_CALIBRATION)
    assert "h200-measured-public.json" in meta["source"] and meta["records"] >= 50
    assert resolve_calibration(None)[0] == params
    assert "calibration h200" in SimulatedEvaluator().describe()
    assert "calibration custom" in SimulatedEvaluator(calibration=SimParams()).describe()
    assert "H100" in SimulatedEvaluator(device="h100").describe()
    with pytest.raises(ValueError):
        SimulatedEvaluator(device="a100")


def test_calibration_file_rejects_unknown_fields(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"format": "evogemm-simparams", "version": 1, "params": {"warp_speed": 9}}))
    with pytest.raises(ValueError, match="warp_speed"):
        load_calibration(path)
    path.write_text(json.dumps({"params": {}}))
    with pytest.raises(ValueError, match="format"):
        load_calibration(path)


def test_spearman_matches_scipy_with_ties():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(5, 60))
        x = rng.integers(0, 8, size=n).astype(float)  # many ties
        y = x * rng.normal(1, 0.5, size=n) + rng.integers(0, 4, size=n)
        assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    x = rng.normal(size=100)
    assert spearman(x, x) == pytest.approx(1.0)
    assert spearman(x, -x) == pytest.approx(-1.0)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))


def _synthetic_records(truth: SimParams, n: int, seed: int):
    space = get_space(FAMILY)
    rng = random.Random(seed)
    shapes = [Problem(*s) for s in ((128, 128, 128), (1024, 1024, 1024), (128, 4096, 4096), (2048, 2048, 2048),
                                     (4096, 4096, 4096), (8192, 8192, 1024), (512, 8192, 8192), (64, 64, 4096),
                                     (8192, 8192, 8192), (1000, 1000, 1000))]
    out = []
    while len(out) < n:
        g = space.sample(rng)
        p = rng.choice(shapes)
        if space.is_valid(g, p):
            out.append((g.to_dict(), p.name, simulate_time_us(g, p, truth)))
    return out


TRUTH = SimParams(mma_clock_efficiency=0.78, k_iter_overhead_clk=90.0, launch_us=2.6, dram_interference=0.4,
                  epilogue_bytes_per_clk=30.0, streamk_fixup_us=1.2)


def test_fit_calibration_recovers_a_model_of_synthetic_data():
    records = _synthetic_records(TRUTH, 80, seed=11)
    times = np.array([t for _, _, t in records])
    start = SimParams()
    fields = ["mma_clock_efficiency", "k_iter_overhead_clk", "launch_us", "dram_interference",
              "epilogue_bytes_per_clk", "streamk_fixup_us"]

    def mean_abs_log_error(sp):
        pred = np.array([simulate_time_us(Genome.from_dict(g), p, sp) for g, p, _ in records])
        return float(np.mean(np.abs(np.log(pred / times)))), pred

    before, _ = mean_abs_log_error(start)
    fitted = fit_calibration(records, start, fields=fields, max_evals=600)
    after, pred = mean_abs_log_error(fitted)
    assert spearman(pred, times) > 0.9
    assert after < 0.5 * before
    assert fitted.mma_clock_efficiency == pytest.approx(TRUTH.mma_clock_efficiency, rel=0.15)
    for name in set(FIT_BOUNDS) - set(fields):  # untouched fields stay put
        assert getattr(fitted, name) == getattr(start, name)


def test_fit_calibration_without_scipy_uses_coordinate_search(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_scipy(name, *args, **kwargs):
        if name.startswith("scipy"):
            raise ImportError("no scipy here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_scipy)
    records = _synthetic_records(TRUTH, 40, seed=3)
    times = np.array([t for _, _, t in records])
    fitted = fit_calibration(records, SimParams(), fields=["mma_clock_efficiency", "launch_us"], max_evals=150)
    pred = np.array([simulate_time_us(Genome.from_dict(g), p, fitted) for g, p, _ in records])
    err0 = np.mean(np.abs(np.log(np.array([simulate_time_us(Genome.from_dict(g), p, SimParams())
                                           for g, p, _ in records]) / times)))
    assert np.mean(np.abs(np.log(pred / times))) < err0


def test_calibrate_file_round_trip(tmp_path):
    records = [{"genome": g, "problem": p, "time_us": t} for g, p, t in _synthetic_records(TRUTH, 30, seed=4)]
    records.append({"genome": make(tile_m=256, tile_n=256).to_dict(), "problem": "1024x1024x1024", "time_us": 9.0})
    src = tmp_path / "measurements.json"
    src.write_text(json.dumps(records))
    out = tmp_path / "calib" / "fitted.json"
    report = calibrate_file(src, out, start=SimParams(),
                            fields=["mma_clock_efficiency", "launch_us", "k_iter_overhead_clk"], max_evals=200)
    assert report["records"] == 30 and report["skipped"] == 1
    # the fit minimises the log error; the rank order it leaves may move by a hair (0.9996 -> 0.9982 here)
    assert report["spearman_after"] >= report["spearman_before"] - 0.005
    assert report["mean_abs_log_error_after"] <= report["mean_abs_log_error_before"]
    params, meta = load_calibration(out)
    for key in ("source", "date", "records", "spearman_before", "spearman_after", "mean_abs_log_error_before",
                "mean_abs_log_error_after", "fitted"):
        assert key in meta
    assert meta["source"] == str(src)
    ev = SimulatedEvaluator(calibration=out)
    assert "calibration fitted" in ev.describe()
    assert ev.params == params
    # save -> load is exact up to the 6 significant digits written
    again = tmp_path / "again.json"
    save_calibration(params, again, meta)
    assert load_calibration(again)[0] == params


def test_direct_prediction_refuses_invalid_genomes():
    from genome import InvalidGenome

    with pytest.raises(InvalidGenome, match="cooperative-tile-m"):
        simulate_time_us(make(tile_m=64, tile_n=64, cluster_m=1), "1024x1024x1024", SP)
    # a plain param dict works too, given its family; a genome dict carries its own
    assert simulate_time_us(make().param_dict, "1024x1024x1024", SP, family=FAMILY) == \
        simulate_time_us(make(), "1024x1024x1024", SP)
    assert simulate_time_us(make().to_dict(), "1024x1024x1024", SP) == simulate_time_us(make(), "1024x1024x1024", SP)
    with pytest.raises(ValueError, match="family="):
        simulate_time_us(make().param_dict, "1024x1024x1024", SP)
    with pytest.raises(NoModel, match="no model of family 'sm80_cute'"):
        simulate_time_us(Genome.make("sm80_cute", {"tile_m": 128}), "1024x1024x1024", SP)


def test_factory_builds_the_simulator_with_its_options():
    factory = pytest.importorskip("evaluator.factory")
    ev = factory.make_evaluator("simulator", seed=3, noise=0.02)
    assert ev.simulated and isinstance(ev, SimulatedEvaluator)
    assert ev.seed == 3 and ev.noise == 0.02
    with pytest.raises(ValueError, match="cache_dir"):  # an option of the GPU backend only
        factory.make_evaluator("simulator", cache_dir="/nonexistent")
    reg = FamilyRegistry([get_family(FAMILY), _copy_family("sm90_copy")])
    ev = factory.make_evaluator("simulator", families=reg)
    assert ev.families is reg
    (m,) = ev.evaluate([Genome.make("sm90_copy", make().param_dict)], Problem(1024, 1024, 1024))
    assert m.status == STATUS_OK


def test_cli(tmp_path, capsys):
    from evaluator.sim_fit import main

    gpath = make().save(tmp_path / "g.json")
    assert main(["predict", str(gpath), "2048x2048x2048"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["simulated"] is True and out["total_us"] > 0
    assert main(["baselines", "2048x2048x2048"]) == 0
    assert json.loads(capsys.readouterr().out)["simulated"] is True
    assert main(["predict", str(gpath), "1024x1024x1001"]) == 2  # one error line, no traceback
    assert "tma-alignment" in capsys.readouterr().err
    src = tmp_path / "m.json"
    src.write_text(json.dumps([{"genome": g, "problem": p, "time_us": t}
                               for g, p, t in _synthetic_records(TRUTH, 10, seed=9)]))
    assert main(["calibrate", str(src), str(tmp_path / "c.json"), "--max-evals", "30"]) == 0
    assert json.loads(capsys.readouterr().out)["records"] == 10
    assert load_calibration(tmp_path / "c.json")[1]["records"] == 10
    assert main(["check", str(src), "--calibration", str(tmp_path / "c.json")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["simulated"] is True and out["pairs"] == 10


def test_shipped_calibration_ranks_measured_h200_kernels():
    """The default calibration against the H200 measurements kept in the repository: the search
    relies on ranking kernels within a shape, so check that as well as the pooled correlation."""
    measured = DEFAULT_CALIBRATION.parent / "h200-measured-public.json"
    report = rank_report(load_records(measured), load_calibration(DEFAULT_CALIBRATION)[0])
    assert report["pairs"] >= 800 and report["shapes"] == 28
    assert report["spearman_pooled"] > 0.95
    assert report["spearman_within_shape_mean"] > 0.7
    assert report["mean_abs_log_error"] < 0.25


def test_rows_that_are_not_whole_128_byte_lines_cost_l2_traffic():
    """docs/results/h200-k-pitch: at K = 1000 (rows of 2000 bytes) the H200 took an unclustered
    64x128 kernel from 6.96 to 10.86 us and a 128x96 cluster-1x4 one only from 8.31 to 8.91; the
    padded family's k_pad 64 (copy to 128-byte rows) beat k_pad 8 at 1000x1000x999 (10.98 vs 14.53)."""
    base = dict(get_space("sm90_cutlass").default_params(), schedule="pingpong", scheduler="persistent",
                tile_k=64, stages=0, epilogue="tma")
    small = Genome.make("sm90_cutlass", dict(base, tile_m=64, tile_n=128, cluster_m=1, cluster_n=1))
    clustered = Genome.make("sm90_cutlass", dict(base, tile_m=128, tile_n=96, cluster_m=1, cluster_n=4))
    t = lambda g, shape: simulate_time_us(g, Problem.parse(shape))  # noqa: E731
    assert t(small, "1024x1024x1024") < t(clustered, "1024x1024x1024")
    assert t(clustered, "1024x1024x1000") < t(small, "1024x1024x1000")
    assert t(small, "1024x1024x1000") > 1.3 * t(small, "1024x1024x1024")
    assert t(small, "1024x1024x1088") < 1.1 * t(small, "1024x1024x1024")   # 2176-byte rows: whole lines
    padded = dict(get_space("sm90_padded").default_params(), **small.param_dict, c_align=8)
    by8, by64 = (Genome.make("sm90_padded", dict(padded, k_pad=k)) for k in (8, 64))
    assert t(by64, "1000x1000x999") < t(by8, "1000x1000x999")


def test_the_sm80_model_is_as_biased_as_the_sm90_one_on_what_the_h200_measured():
    """The family prune and the seeds' order compare families by the model: sm80_cutlass's must be off
    from the measurements by about what sm90_cutlass's is (its MMA_SYNC_SHARE was fitted so; the value
    before, 0.62, priced sm80 kernels 1.5x too fast, median log error -0.41 against sm90's -0.07)."""
    from pathlib import Path
    results = Path(__file__).resolve().parent.parent / "docs" / "results"
    files = [results / "h200-families" / name for name in ("public.json", "unseen.json", "unaligned.json")]
    errors: dict[str, list[float]] = {"sm80_cutlass": [], "sm90_cutlass": []}
    for path in files:
        try:
            shapes = json.loads(path.read_text())["shapes"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for shape in shapes if isinstance(shapes, list) else []:
            for k in shape.get("kernels", []):
                m, fam = k.get("measurement") or {}, k["genome"]["family"]
                if fam in errors and m.get("status") == "ok" and m.get("device") and len(errors[fam]) < 300:
                    g = Genome.from_dict({key: v for key, v in k["genome"].items() if key != "id"})
                    errors[fam].append(math.log(simulate_time_us(g, Problem.parse(shape["problem"]))
                                                / m["device"]["median_us"]))
    if min(len(e) for e in errors.values()) < 50:
        pytest.skip("too few committed H200 measurements of the two families")
    bias = {fam: float(np.median(e)) for fam, e in errors.items()}
    assert abs(bias["sm80_cutlass"] - bias["sm90_cutlass"]) < 0.15, bias
