import json, sys
sys.path.insert(0, '.')
from genome import Genome
from templates import get_space
sp = get_space("skinny_mma")
CFG = [(16, 8, 1, 16, 4, 1), (16, 8, 1, 16, 2, 1), (16, 4, 1, 16, 4, 1), (16, 4, 2, 16, 2, 1), (16, 8, 2, 16, 2, 1),
       (32, 4, 1, 16, 2, 1), (32, 4, 2, 16, 2, 1), (16, 4, 4, 16, 2, 1), (16, 8, 1, 8, 4, 1), (16, 4, 2, 8, 4, 1),
       (32, 4, 1, 8, 4, 1), (16, 4, 1, 64, 2, 1), (16, 8, 1, 64, 1, 1), (16, 2, 4, 16, 2, 1)]
out = []
for wr, r, k, s, u, pf in CFG:
    for ck in (1, 2, 4, 8, 16):
        g = sp.validate(Genome.make("skinny_mma", dict(warp_rows=wr, warps_r=r, warps_k=k, s_tile=s, unroll=u,
                                                       prefetch=pf, cluster_k=ck, y_smem=1)))
        out.append(g.to_dict())
for p in ({"cluster_k": 1, "prefetch": 1, "s_tile": 16, "unroll": 2, "warp_rows": 16, "warps_k": 4, "warps_r": 1},
          {"cluster_k": 2, "prefetch": 1, "s_tile": 16, "unroll": 2, "warp_rows": 16, "warps_k": 4, "warps_r": 1}):
    out.append(sp.validate(Genome.make("skinny_mma", p)).to_dict())
json.dump(out, open(sys.argv[1], 'w'), indent=0)
print(len(out), len({json.dumps(sorted((k, v) for k, v in g['params'].items() if k != 'cluster_k')) for g in out}))
