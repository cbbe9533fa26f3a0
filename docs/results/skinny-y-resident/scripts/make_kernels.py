"""Write the probe's kernels: skinny_tma's y_resident configurations (16-row boxes, the ring of 64-96 KB that fits
beside Y's K of 4096), their non-resident twins, and the best recorded kernels at the probe's decode shapes
(by `evogemm bench` on an H200: the public record's 16x6144x4096 kernels, and at 8x14336x4096 / 4x12288x4096 the
skinny_mma kernels that lead there). Usage: python make_kernels.py OUT_DIR"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from evolution.seeding import read_seed_pool  # noqa: E402
from genome import Genome  # noqa: E402
from templates import family_registry  # noqa: E402

REG = family_registry()


def tma(**kw):
    base = dict(rows=16, pieces=16, stages=3, consumer_warps=4, ctas_per_sm=1)
    return REG.resolve("skinny_tma").space.validate(Genome.make("skinny_tma", {**base, **kw}))


PROBES = [
    tma(),                                                   # e4a94592: the public record's at 16x6144x4096
    tma(pieces=8, stages=4),                                 # 568e9c2b
    tma(stages=2, y_resident=1),
    tma(pieces=8, stages=4, y_resident=1),
    tma(pieces=8, stages=3, y_resident=1),
    tma(pieces=4, stages=8, y_resident=1),
    tma(pieces=4, stages=6, y_resident=1),
    tma(pieces=8, stages=4, consumer_warps=8, y_resident=1),
    tma(stages=2, consumer_warps=8, y_resident=1),
    tma(pieces=2, stages=8, y_resident=1),
    tma(rows=32, pieces=4, stages=4, y_resident=1),          # 32-row boxes: half the row blocks (session 57)
    tma(rows=32, pieces=4, stages=4, consumer_warps=8, y_resident=1),
]
# the best recorded kernels at the probe's decode shapes, each from an H200 bench that timed it (id prefix, bench)
RECORDED = (("bedab432", "docs/results/swapab-splitk/h200-s54/bench"),
            ("fa870b8d", "docs/results/h200-public-11/call1/pub"),
            ("bb1ac89c", "docs/results/h200-public-11/call1/pub"),
            ("f29efb11", "docs/results/h200-public-9/bench"))


def recorded() -> list:
    out = []
    for prefix, bench in RECORDED:
        pool = read_seed_pool(bench, per_shape=10**6)
        out.append(next(Genome.from_dict(e["genome"]) for items in pool.values() for e in items
                        if e["genome"]["id"].startswith(prefix)))
    return out


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for g in PROBES + recorded():
        (out / f"{g.family}-{g.id[:8]}.json").write_text(json.dumps(g.to_dict(), indent=1) + "\n")
        print(g.family, g.id[:8], g.params)
