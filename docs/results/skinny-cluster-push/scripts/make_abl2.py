"""Second ablation set at 64x64x4096 (9a567b67): sync1 (the first cluster barrier only, no peer reads, each CTA
stores its own partial: not a GEMM), sync2 (both barriers, no peer reads: not a GEMM), push (a correct
reduction: each CTA writes its partial's shares into their owners' shared memory, one cluster barrier, each owner
adds its slots; the peers known started through a barrier arrived at kernel start and waited on before the first
remote write)."""
import json, sys
from pathlib import Path
from genome import Genome, Patch
from templates.render import block_source, render

def patched(g, **blocks):
    d = g.to_dict(); d.pop("id", None)
    d["patches"] = [Patch(b, c, note="ablation").to_dict() for b, c in blocks.items()]
    return Genome.from_dict(d)

def sub(text, old, new):
    assert old in text, old[:80]
    return text.replace(old, new)

S1 = "  if (csplit > 1) cluster.sync();                 // every CTA's slice 0 is complete\n"
S2 = "  if (csplit > 1) cluster.sync();                 // keep shared memory alive until peers are done\n"
PEER = """    for (int q = 1; q < csplit; ++q) {
      const float* peer = cluster.map_shared_rank(red, (rank + q) % csplit);
      v += peer[idx];
    }
"""
START = "  const int s0 = blockIdx.y * kSTile;\n"
PUSH = """  // push: each element's owner (its share's rank) gets this CTA's partial in slot (rank - owner) mod csplit
  __shared__ float recv[kTileElems];
  const int share = (kTileElems + csplit - 1) / csplit;
  if (csplit > 1) {
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");   // every peer has started (arrived at its start)
    for (int e = threadIdx.x; e < kTileElems; e += kThreads) {
      int lr, lc;
      if (x_is_a) { lr = e / kSTile; lc = e % kSTile; } else { lc = e / kRowsCta; lr = e % kRowsCta; }
      const int o = e / share, j = e - o * share;
      if (o == rank) continue;
      float* dst = cluster.map_shared_rank(recv, o);
      dst[((rank - o) & (csplit - 1)) * share + j] = red[lr * kSTile + lc];
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
  }
  const int e_begin = rank * share, e_end = min(kTileElems, e_begin + share);
  for (int e = e_begin + threadIdx.x; e < e_end; e += kThreads) {
    // walk elements in the order that is contiguous in C
    int lr, lc;
    if (x_is_a) { lr = e / kSTile; lc = e % kSTile; } else { lc = e / kRowsCta; lr = e % kRowsCta; }
    const int idx = lr * kSTile + lc;
    float v = red[idx];
    for (int q = 1; q < csplit; ++q) v += recv[q * share + (e - e_begin)];
    const int r = row_block * kRowsCta + lr, s = s0 + lc;
    if (r < R && s < S) {
      const size_t at = x_is_a ? (size_t)r * ldc + s : (size_t)s * ldc + r;
      C[at] = __float2half_rn(v);
    }
  }
"""
if __name__ == "__main__":
    out = Path(sys.argv[1])
    g = Genome.from_dict(json.load(open(sys.argv[2]))[0])
    kern = block_source(g, "kernel")
    v = {"sync1": sub(sub(kern, PEER, ""), S2, ""), "sync2": sub(kern, PEER, "")}
    a = kern.index("  cg::cluster_group cluster = cg::this_cluster();\n"); b = kern.index(S2) + len(S2)
    push = kern[:a] + "  cg::cluster_group cluster = cg::this_cluster();\n" + PUSH + kern[b:]
    push = sub(push, START, START + '  if (csplit > 1) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");\n')
    v["push"] = push
    for name, code in v.items():
        gg = patched(g, kernel=code); render(gg)
        (out / f"{g.id[:8]}-{name}.json").write_text(json.dumps(gg.to_dict(), indent=1)); print(name, gg.id[:8])
