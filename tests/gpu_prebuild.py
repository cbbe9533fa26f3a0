"""Build every kernel the `gpu` tests use, all at once, into the kernel cache (EVOGEMM_CACHE, or
the default), so that `pytest -m gpu` on a fresh GPU machine spends one parallel build wave
instead of one wave per test. Not a test: run `python tests/gpu_prebuild.py [--jobs N]` before
`pytest -m gpu` (the tests then find their kernels in the cache). Needs nvcc, no GPU."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from genome import Genome, Problem  # noqa: E402
from templates import family_registry  # noqa: E402


def gpu_test_genomes() -> list[Genome]:
    """The union of the kernels test_gpu.py, test_gpu_families.py, test_gpu_abi_host_path.py,
    test_gpu_dependent_launch.py, test_gpu_export.py and test_gpu_splitk_inkernel.py build (planted kernels, the
    short campaigns' seeds and the mirrors of the vendor picks recorded at the mirror test's shapes included), each
    once."""
    import planted
    import test_gpu
    import test_gpu_abi_host_path
    import test_gpu_dependent_launch
    import test_gpu_families
    import test_gpu_splitk_inkernel
    fams = family_registry()
    out: dict[str, Genome] = {}
    for family, shape in test_gpu_families.FAMILY_SHAPES:
        fam, problem = fams.resolve(family), Problem.parse(shape)
        out.update((g.id, g) for _, g in fam.seeds() if fam.space.is_valid(g, problem))
    out.update((g.id, g) for g in test_gpu.genomes(test_gpu.SEEDS))
    for case in test_gpu_abi_host_path.CASES:
        g = case.genome()
        out[g.id] = g
    splitk, problem = fams.resolve("sm90_splitk"), Problem.parse("64x64x4096")  # test_gpu_export's campaign
    out.update((g.id, g) for _, g in splitk.seeds() if splitk.space.is_valid(g, problem))
    for g in (planted.base_genome(), planted.planted("oob"), planted.planted("hang"), planted.fp16_accumulating(),
              planted.skinny_base(), planted.dependent_launch(), test_gpu_dependent_launch.splitk_pdl()):
        out[g.id] = g
    for g in test_gpu_families.subtile_genomes():
        auto = fams.resolve(g.family).space.validate(g.with_params(epilogue_tile="auto"))
        out.update({g.id: g, auto.id: auto})
    out.update((g.id, g) for g in test_gpu_families.splitk_launch_genomes())   # ksplit is a runtime knob
    out.update((g.id, g) for g in test_gpu_families.wg_split_genomes())
    out.update((g.id, g) for g in test_gpu_families.swapab_splitk_variant_genomes())   # ksplit: a runtime knob
    out.update((g.id, g) for g in test_gpu_families.interleave_genomes())   # cluster_k: a runtime knob
    out.update((g.id, g) for g in test_gpu_families.any_k_genomes())
    out.update((g.id, g) for g in test_gpu_families.cluster_reduction_genomes())   # cluster_k: a runtime knob
    out.update((g.id, g) for g in test_gpu_families.stream_cluster_genomes())
    out.update((g.id, g) for g in test_gpu_families.skinny_tma_edge_genomes())
    out.update((g.id, g) for g in test_gpu_families.y_resident_genomes())
    out.update((g.id, g) for g in test_gpu_families.multicast_slice_genomes())
    out.update((g.id, g) for g in test_gpu_families.cluster_grid_genomes())
    out.update((g.id, g) for g in test_gpu_families.recorded_vendor_mirror_genomes())
    out.update((g.id, g) for g in test_gpu_splitk_inkernel.inkernel_genomes())   # ksplit: a runtime knob
    for shape in test_gpu_families.WAVE_SHAPES:
        out.update((g.id, g) for g in test_gpu_families.cooperative_wave_genomes(shape))
    out.update((g.id, g) for g in short_campaign_genomes())
    return list(out.values())


def short_campaign_genomes() -> list[Genome]:
    """What test_gpu.py's short campaigns propose: the same campaigns run on the simulator (their
    seeding does not depend on measurements, and their runtime-knob moves need no other build)."""
    import test_gpu
    from experiments.prebuild import simulated_proposals
    from experiments.schema import parse_campaign
    out: list[Genome] = []
    for i, (shapes, in_flight) in enumerate(((["2048x2048x2048"], 1), (test_gpu.IN_FLIGHT_SHAPES, 2))):
        data = test_gpu.short_campaign(f"prebuild-{i}", shapes, in_flight=in_flight, backend="simulator")
        out += [g for _, g in simulated_proposals(parse_campaign(data), first_round_only=False)]
    return out


def main(argv: "list[str] | None" = None) -> int:
    from evaluator.compile import Compiler
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=None, help="parallel nvcc builds (default: the compiler's)")
    ap.add_argument("--cache", default=None, help="kernel cache folder (default: EVOGEMM_CACHE or the default)")
    args = ap.parse_args(argv)
    genomes = gpu_test_genomes()
    compiler = Compiler.default(args.cache, jobs=args.jobs) if args.jobs else Compiler.default(args.cache)
    t0 = time.monotonic()
    print(f"building {len(genomes)} kernels into {compiler.cache_dir} ({compiler.pool_size()} at a time)", flush=True)
    results = compiler.build_many(genomes)
    failed = [(g.family, g.short(), r.reason) for g, r in zip(genomes, results) if not r.ok]
    print(f"{len(results) - len(failed)} built or cached, {len(failed)} failed, {time.monotonic() - t0:.0f} s")
    for row in failed:
        print("FAILED", *row)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
