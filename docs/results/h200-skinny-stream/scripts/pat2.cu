// Balanced patterns: exactly `wpb` warps per block, `grid` blocks (a multiple of the SMs, all resident).
// Units = (tile of rt rows, chunk of kw bytes), tile-major. mode 0: warp w takes a contiguous equal share of
// the units (balanced, not a sweep); mode 1: warp w takes units w, w + W, w + 2W, ... (balanced sweep);
// mode 2: like mode 1 but the unit order is chunk-major inside groups of 16 tiles.
#include <cstdint>
#include <cuda_runtime.h>
template <int L, int D>
__global__ void pat2(const char* __restrict__ X, int R, int pitch, int rt, int kw_log2, int mode, unsigned* out) {
  const int lane = threadIdx.x & 31;
  const int W = gridDim.x * (blockDim.x >> 5);
  const int w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int kw = 1 << kw_log2;
  const int chunks = (pitch + kw - 1) >> kw_log2, tiles = (R + rt - 1) / rt;
  const long U = (long)chunks * tiles;
  long u0, u1, step;
  if (mode == 0) { u0 = U * w / W; u1 = U * (w + 1) / W; step = 1; }
  else { u0 = w; u1 = U; step = W; }
  unsigned x = 0;
  for (long u = u0; u < u1; u += step * D) {
    uint4 v[D][L];
#pragma unroll
    for (int d = 0; d < D; ++d) {
      const long uu = u + d * step;
      int tile, chunk;
      if (mode == 2) {  // groups of 16 tiles, chunk-major inside a group
        const long g = uu / (16L * chunks), r = uu % (16L * chunks);
        tile = (int)(g * 16 + r % 16); chunk = (int)(r / 16);
      } else { tile = (int)(uu / chunks); chunk = (int)(uu % chunks); }
#pragma unroll
      for (int j = 0; j < L; ++j) {
        const int f = j * 512 + lane * 16;
        const int row = tile * rt + (f >> kw_log2), col = chunk * kw + (f & (kw - 1));
        if (uu < u1 && row < R && col < pitch && tile < tiles)
          asm volatile("ld.global.nc.L1::no_allocate" HINT ".v4.u32 {%0,%1,%2,%3}, [%4];"
                       : "=r"(v[d][j].x), "=r"(v[d][j].y), "=r"(v[d][j].z), "=r"(v[d][j].w)
                       : "l"(X + (size_t)row * pitch + col));
        else
          v[d][j] = make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int d = 0; d < D; ++d)
#pragma unroll
      for (int j = 0; j < L; ++j) x ^= v[d][j].x ^ v[d][j].y ^ v[d][j].z ^ v[d][j].w;
  }
  if (x == 0x12345679u) out[0] = x;
}
extern "C" int pattern2(const void* X, int R, int pitch, int rt, int kw_log2, int mode, int D, int grid, int threads,
                        void* out, void* s) {
  const int L = rt << kw_log2 >> 9;
#define C(LL, DD) if (L == LL && D == DD) { pat2<LL, DD><<<grid, threads, 0, (cudaStream_t)s>>>((const char*)X, R, pitch, rt, kw_log2, mode, (unsigned*)out); return cudaPeekAtLastError() == cudaSuccess ? 0 : 4; }
  C(1, 1) C(1, 2) C(1, 4) C(2, 1) C(2, 2) C(2, 4) C(4, 1) C(4, 2) C(4, 4) C(8, 1) C(8, 2) C(16, 1) C(16, 2)
  return 1;
}
