"""Rebuild, on the CPU machine, the kernel cache that ../../h200-public-13/scripts/call_s63.sh and call_s63b.sh carry,
and pack it. A fresh checkout has no `.kc/` (session 65 started from one): this is what `.kc/s64.txz` held, built in
the order a short device budget needs it. Three groups, each built before the next, and a fourth for another call:

- `mirror-tests`: call_s63b.sh's two test files (the ABI host-path cases and the recorded vendor mirrors), 27 builds;
- `bench`: every kernel call_s63.sh's H200 branch benches (the record's folders, ../kernels/decode-neighbours and
  ../kernels/consistent), 131 more;
- `tests`: the rest of what tests/gpu_prebuild.py lists, for call_s63.sh's whole `pytest -m gpu`, 163 more;
- `streamk`: what ../../swapab-streamk/scripts/call_s66.sh benches (its kernels and bedab432), 7 builds
  (`--pack .kc/s66sk.txz streamk`).

About 76 minutes for the first three (session 65) with the CPU machine's two nvcc jobs. Run from the repository root:
`python docs/results/gpu-suite-time/scripts/build_carry.py --cache .kc/kc` builds;
`... --cache .kc/kc --pack .kc/s65.txz mirror-tests bench` then packs the builds of the groups named (a build still
missing is left out and said; the GPU machine builds it in the call)."""

from __future__ import annotations

import argparse
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

BENCH_FOLDERS = ("h200-public-10/selection", "h200-tilek128/probe", "skinny-y-resident/kernels",
                 "h200-public-10/public-mirrors", "h200-public-10/public-mirrors-v2-new",
                 "h200-mirrors-rev2/mirrors-new",
                 "splitk-two-ctas/kernels/sm90_swapab_splitk-eb37e6ad.json", "stream-cluster-k/kernels/screen",
                 "h200-public-13/kernels/decode-neighbours", "h200-public-13/kernels/consistent")
STREAMK_KERNELS = ("swapab-streamk/kernels", "skinny-swapab/kernels/sm90_swapab-bedab432.json")
GROUPS = ("mirror-tests", "bench", "tests", "streamk")


def group_genomes(name: str) -> list:
    """The genomes of one group (duplicates across groups are dropped by the caller, first group wins)."""
    if name == "mirror-tests":
        import test_gpu_abi_host_path
        import test_gpu_families
        return [c.genome() for c in test_gpu_abi_host_path.CASES] + test_gpu_families.recorded_vendor_mirror_genomes()
    if name == "bench":
        from experiments.bench import bench_kernels
        kernels, halls = bench_kernels([ROOT / "docs" / "results" / f for f in BENCH_FOLDERS], per_shape=True)
        return kernels + [g for genomes in (halls or {}).values() for g in genomes]
    if name == "streamk":
        from experiments.bench import load_kernels
        return load_kernels([ROOT / "docs" / "results" / f for f in STREAMK_KERNELS])
    if name == "tests":
        import gpu_prebuild
        return gpu_prebuild.gpu_test_genomes()
    raise ValueError(f"unknown group {name!r}")


def keyed_groups(compiler, names) -> "list[tuple[str, dict]]":
    """(group, {build key: genome}) in order, each build key in the first group that has it."""
    seen: set[str] = set()
    out = []
    for name in names:
        keyed = {}
        for g in group_genomes(name):
            key = compiler.key_of(g)
            if key not in seen:
                seen.add(key)
                keyed[key] = g
        out.append((name, keyed))
    return out


def main() -> int:
    from evaluator.compile import Compiler
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", required=True, help="kernel cache folder to build into / pack from")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--pack", metavar="TXZ", help="pack the groups' builds into TXZ instead of building")
    ap.add_argument("groups", nargs="*", default=list(GROUPS), help=f"default: {' '.join(GROUPS)}")
    args = ap.parse_args()
    unknown = [g for g in args.groups if g not in GROUPS]
    if unknown:
        ap.error(f"unknown group(s) {', '.join(unknown)}: give some of {', '.join(GROUPS)}")
    compiler = Compiler.default(Path(args.cache), jobs=args.jobs)
    t0 = time.monotonic()
    groups = keyed_groups(compiler, args.groups)
    if args.pack:
        with tarfile.open(args.pack, "w:xz") as tar:
            for name, keyed in groups:
                have = [k for k, g in keyed.items() if compiler.cached(g)]
                for key in have:
                    entry = compiler.entry_dir(key)
                    tar.add(str(entry), arcname=str(entry.relative_to(compiler.cache_dir)))
                print(f"{name}: {len(have)} of {len(keyed)} builds packed", flush=True)
        return 0
    failed = 0
    for name, keyed in groups:
        todo = [g for g in keyed.values() if not compiler.cached(g)]
        print(f"== {name}: {len(keyed)} builds, {len(todo)} to build ({time.monotonic() - t0:.0f} s)", flush=True)

        def progress(done: int, total: int, r, name=name) -> None:
            state = "ok" if r.ok else f"FAILED: {r.reason}"
            print(f"  {name} [{done}/{total}] {r.genome_id[:8]} {r.seconds:.0f} s {state}", flush=True)
        failed += sum(not r.ok for r in compiler.build_many(todo, progress=progress))
    compiler.close()
    print(f"{failed} failed, {time.monotonic() - t0:.0f} s in all")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
