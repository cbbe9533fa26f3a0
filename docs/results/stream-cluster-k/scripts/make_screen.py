"""Session 61: stream_wgmma with a cluster along K (cluster_k) against its twins that split K through the workspace
and a second kernel (cluster_k 1, ksplit = the same count), at shapes with a small side or small M x N and long K.

For each shape and each (rows, pieces, cluster size c): the small-side tile is the smallest tile_s that covers the
small side, the ring the deepest that fits beside the cluster's receive buffer, and the
configuration is kept only where its clusters run in one wave (units x c CTAs within what the device's GPC layout
holds at once, evaluator.sim_sm90.usable_ctas) and cover at least a quarter of the SMs; above a small side of
256, small-side tiles of 64 and 128. Writes kernels/screen/hall_of_fame/
<shape>.json (a list of genomes a shape, for `bench --per-shape`). Run from the repository root."""
import json
import sys
from pathlib import Path

from evaluator.sim_device import get_device
from evaluator.sim_sm90 import usable_ctas
from genome import Genome, Problem
from genome.stream_wgmma_space import smem_bytes, STATIC_SMEM_BYTES
from genome.sm90_resources import SMEM_BYTES_PER_BLOCK
from templates import family_registry

SHAPES = ["16x6144x4096", "16x4096x14336", "8x14336x4096", "1x8192x8192", "16x4096x4096", "8192x64x8192",
          "128x4096x4096", "128x4096x14336", "128x28672x4096", "512x512x16384", "64x64x4096", "32x64x8192"]
TILES = (16, 32, 64, 96, 128, 192, 256)
OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/results/stream-cluster-k/kernels/screen")

sw = family_registry().resolve("stream_wgmma").space
dev = get_device("h200")
(OUT / "hall_of_fame").mkdir(parents=True, exist_ok=True)
total = set()
for shape in SHAPES:
    prob = Problem.parse(shape)
    R, S = max(prob.m, prob.n), min(prob.m, prob.n)
    out = {}
    for rows, tile_s in [(r, t) for r in (64, 128) for t in ([next(t for t in TILES if t >= S)] if S <= 256 else [64, 128])]:
        for pieces in (1, 2, 4):
            for c in (2, 4, 8):
                units = -(-R // rows) * -(-S // tile_s)
                ctas = units * c
                if ctas > usable_ctas(c, dev) or 4 * ctas < dev.n_sms:
                    continue
                base = dict(rows=rows, tile_s=tile_s, pieces=pieces, ksplit=1, ctas_per_sm=1, cluster_k=c)
                fits = [st for st in (2, 3, 4, 6, 8)
                        if smem_bytes({**base, "stages": st}) + STATIC_SMEM_BYTES <= SMEM_BYTES_PER_BLOCK]
                if not fits:
                    continue
                g = Genome.make("stream_wgmma", {**base, "stages": fits[-1]})
                twin = Genome.make("stream_wgmma", {**base, "stages": fits[-1], "cluster_k": 1, "ksplit": c})
                for x in (g, twin):
                    if sw.is_valid(x, prob):
                        x = sw.validate(x)
                        out[x.id] = x
    (OUT / "hall_of_fame" / f"{shape}.json").write_text(json.dumps([g.to_dict() for g in out.values()], indent=1))
    total.update(out)
    print(shape, len(out), "kernels")
print(len(total), "distinct genomes")
