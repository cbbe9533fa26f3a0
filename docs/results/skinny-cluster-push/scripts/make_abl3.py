"""mpush at 64x64x4096 (9a567b67): the cluster reduction without a cluster barrier at its end. Each CTA's mbarrier
(in its shared memory) expects the bytes its peers send; each peer writes its partial's share for that owner with
st.async (complete_tx on the owner's mbarrier); the owner waits on its own mbarrier, adds and stores. The peers are
known to have started (mbarrier initialised) through a cluster barrier arrived at kernel start and waited on before
the first remote write."""
import json, sys
from pathlib import Path
from genome import Genome, Patch
from templates.render import block_source, render

def sub(text, old, new):
    assert old in text, old[:80]
    return text.replace(old, new)

S2 = "  if (csplit > 1) cluster.sync();                 // keep shared memory alive until peers are done\n"
START = "  const int s0 = blockIdx.y * kSTile;\n"
INIT = r"""  // mpush: the bytes this CTA's peers will send it (their shares of the tile for it), counted by its mbarrier
  __shared__ __align__(16) float recv[kTileElems];   // (csplit - 1) slots of `share` floats
  __shared__ __align__(8) uint64_t recv_bar;
  const uint32_t recv_bar_s = static_cast<uint32_t>(__cvta_generic_to_shared(&recv_bar));
  if (csplit > 1) {
    if (threadIdx.x == 0) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(recv_bar_s) : "memory");
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                   ::"r"(recv_bar_s), "r"((uint32_t)((csplit - 1) * (kTileElems / csplit) * 4)) : "memory");
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
  }
"""
REDUCE = r"""  cg::cluster_group cluster = cg::this_cluster();
  const int share = kTileElems / csplit;           // csplit a power of two <= 16, kTileElems a multiple of 128
  auto walk = [&](int e) {                          // position e of the C-contiguous walk -> index into red
    int lr, lc;
    if (x_is_a) { lr = e / kSTile; lc = e % kSTile; } else { lc = e / kRowsCta; lr = e % kRowsCta; }
    return lr * kSTile + lc;
  };
  if (csplit > 1) {
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");   // every peer started: its mbarrier is ready
    const uint32_t recv_s = static_cast<uint32_t>(__cvta_generic_to_shared(recv));
    const int vecs = share / 4;
    for (int t = threadIdx.x; t < (csplit - 1) * vecs; t += kThreads) {
      const int o = (rank + 1 + t / vecs) & (csplit - 1), j = (t % vecs) * 4;
      const int slot = ((rank - o) & (csplit - 1)) - 1;
      const float v0 = red[walk(o * share + j)], v1 = red[walk(o * share + j + 1)],
                  v2 = red[walk(o * share + j + 2)], v3 = red[walk(o * share + j + 3)];
      uint32_t dst, bar;
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(dst) : "r"(recv_s + (uint32_t)((slot * share + j) * 4)), "r"(o));
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(bar) : "r"(recv_bar_s), "r"(o));
      asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];"
                   ::"r"(dst), "f"(v0), "f"(v1), "f"(v2), "f"(v3), "r"(bar) : "memory");
    }
    uint32_t done = 0;
    while (!done)
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                   : "=r"(done) : "r"(recv_bar_s) : "memory");
  }
  const int e_begin = rank * share, e_end = e_begin + share;
  for (int e = e_begin + threadIdx.x; e < e_end; e += kThreads) {
    const int idx = walk(e);
    int lr, lc;
    if (x_is_a) { lr = e / kSTile; lc = e % kSTile; } else { lc = e / kRowsCta; lr = e % kRowsCta; }
    float v = red[idx];
    for (int q = 0; q < csplit - 1; ++q) v += recv[q * share + (e - e_begin)];
    const int r = row_block * kRowsCta + lr, s = s0 + lc;
    if (r < R && s < S) {
      const size_t at = x_is_a ? (size_t)r * ldc + s : (size_t)s * ldc + r;
      C[at] = __float2half_rn(v);
    }
  }
"""
if __name__ == "__main__":
    out = Path(sys.argv[1])
    for f in sys.argv[2:]:
        g = Genome.from_dict(json.load(open(f))[0])
        kern = block_source(g, "kernel")
        a = kern.index("  cg::cluster_group cluster = cg::this_cluster();\n"); b = kern.index(S2) + len(S2)
        code = sub(kern[:a] + REDUCE + kern[b:], START, START + INIT)
        d = g.to_dict(); d.pop("id", None); d["patches"] = [Patch("kernel", code, note="mpush").to_dict()]
        gg = Genome.from_dict(d); render(gg)
        (out / f"{g.id[:8]}-mpush.json").write_text(json.dumps(gg.to_dict(), indent=1)); print("mpush", g.id[:8], gg.id[:8])
