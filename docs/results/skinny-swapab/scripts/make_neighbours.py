"""The neighbourhood of sm90_swapab 64x16 in a 4x1 cluster (`189b3521`, the vendor mirror that ran 16x4096x14336
at 1.064-1.073x the vendor on an H200, ../h200-public-11): one parameter changed at a time (cluster along N,
tile K, stages, schedule, epilogue, the tile along N and along M), and the tile along M widened to 32 for M = 32;
each kept where the family's space takes it at every shape of suite.yaml whose M the tile covers in one step.
Writes OUT_DIR/sm90_swapab-ID8.json and notes.json beside it (what each changes); the split-K variants of session 50
go to OUT_DIR-streamk.
usage: make_neighbours.py OUT_DIR"""
import json
import sys
from pathlib import Path

from genome import Genome, Problem
from templates import get_space

BASE = {"cluster_m": 4, "cluster_n": 1, "decomposition": "heuristic", "epilogue": "tma", "raster": "heuristic",
        "reduction": "deterministic", "schedule": "ws", "scheduler": "persistent", "splits": 1, "stages": 0,
        "swizzle": 1, "tile_k": 64, "tile_m": 64, "tile_n": 16}
CHANGES = [
    {}, {"cluster_m": 1}, {"cluster_m": 2}, {"cluster_m": 8}, {"tile_k": 128}, {"tile_k": 128, "cluster_m": 2},
    {"tile_k": 128, "cluster_m": 8}, {"stages": 4}, {"stages": 6}, {"stages": 8}, {"schedule": "pingpong"},
    {"schedule": "cooperative", "tile_m": 128}, {"epilogue": "nosmem"}, {"tile_m": 128}, {"tile_m": 128, "cluster_m": 2},
    {"tile_n": 32}, {"tile_n": 32, "tile_k": 128}, {"tile_n": 8}, {"swizzle": 2}, {"raster": "along_n"},
]
# session 50, written to OUT_DIR-streamk: K split across CTAs (the stream-K scheduler's split-K and stream-K
# decompositions take the cooperative 128-row tile), so that more than N / 64 CTAs stream W; the split is a runtime
# knob, so three builds
COOP_STREAMK = {"schedule": "cooperative", "tile_m": 128, "scheduler": "streamk"}
SPLIT_CHANGES = [*({**COOP_STREAMK, "cluster_m": c, "splits": s} for c, s in ((4, 2), (4, 3), (4, 4), (2, 2), (2, 4), (1, 4))),
                 *({**COOP_STREAMK, "cluster_m": c, "decomposition": "stream_k"} for c in (4, 1))]

space = get_space("sm90_swapab")
shapes = [Problem.parse(f"{m}x{n}x{k}") for group in
          __import__("yaml").safe_load((Path(__file__).resolve().parents[1] / "suite.yaml").read_text())["shapes"]
          .values() for m, n, k in group]
notes = {}
for change, out in [(c, Path(sys.argv[1])) for c in CHANGES] + [(c, Path(sys.argv[1] + "-streamk")) for c in SPLIT_CHANGES]:
    out.mkdir(parents=True, exist_ok=True)
    genome = Genome.make("sm90_swapab", space.canonical({**BASE, **change}))
    ok = [p.name for p in shapes if space.is_valid(genome, p)]
    if not ok:
        print("refused everywhere:", change)
        continue
    name = f"sm90_swapab-{genome.id[:8]}"
    (out / f"{name}.json").write_text(json.dumps(genome.to_dict(), indent=1) + "\n")
    notes[name] = {"change": change, "valid_at": ok}
    print(name, change, len(ok))
(Path(sys.argv[1]).parent / "notes.json").write_text(json.dumps(notes, indent=1) + "\n")
