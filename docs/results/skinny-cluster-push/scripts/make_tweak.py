"""A/B of the committed cluster reduction against a tweak: cluster_reduce reads the partial tiles through the kernel's
own extern shared array (ld.shared) instead of a generic pointer passed to it."""
import json, sys
from pathlib import Path
from genome import Genome, Patch
from templates.render import block_source, render
OLD_SIG = """__device__ __noinline__ void cluster_reduce(const float* red, __half* __restrict__ C, int R, int S, int ldc,
                                            int x_is_a, int csplit, int rank, int row_block, int s0) {
  const int share = kTileElems / csplit;"""
NEW_SIG = """__device__ __noinline__ void cluster_reduce(__half* __restrict__ C, int R, int S, int ldc,
                                            int x_is_a, int csplit, int rank, int row_block, int s0) {
  extern __shared__ float red[];
  const int share = kTileElems / csplit;"""
CALL_OLD = "cluster_reduce(red, C, R, S, ldc, x_is_a, csplit, rank, row_block, s0);"
CALL_NEW = "cluster_reduce(C, R, S, ldc, x_is_a, csplit, rank, row_block, s0);"
out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
for f in sys.argv[2:]:
    g = Genome.load(f)
    if int(dict(g.params).get("cluster_k", 1)) < 2: continue
    k = block_source(g, "kernel")
    assert k.count(OLD_SIG) == 1 and k.count(CALL_OLD) == 1
    d = g.to_dict(); d.pop("id", None)
    d["patches"] = [Patch("kernel", k.replace(OLD_SIG, NEW_SIG).replace(CALL_OLD, CALL_NEW), note="cluster_reduce through ld.shared").to_dict()]
    t = Genome.from_dict(d); render(t)
    (out / f"skinny_mma-{t.id[:8]}-tweak-{g.id[:8]}.json").write_text(json.dumps(t.to_dict(), indent=1)); print(g.id[:8], "->", t.id[:8])
