"""Every seed of every new family, on shapes of its domain, passes the gate on a real Hopper GPU
(pytest -m gpu; skips cleanly without one)."""

from pathlib import Path

import pytest

from genome import Problem
from templates import family_registry

pytestmark = pytest.mark.gpu
QUICK = {"repeats": 3, "warmup_s": 0.2, "server_samples": 3, "call_samples": 5, "autotune_algos": 8}
FAMILIES = family_registry()


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory):
    from evaluator.gpu import GpuEvaluator
    ev = GpuEvaluator(timing=QUICK, silence_timeout_s=30, log_dir=tmp_path_factory.mktemp("gpulog"))
    yield ev
    ev.close()


FAMILY_SHAPES = [
    ("skinny_mma", "16x4096x4096"), ("skinny_mma", "1x8191x4096"), ("skinny_mma", "8192x64x512"),
    ("skinny_mma", "64x64x4096"),
    ("sm80_cutlass", "1000x1000x999"), ("sm80_cutlass", "512x512x2048"), ("sm80_cutlass", "128x128x128"),
    ("sm90_padded", "1023x1023x1024"), ("sm90_padded", "1000x1000x999"), ("sm90_padded", "1536x6002x2500"),
    ("sm90_splitk", "512x512x4096"), ("sm90_splitk", "256x1024x8192"),
    ("sm90_cpasync", "1000x1000x1000"), ("sm90_cpasync", "1536x6002x2500"), ("sm90_cpasync", "264x1000x520"),
    # M and N unequal and not multiples of the tiles, so a kernel that mixed up the two would fail the gate
    ("sm90_swapab", "1000x2056x512"), ("sm90_swapab", "136x4096x1024"),
    # skinny_tma: one and two n8 tiles of the small operand, A streamed (M > N), K off 64 (the rows' ends
    # zero-filled by TMA), row counts off every box
    ("skinny_tma", "16x4096x4096"), ("skinny_tma", "1x8191x4096"), ("skinny_tma", "8192x13x4104"),
    ("skinny_tma", "5x1000x3000"),
    # stream_wgmma: W streamed at a split-K shape (fp32 partials), A streamed (M > N), the small side, the rows and
    # K off every box (K % 64 != 0: the rows' ends zero-filled by TMA), a single row
    ("stream_wgmma", "128x4096x4096"), ("stream_wgmma", "8192x64x2048"), ("stream_wgmma", "100x1000x3000"),
    ("stream_wgmma", "1x2056x1032"),
    # sm90_swapab_splitk: M and N unequal and off the tiles (a mix-up of the two, or of the partial sums' layout,
    # fails the gate), M off the 16-row tile, a single row
    ("sm90_swapab_splitk", "16x4096x4096"), ("sm90_swapab_splitk", "136x2056x1024"),
    ("sm90_swapab_splitk", "1x1000x2048"),
    # K / ksplit off the 64- and 128-wide K tiles (2080 and 1040): each split's last K tile zero-filled by TMA
    ("sm90_swapab_splitk", "16x4096x4160"),
]


def assert_all_pass_the_gate(evaluator, genomes: list, problem: Problem) -> None:
    """Every genome passes the gate at `problem` with a relative error within 1e-3 and an accumulation check."""
    results = evaluator.evaluate(genomes, problem)
    for g, m in zip(genomes, results):
        print(problem.name, g.short(), m.status, m.rel_error, m.acc_error, m.time_us)
    failed = [(g.short(), m.status, m.reason) for g, m in zip(genomes, results) if not m.ok]
    assert not failed, failed
    assert all(m.rel_error <= 1e-3 and m.acc_error is not None for m in results)


def validated(family: str, cases: "list[dict]") -> list:
    """Genomes of `family` with the parameters of each case, validated by its space."""
    from genome import Genome
    space = FAMILIES.resolve(family).space
    return [space.validate(Genome.make(family, c)) for c in cases]


def assert_valid_and_all_pass(evaluator, family: str, genomes: list, problem: Problem) -> None:
    """Every genome is valid at `problem` in `family`'s space and passes the gate there."""
    space = FAMILIES.resolve(family).space
    assert all(space.is_valid(g, problem) for g in genomes), [v for g in genomes for v in space.violations(g, problem)]
    assert_all_pass_the_gate(evaluator, genomes, problem)


@pytest.mark.parametrize("family,shape", FAMILY_SHAPES)
def test_every_seed_passes_the_gate_in_its_familys_domain(evaluator, family, shape):
    fam = FAMILIES.resolve(family)
    problem = Problem.parse(shape)
    genomes = [g for _, g in fam.seeds() if fam.space.is_valid(g, problem)]
    assert genomes, f"no seed of {family} fits {shape}"
    results = evaluator.evaluate(genomes, problem)
    failed = [(g.short(), m.status, m.reason) for g, m in zip(genomes, results) if not m.ok]
    for g, m in zip(genomes, results):
        print(family, shape, g.short(), m.status, m.rel_error, m.acc_error, m.time_us)
    assert not failed, failed
    assert all(m.rel_error <= 1e-3 and m.acc_error is not None for m in results)


def subtile_genomes() -> list:
    """Explicit epilogue subtiles (the implicit parameter `epilogue_tile`) of each schedule that takes them:
    ping-pong 64x64 and 64x128, cooperative 128x96 and 128x64 (a 256-row tile), sm90_lean's ws 64x64, and
    the narrow ones of tiles with N 144 (cooperative 128x48) and 80 (ping-pong 64x80)."""
    from genome import Genome
    base = {"cluster_m": 1, "cluster_n": 1, "decomposition": "heuristic", "epilogue": "tma", "raster": "heuristic",
            "reduction": "deterministic", "scheduler": "persistent", "splits": 1, "stages": 0, "swizzle": 1,
            "tile_k": 64}
    cases = [("sm90_cutlass", dict(schedule="pingpong", tile_m=128, tile_n=128, epilogue_tile="64x64")),
             ("sm90_cutlass", dict(schedule="pingpong", tile_m=128, tile_n=128, epilogue_tile="64x128")),
             ("sm90_cutlass", dict(schedule="cooperative", tile_m=128, tile_n=192, cluster_n=2, epilogue_tile="128x96")),
             ("sm90_cutlass", dict(schedule="cooperative", tile_m=256, tile_n=128, cluster_n=2, epilogue_tile="128x64")),
             ("sm90_lean", dict(schedule="ws", tile_m=64, tile_n=128, epilogue_tile="64x64")),
             # subtiles for the tiles fitted to the SM count (auto stores them 16 columns a step)
             ("sm90_cutlass", dict(schedule="cooperative", tile_m=128, tile_n=144, epilogue_tile="128x48")),
             ("sm90_cutlass", dict(schedule="pingpong", tile_m=128, tile_n=80, epilogue_tile="64x80"))]
    return [FAMILIES.resolve(f).space.validate(Genome.make(f, {**base, **p})) for f, p in cases]


def wg_split_genomes() -> list:
    """wg_split n: the cooperative warpgroups side by side along N, with tile M 192, 320 and 448, 64- and 48-wide
    WGMMAs (48 needs CuTe's extended shapes), clusters along either side, in sm90_cutlass and sm90_swapab."""
    from genome import Genome
    base = {"cluster_m": 1, "cluster_n": 1, "decomposition": "heuristic", "epilogue": "tma", "raster": "heuristic",
            "reduction": "deterministic", "scheduler": "persistent", "splits": 1, "stages": 0, "swizzle": 1,
            "tile_k": 64, "schedule": "cooperative", "wg_split": "n"}
    cases = [("sm90_cutlass", dict(tile_m=192, tile_n=128, cluster_m=2)),
             ("sm90_cutlass", dict(tile_m=320, tile_n=128, cluster_n=2)),
             ("sm90_swapab", dict(tile_m=448, tile_n=64, cluster_n=2)),
             ("sm90_swapab", dict(tile_m=192, tile_n=96, cluster_n=2))]
    return [FAMILIES.resolve(f).space.validate(Genome.make(f, {**base, **p})) for f, p in cases]


@pytest.mark.parametrize("shape", ["1000x2056x512", "136x4096x1024", "2048x2048x2048"])
def test_warpgroups_split_along_n_pass_the_gate(evaluator, shape):
    """M and N not multiples of the tiles: partial tiles at both edges, in both of the kernels' frames."""
    assert_all_pass_the_gate(evaluator, wg_split_genomes(), Problem.parse(shape))


def splitk_launch_genomes() -> list:
    """sm90_splitk's reduction launch variants (pdl, grouped reduce) of its first seed."""
    fam = FAMILIES.resolve("sm90_splitk")
    g = fam.seeds()[0][1]
    return [fam.space.validate(g.with_params(**p)) for p in ({"pdl": 1}, {"reduce": "grouped"},
                                                             {"pdl": 1, "reduce": "grouped"})]


# (shape, ksplit): the grouped reduce's threads to a quad (reduce_groups: up to 64 threads an SM) are 1 at
# 512x512; 16 at 64x64 with 16 or 64 splits; 2 and 4 with 3 and 5 splits (uneven: lanes with one split
# fewer); 2 at 125x264, whose 8250 quads are not a multiple of a warp's 16
SPLITK_LAUNCH_CASES = [("512x512x16384", 8), ("64x64x4096", 16), ("64x64x4096", 64), ("64x64x6120", 3),
                       ("64x64x6120", 5), ("125x264x8192", 8)]


@pytest.mark.parametrize("shape,ksplit", SPLITK_LAUNCH_CASES)
def test_splitk_reduction_launch_variants_pass_the_gate(evaluator, shape, ksplit):
    problem = Problem.parse(shape)
    fam = FAMILIES.resolve("sm90_splitk")
    genomes = [fam.space.validate(g.with_params(ksplit=ksplit)) for g in splitk_launch_genomes()]
    genomes = [g for g in genomes if fam.space.is_valid(g, problem)]
    assert len(genomes) == 3, f"{shape}: ksplit {ksplit} does not fit"
    results = evaluator.evaluate(genomes, problem)
    for g, m in zip(genomes, results):
        print(shape, g.short(), m.status, m.rel_error, m.acc_error, m.time_us)
    failed = [(g.short(), m.status, m.reason) for g, m in zip(genomes, results) if not m.ok]
    assert not failed, failed


def swapab_splitk_variant_genomes() -> list:
    """sm90_swapab_splitk's paths its seeds do not take: direct fp32 stores of the column-major partial sums (epilogue
    nosmem), the grouped reduction (several threads a quad where C is small), a programmatic dependent reduction
    launch behind the ws schedule, and splits of 3 and 6."""
    fam = FAMILIES.resolve("sm90_swapab_splitk")
    seeds = dict(fam.seeds())
    ws, coop = seeds["ws_64x16x64_c4x1_k2"], seeds["coop_128x16x64_c2x1_k4"]
    return [fam.space.validate(g) for g in (ws.with_params(epilogue="nosmem"), ws.with_params(pdl=1),
                                            ws.with_params(reduce="grouped", ksplit=6),
                                            coop.with_params(reduce="grouped", pdl=1, ksplit=3))]


@pytest.mark.parametrize("shape", ["3x2056x6000", "40x1000x12000"])
def test_swapab_splitk_variants_pass_the_gate(evaluator, shape):
    """M under the 16-row tile, N off the 64- and 128-row tiles, and every K slice ending in a partial K tile
    (6000 / 2, 3, 6 and 12000 / 2, 3, 6 are not multiples of 64); at 3x2056 the grouped reduction runs 4 threads a
    quad, at 40x1000 one."""
    problem = Problem.parse(shape)
    fam = FAMILIES.resolve("sm90_swapab_splitk")
    genomes = swapab_splitk_variant_genomes()
    assert all(fam.space.is_valid(g, problem) for g in genomes)
    assert_all_pass_the_gate(evaluator, genomes, problem)


def interleave_genomes() -> list:
    """skinny_mma with its K splits taking groups in turn (k_interleave) and 128- or 256-byte L2 prefetches,
    over the loops that reach K's end differently: register double buffering on and off, unroll 1, 2 and 4,
    2 to 8 warps splitting K, 1 to 8 CTAs of a cluster, s_tile 8 and 16, one and two warps along the rows."""
    from genome import Genome
    sk = FAMILIES.resolve("skinny_mma").space
    cases = [dict(warp_rows=16, warps_r=1, warps_k=4, s_tile=16, unroll=2, prefetch=1, cluster_k=2, l2_prefetch=128),
             dict(warp_rows=16, warps_r=1, warps_k=8, s_tile=16, unroll=4, prefetch=0, cluster_k=1, l2_prefetch=128),
             dict(warp_rows=32, warps_r=2, warps_k=2, s_tile=8, unroll=1, prefetch=1, cluster_k=4, l2_prefetch=128),
             dict(warp_rows=16, warps_r=1, warps_k=4, s_tile=16, unroll=1, prefetch=1, cluster_k=8, l2_prefetch=256)]
    return [sk.validate(Genome.make("skinny_mma", dict(c, k_interleave=1))) for c in cases]


# K ragged against the groups (4104 = 64 x 64 + 8; 1032), shorter than one group per split (72), and rows or
# columns that are not whole tiles (8191, 777, 13)
@pytest.mark.parametrize("shape", ["16x4096x4104", "8x1000x72", "1x8191x8200", "13x777x1032", "4096x16x2048"])
def test_interleaved_k_splits_pass_the_gate(evaluator, shape):
    problem = Problem.parse(shape)
    sk = FAMILIES.resolve("skinny_mma").space
    genomes = [g for g in interleave_genomes() if sk.is_valid(g, problem)]
    assert len(genomes) == 4
    results = evaluator.evaluate(genomes, problem)
    for g, m in zip(genomes, results):
        print(shape, g.short(), m.status, m.rel_error, m.acc_error, m.time_us)
    failed = [(g.short(), m.status, m.reason) for g, m in zip(genomes, results) if not m.ok]
    assert not failed, failed


@pytest.mark.parametrize("shape", ["1000x2056x512", "2048x2048x2048"])
def test_explicit_epilogue_subtiles_pass_the_gate(evaluator, shape):
    problem = Problem.parse(shape)
    genomes = subtile_genomes()
    auto = [FAMILIES.resolve(g.family).space.validate(g.with_params(epilogue_tile="auto")) for g in genomes]
    results = evaluator.evaluate(genomes + auto, problem)
    for g, m in zip(genomes + auto, results):
        print(shape, g.short(), m.status, m.rel_error, m.time_us)
    failed = [(g.short(), m.status, m.reason) for g, m in zip(genomes + auto, results) if not m.ok]
    assert not failed, failed


def multicast_slice_genomes() -> list:
    """Clusters whose CTAs each multicast a slice of an operand tile that is not whole 8-row swizzle atoms (space
    revision 4): B slices of 4, 12, 20, 36 and 60 rows (tile N / cluster M) in sm90_lean, ping-pong, cooperative and
    sm90_splitk, and 8-CTA clusters along M (12- and 20-row slices) and along N (A slices of 8 rows)."""
    from genome import Genome
    base = {"decomposition": "heuristic", "epilogue": "tma", "raster": "heuristic", "reduction": "deterministic",
            "scheduler": "persistent", "splits": 1, "stages": 0, "swizzle": 1, "tile_k": 64, "cluster_m": 1,
            "cluster_n": 1}
    cases = [("sm90_lean", dict(schedule="ws", tile_m=64, tile_n=144, cluster_m=4)),
             ("sm90_lean", dict(schedule="ws", tile_m=64, tile_n=240, cluster_m=4)),
             ("sm90_lean", dict(schedule="ws", tile_m=64, tile_n=16, cluster_m=4)),
             ("sm90_lean", dict(schedule="ws", tile_m=64, tile_n=96, cluster_m=8)),
             ("sm90_lean", dict(schedule="ws", tile_m=128, tile_n=80, cluster_m=4, cluster_n=2)),
             ("sm90_lean", dict(schedule="ws", tile_m=64, tile_n=160, cluster_m=8)),
             ("sm90_lean", dict(schedule="ws", tile_m=64, tile_n=128, cluster_n=8)),
             ("sm90_cutlass", dict(schedule="pingpong", tile_m=64, tile_n=144, cluster_m=4)),
             ("sm90_cutlass", dict(schedule="cooperative", tile_m=128, tile_n=80, cluster_m=4)),
             ("sm90_splitk", dict(schedule="cooperative", tile_m=128, tile_n=80, cluster_m=4, ksplit=2))]
    return [FAMILIES.resolve(f).space.validate(Genome.make(f, {**base, **c})) for f, c in cases]


# tiles that fit the shape and tiles that do not (ragged M, N and K; M not a whole number of clusters)
@pytest.mark.parametrize("shape", ["1000x1000x1000", "1280x1280x1280", "777x2056x1032", "2048x2048x2048"])
def test_multicast_slices_of_4_row_multiples_pass_the_gate(evaluator, shape):
    problem = Problem.parse(shape)
    genomes = [g for g in multicast_slice_genomes() if FAMILIES.resolve(g.family).space.is_valid(g, problem)]
    assert len(genomes) == (10 if problem.k % 16 == 0 else 9)   # sm90_splitk's 2 splits need K a multiple of 16
    results = evaluator.evaluate(genomes, problem)
    for g, m in zip(genomes, results):
        print(shape, g.short(), m.status, m.rel_error, m.acc_error, m.time_us)
    failed = [(g.short(), m.status, m.reason) for g, m in zip(genomes, results) if not m.ok]
    assert not failed, failed


# population.wave_cooperative: shapes where no sm90_lean tile fills one wave (1792^3, 1152x3072x2048), a short-K one
# whose 128x256 tile takes its pair along M (3072x1280x1024), and one whose tile counts are both odd (no cluster)
WAVE_SHAPES = ["1792x1792x1792", "1152x3072x2048", "3072x1280x1024", "2304x2048x8192"]


def cooperative_wave_genomes(shape: str) -> list:
    """The two cooperative one-wave seeds a campaign times first at `shape` (evolution/wave_seeds.py)."""
    from evolution.wave_seeds import cooperative_wave_seeds
    space = FAMILIES.resolve("sm90_cutlass").space
    return [g for g, _, _ in cooperative_wave_seeds(Problem.parse(shape), space, 132, 2)]


@pytest.mark.parametrize("shape", WAVE_SHAPES)
def test_cooperative_one_wave_seeds_pass_the_gate(evaluator, shape):
    problem = Problem.parse(shape)
    genomes = cooperative_wave_genomes(shape)
    assert len(genomes) == 2
    results = evaluator.evaluate(genomes, problem)
    for g, m in zip(genomes, results):
        print(shape, g.short(), m.status, m.rel_error, m.acc_error, m.time_us)
    failed = [(g.short(), m.status, m.reason) for g, m in zip(genomes, results) if not m.ok]
    assert not failed, failed


# population.vendor_seeds: two shapes where the vendor fits an odd tile (1000^3, 1280^3 on an H100: 72x128 in a 2x4
# cluster, 112x128 in 4x2: docs/results/h100-vendor-algos)
VENDOR_SHAPES = ["1000x1000x1000", "1280x1280x1280"]
MIRROR_FAMILIES = ["sm90_cutlass", "sm90_lean", "sm90_swapab", "sm90_splitk"]


def vendor_mirrors(problem, algorithms: dict, times: dict) -> list:
    """The test's two mirrors of the vendor's algorithms (cuBLASLt's, as a BaselineSet records them; `times`: each
    baseline's median us), as (genome, origin, note) triples."""
    from evolution.seeding import load_handpicked
    from evolution.vendor_seeds import vendor_seeds
    return vendor_seeds(problem, [FAMILIES.resolve(f).space for f in MIRROR_FAMILIES], algorithms, times,
                        load_handpicked(MIRROR_FAMILIES), 2, set())


def recorded_vendor_mirror_genomes() -> list:
    """The mirrors the test below builds when the GPU's fastest cuBLASLt baseline ran an algorithm a device bench
    under docs/results/ recorded at VENDOR_SHAPES (H100 and H200 benches; each baseline's pick taken as the fastest,
    the others in their recorded order), for tests/gpu_prebuild.py. The fastest pick is the GPU's, measured, and
    changes where the baselines tie (1280^3 on an H100: four within 0.3%); the cache holds those seen so far, a new
    one is built in the test (about a minute)."""
    import json
    out = {}
    for path in sorted((Path(__file__).resolve().parent.parent / "docs" / "results").rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        if not isinstance(data, dict) or not isinstance(data.get("shapes"), list):
            continue
        for shape in data["shapes"]:
            if not isinstance(shape, dict) or shape.get("problem") not in VENDOR_SHAPES:
                continue
            bs = shape.get("baselines") or {}
            times = {n: t["median_us"] for n, t in (bs.get("device") or {}).items()
                     if isinstance(t, dict) and t.get("median_us")}
            for name in (bs.get("algorithms") or {}):   # each baseline's pick as the fastest, the rest as recorded
                if name in times:
                    out.update((g.id, g) for g, _, _ in vendor_mirrors(Problem.parse(shape["problem"]),
                                                                      bs["algorithms"], {**times, name: 0.0}))
    return list(out.values())


@pytest.mark.parametrize("shape", VENDOR_SHAPES)
def test_the_mirrors_of_the_vendors_own_algorithm_pass_the_gate(evaluator, shape):
    """The vendor baselines of this GPU say what they ran; two mirrors of it in the campaign families (built here,
    about a minute, unless tests/gpu_prebuild.py built them from a recorded pick) pass the gate. Their times are
    printed beside the vendor's, not asserted."""
    problem = Problem.parse(shape)
    baselines = evaluator.baselines(problem)
    assert baselines.algorithms, "the cuBLASLt baselines name no algorithm"
    times = {name: t.median_us for name, t in baselines.device.items() if t and t.median_us}
    seeds = vendor_mirrors(problem, baselines.algorithms, times)
    assert seeds, f"no family mirrors {baselines.algorithms}"
    results = evaluator.evaluate([g for g, _, _ in seeds], problem)
    print(shape, "vendor", {name: round(us, 2) for name, us in times.items()})
    for (g, _, note), m in zip(seeds, results):
        print(shape, g.short(), m.status, m.rel_error, m.time_us, note)
    failed = [(g.short(), m.status, m.reason) for (g, _, _), m in zip(seeds, results) if not m.ok]
    assert not failed, failed


def cluster_grid_genomes() -> list:
    """Persistent kernels with clusters of 4 and 8 that ask the device how many clusters it runs (cluster_grid
    occupancy): ping-pong, cooperative, stream-K, sm90_splitk and sm90_swapab; with two of their twins that
    leave it to CUTLASS's estimate, for the printed times."""
    from genome import Genome
    cases = [("sm90_cutlass", dict(schedule="pingpong", tile_m=128, tile_n=128, cluster_m=1, cluster_n=4)),
             ("sm90_cutlass", dict(schedule="cooperative", tile_m=256, tile_n=192, cluster_m=2, cluster_n=2)),
             ("sm90_cutlass", dict(schedule="cooperative", tile_m=128, tile_n=128, cluster_m=2, cluster_n=4)),
             ("sm90_cutlass", dict(schedule="cooperative", tile_m=128, tile_n=128, cluster_m=2, cluster_n=2,
                                   scheduler="streamk", decomposition="stream_k")),
             ("sm90_splitk", dict(schedule="pingpong", tile_m=64, tile_n=128, cluster_m=2, cluster_n=2, ksplit=2)),
             ("sm90_swapab", dict(schedule="cooperative", tile_m=128, tile_n=128, cluster_m=4, cluster_n=1))]
    out = []
    for i, (family, params) in enumerate(cases):
        space = FAMILIES.resolve(family).space
        base = {**space.default_params(), "tile_k": 64, **params}
        out.append(space.validate(Genome.make(family, space.canonical({**base, "cluster_grid": "occupancy"}))))
        if i < 2:
            out.append(space.validate(Genome.make(family, space.canonical(base))))
    return out


# 1280^3: 10 x 12 tiles of 128x128 in clusters of 1x4, 30 clusters; 5000x1000x3000: 20 x 6 tiles of 256x192 in
# clusters of 2x2, 30; 777x2056x1032: ragged M, N and K
@pytest.mark.parametrize("shape", ["1280x1280x1280", "5000x1000x3000", "777x2056x1032"])
def test_cluster_grid_occupancy_kernels_pass_the_gate(evaluator, shape):
    problem = Problem.parse(shape)
    genomes = [g for g in cluster_grid_genomes() if FAMILIES.resolve(g.family).space.is_valid(g, problem)]
    assert len(genomes) >= 6
    results = evaluator.evaluate(genomes, problem)
    for g, m in zip(genomes, results):
        print(shape, g.short(), m.status, m.rel_error, m.acc_error, m.time_us)
    failed = [(g.short(), m.status, m.reason) for g, m in zip(genomes, results) if not m.ok]
    assert not failed, failed


def test_cluster_grid_occupancy_kernels_are_told_the_clusters_the_device_runs():
    """Each cluster_grid occupancy kernel's query (evogemm_active_clusters, outside the C ABI) gives a count the
    device holds at once; on a 132-SM H100/H200 more CTAs than CUTLASS's estimate launches (116 in clusters of 4,
    112 in clusters of 8; the H200 runs 30 and 15 clusters). Without it the gate test above would also pass with a
    query that silently failed (CUTLASS's estimate then stands)."""
    import ctypes
    import torch
    from evaluator.compile import Compiler
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    compiler = Compiler.default()          # EVOGEMM_CACHE: where tests/gpu_prebuild.py built them
    try:
        occupancy = [g for g in cluster_grid_genomes() if g.param_dict.get("cluster_grid") == "occupancy"]
        builds = compiler.build_many(occupancy)
    finally:
        compiler.close()
    for g, build in zip(occupancy, builds):
        assert build.ok, (g.short(), build.reason)
        p = FAMILIES.resolve(g.family).space.params_of(g)
        size = p["cluster_m"] * p["cluster_n"]
        count = ctypes.CDLL(build.library).evogemm_active_clusters()
        print(g.short(), "cluster of", size, "->", count, "clusters at once")
        assert 0 < count * size <= sms, (g.short(), count)
        if sms == 132:
            assert count * size > {4: 116, 8: 112}[size], (g.short(), count)


def any_k_genomes() -> list:
    """skinny_mma genomes whose any-K instantiation (K % 8 != 0, space revision 7) differs in how it loops: the
    decode seed's double buffering kept (unroll 2), unroll 8 halved to a single buffer, 512 threads (unroll 1, 128
    registers a thread), 32 rows and 4 n8 tiles a warp, interleaved K splits over a cluster of 4, and 64 Y columns."""
    cases = [dict(warp_rows=16, warps_r=1, warps_k=4, s_tile=16, unroll=2, prefetch=1, cluster_k=2),
             dict(warp_rows=16, warps_r=1, warps_k=8, s_tile=8, unroll=8, prefetch=1, cluster_k=1),
             dict(warp_rows=16, warps_r=4, warps_k=4, s_tile=16, unroll=2, prefetch=1, cluster_k=1),
             dict(warp_rows=32, warps_r=2, warps_k=2, s_tile=32, unroll=1, prefetch=1, cluster_k=1),
             dict(warp_rows=16, warps_r=1, warps_k=4, s_tile=16, unroll=2, prefetch=1, cluster_k=4, k_interleave=1,
                  l2_prefetch=128),
             dict(warp_rows=16, warps_r=1, warps_k=2, s_tile=64, unroll=1, prefetch=0, cluster_k=2)]
    return validated("skinny_mma", cases)


# K odd (rows start on every 2-byte boundary), 2 and 4 mod 8, K = 1, K shorter than a group, a last row that ends
# the buffer off a 16-byte boundary; X = W (M < N) and X = A (M > N); M = 1
ANY_K_SHAPES = ["1x4096x4095", "16x4093x777", "13x1000x1001", "7x100x1", "64x777x4098", "300x16x4100", "5x3x33",
                "8x14336x4099"]


@pytest.mark.parametrize("shape", ANY_K_SHAPES)
def test_skinny_any_k_passes_the_gate(evaluator, shape):
    problem = Problem.parse(shape)
    sk = FAMILIES.resolve("skinny_mma").space
    genomes = [g for g in any_k_genomes() if sk.is_valid(g, problem)]
    assert len(genomes) == 6, [v for g in any_k_genomes() for v in sk.violations(g, problem)]
    assert_all_pass_the_gate(evaluator, genomes, problem)


def cluster_reduction_genomes() -> list:
    """skinny_mma genomes whose cluster reduction (each CTA owns a share of the tile; its peers write their partial
    sums of it into its shared memory through st.async, counted by its mbarrier) runs with 2, 4, 8 and 16 CTAs a
    cluster, over shares of 8 to 512 floats: 16 x 8 tiles split 16 ways, 32 x 64 tiles 2 ways, two warps along the
    rows, one warp splitting K (no warp reduction before the cluster's)."""
    cases = [dict(warp_rows=16, warps_r=1, warps_k=4, s_tile=8, unroll=1, prefetch=1, cluster_k=16),
             dict(warp_rows=16, warps_r=1, warps_k=8, s_tile=16, unroll=2, prefetch=1, cluster_k=8),
             dict(warp_rows=16, warps_r=2, warps_k=2, s_tile=16, unroll=2, prefetch=0, cluster_k=4),
             dict(warp_rows=32, warps_r=1, warps_k=1, s_tile=64, unroll=1, prefetch=1, cluster_k=2)]
    return validated("skinny_mma", cases)


# X = W (M < N) and X = A (M > N), rows and columns that are not whole tiles (37, 5, 77), K shorter than one 32-wide
# chunk a split (200 over 16 CTAs x 4 warps), the public small-M*N shape
CLUSTER_REDUCTION_SHAPES = ["5x37x3000", "77x5x3000", "13x77x200", "64x64x4096"]


@pytest.mark.parametrize("shape", CLUSTER_REDUCTION_SHAPES)
def test_skinny_cluster_reduction_passes_the_gate(evaluator, shape):
    assert_valid_and_all_pass(evaluator, "skinny_mma", cluster_reduction_genomes(), Problem.parse(shape))


def stream_cluster_genomes() -> list:
    """stream_wgmma genomes with a cluster along K (each CTA of the cluster takes 1 / cluster_k of K; a warp whose
    rows another CTA stores pushes its accumulators into that CTA's shared memory through st.async, counted by its
    mbarrier): clusters of 2, 4 and 8 CTAs, 64- and 128-row units, small-side tiles of 32 to 256, two pieces a
    stage."""
    cases = [dict(rows=128, tile_s=128, pieces=1, stages=4, ksplit=1, ctas_per_sm=1, cluster_k=8),
             dict(rows=128, tile_s=64, pieces=2, stages=3, ksplit=1, ctas_per_sm=1, cluster_k=4),
             dict(rows=64, tile_s=256, pieces=1, stages=3, ksplit=1, ctas_per_sm=1, cluster_k=2),
             dict(rows=64, tile_s=32, pieces=2, stages=4, ksplit=1, ctas_per_sm=1, cluster_k=4)]
    return validated("stream_wgmma", cases)


# W streamed (M < N) and A streamed (M > N), small-side and row tiles that are not whole (100, 1000, 520), K off whole
# stages (3000 and 1032: the last stage zero-filled past K), a small side above 256, and the public small-M*N long-K
# shape
STREAM_CLUSTER_SHAPES = ["100x1000x3000", "1000x100x1032", "520x384x4096", "512x512x16384"]


@pytest.mark.parametrize("shape", STREAM_CLUSTER_SHAPES)
def test_stream_wgmma_cluster_along_k_passes_the_gate(evaluator, shape):
    assert_valid_and_all_pass(evaluator, "stream_wgmma", stream_cluster_genomes(), Problem.parse(shape))


def skinny_tma_edge_genomes() -> list:
    """skinny_tma configurations no seed has: one 64-k piece a stage (a warp's single k16 step a stage: one
    accumulator chain), 8 warps on a 16-row group (two pieces: one step each), 2 warps on each of four 16-row groups,
    16 pieces with 2 stages and two CTAs an SM, 8 stages of one piece."""
    cases = [dict(rows=16, pieces=1, stages=8, consumer_warps=4, ctas_per_sm=1),
             dict(rows=16, pieces=2, stages=6, consumer_warps=8, ctas_per_sm=2),
             dict(rows=64, pieces=2, stages=4, consumer_warps=8, ctas_per_sm=1),
             dict(rows=32, pieces=16, stages=2, consumer_warps=2, ctas_per_sm=1),
             dict(rows=64, pieces=1, stages=8, consumer_warps=4, ctas_per_sm=2)]
    return validated("skinny_tma", cases)


# K shorter than one piece, K off 64 with whole pieces past its end, one row, S = 16 and S = 9 (two n8 tiles), A
# streamed with 9 columns of C
SKINNY_TMA_EDGE_SHAPES = ["16x4096x40", "9x777x1032", "1x1x4096", "4104x9x2056"]


@pytest.mark.parametrize("shape", SKINNY_TMA_EDGE_SHAPES)
def test_skinny_tma_edge_configurations_pass_the_gate(evaluator, shape):
    problem = Problem.parse(shape)
    st = FAMILIES.resolve("skinny_tma").space
    genomes = [g for g in skinny_tma_edge_genomes() if st.is_valid(g, problem)]
    assert len(genomes) == 5, [v for g in skinny_tma_edge_genomes() for v in st.violations(g, problem)]
    assert_all_pass_the_gate(evaluator, genomes, problem)


def y_resident_genomes() -> list:
    """skinny_tma with Y's K resident in shared memory: 16 and 8 pieces a stage (two and four stages), 8 warps on a
    16-row group, 32-row boxes (two 16-row groups read the same Y), two CTAs an SM (where Y's K is short)."""
    cases = [dict(rows=16, pieces=16, stages=2, consumer_warps=4, ctas_per_sm=1, y_resident=1),
             dict(rows=16, pieces=8, stages=4, consumer_warps=8, ctas_per_sm=1, y_resident=1),
             dict(rows=32, pieces=4, stages=4, consumer_warps=8, ctas_per_sm=1, y_resident=1),
             dict(rows=16, pieces=2, stages=6, consumer_warps=4, ctas_per_sm=2, y_resident=1)]
    return validated("skinny_tma", cases)


# Y's boxes reused by later row blocks: the 16-row, one-CTA-an-SM genomes take two or more row blocks a CTA at every
# shape (256, 1250, 512, 257, 313, 375 row blocks on 132 CTAs); the 32-row and the two-CTA genomes do at
# 13x20000x1000 and 1x8191x2048 (at 16x4096x4096 and 4104x9x2056 they take one). K off the stages (1000, 2056 and
# 8200: Y's last boxes zero-filled past K), two n8 tiles (S = 13, 9: 16-row boxes of Y) and one (S = 1, 8, 3: 8-row
# boxes), A streamed (M > N). At 16x4096x4096 two CTAs with Y's 128 KB do not fit an SM, so three of the four run
# there; at K = 8192 and 8200 only Y's 8-row boxes fit (128-144 KB), one CTA an SM.
Y_RESIDENT_SHAPES = {"16x4096x4096": 3, "13x20000x1000": 4, "1x8191x2048": 4, "4104x9x2056": 4, "8x5000x8192": 3,
                     "6000x3x8200": 3}


@pytest.mark.parametrize("shape", sorted(Y_RESIDENT_SHAPES))
def test_skinny_tma_y_resident_passes_the_gate(evaluator, shape):
    problem = Problem.parse(shape)
    st = FAMILIES.resolve("skinny_tma").space
    genomes = [g for g in y_resident_genomes() if st.is_valid(g, problem)]
    assert len(genomes) == Y_RESIDENT_SHAPES[shape], [v for g in y_resident_genomes() for v in st.violations(g, problem)]
    assert_all_pass_the_gate(evaluator, genomes, problem)
