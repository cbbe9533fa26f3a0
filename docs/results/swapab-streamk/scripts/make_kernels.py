"""Session 66: sm90_swapab with CUTLASS's stream-K decomposition at decode shapes, never timed there.

At 16x6144x4096 the swapped 128x16 tile makes 48 tiles (64x16: 96) for 132 SMs. Stream-K gives each SM an equal
share of the (tile, k-block) iterations and adds the partial tiles up afterwards, so every SM streams W. The only
swapped stream-K kernel any bench timed at the decode shapes ran the split-K decomposition (86772c0f, 4 splits:
0.73x and 0.87x the vendor on the H200). This writes its build's stream-K and heuristic decompositions (runtime
knobs, no new build) and the same at tile K 128 and clusters of 1 and 4 (bedab432, the leader at both public
decode shapes, has tile K 128 and a 4x1 cluster): 3 clusters x 2 tile K x (stream-K with either reduction, or the
heuristic), 18 genomes in 6 builds, as kernels/sm90_swapab-<id>.json. Run from the repository root."""
import json
from pathlib import Path

from genome import Genome, Problem
from templates import family_registry

SHAPES = ("16x6144x4096", "16x4096x14336", "16x4096x4096", "1x8192x8192", "8x14336x4096")
OUT = Path("docs/results/swapab-streamk/kernels")

space = family_registry().resolve("sm90_swapab").space
base = Genome.from_dict({"family": "sm90_swapab", "params": {
    "cluster_m": 2, "cluster_n": 1, "decomposition": "split_k", "epilogue": "tma", "raster": "heuristic",
    "reduction": "deterministic", "schedule": "cooperative", "scheduler": "streamk", "splits": 4, "stages": 0,
    "swizzle": 1, "tile_k": 64, "tile_m": 128, "tile_n": 16}, "patches": []})
assert base.id.startswith("86772c0f"), base.id
problems = [Problem.parse(s) for s in SHAPES]
OUT.mkdir(parents=True, exist_ok=True)
n = 0
for tile_k in (64, 128):
    for cluster_m in (1, 2, 4):
        for decomposition, reduction in (("stream_k", "deterministic"), ("stream_k", "nondeterministic"),
                                         ("heuristic", "deterministic")):
            g = space.validate(base.with_params(tile_k=tile_k, cluster_m=cluster_m, splits=1,
                                                decomposition=decomposition, reduction=reduction))
            bad = [str(p) for p in problems if not space.is_valid(g, p)]
            if bad:
                raise SystemExit(f"{g.id[:8]} is invalid at {bad}")
            (OUT / f"sm90_swapab-{g.id[:8]}.json").write_text(json.dumps(g.to_dict(), indent=1) + "\n")
            print(g.id[:8], f"tile K {tile_k}, cluster {cluster_m}x1, {decomposition}, {reduction}")
            n += 1
print(n, "genomes")
