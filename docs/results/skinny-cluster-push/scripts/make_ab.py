import json, itertools
from pathlib import Path
from genome import Genome, Patch, Problem
from templates import family_registry
old = json.load(open(".kc/s60/old_blocks.json"))
K = Path(".kc/s60/ab"); [(K / d).mkdir(parents=True, exist_ok=True) for d in ("new", "old", "screen")]
for gid, e in old.items():
    g = Genome.from_dict(e["genome"])
    (K / "new" / f"skinny_mma-{g.id[:8]}.json").write_text(json.dumps(g.to_dict(), indent=1))
    d = g.to_dict(); d.pop("id", None)
    d["patches"] = [Patch(b, c, note="the cluster reduction before session 60 (two cluster barriers)").to_dict()
                    for b, c in e["blocks"].items()]
    go = Genome.from_dict(d)
    (K / "old" / f"skinny_mma-{go.id[:8]}-old-{g.id[:8]}.json").write_text(json.dumps(go.to_dict(), indent=1))
sp = family_registry().resolve("skinny_mma").space
prob = Problem.parse("64x64x4096"); n = 0
for wk, st, u, ck in itertools.product((4, 8), (8, 16, 32), (1, 2, 4), (2, 4, 8, 16)):
    g = Genome.make("skinny_mma", dict(warp_rows=16, warps_r=1, warps_k=wk, s_tile=st, unroll=u, prefetch=1, cluster_k=ck))
    if not sp.is_valid(g, prob): continue
    g = sp.validate(g); n += 1
    (K / "screen" / f"skinny_mma-{g.id[:8]}.json").write_text(json.dumps(g.to_dict(), indent=1))
print(len(old), "pairs;", n, "screen")
