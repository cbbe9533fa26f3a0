// Which access pattern streams a row-major R x P-byte matrix at the read ceiling? Each warp owns `rt`
// consecutive rows and a 1/ksplit share of the row bytes; per step it loads rt x kw bytes (lane-contiguous
// 16-byte pieces: a warp instruction covers 512 contiguous bytes of one row when kw >= 512), D steps in flight.
#include <cstdint>
#include <cuda_runtime.h>
template <int L, int D>
__global__ void pat(const char* __restrict__ X, int R, int pitch, int rt, int kw_log2, int ksplit, int kspan,
                    unsigned* out) {
  const int lane = threadIdx.x & 31;
  const int gw = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int tile = gw / ksplit, part = gw % ksplit;
  const int row0 = tile * rt;
  if (row0 >= R) return;
  const int kw = 1 << kw_log2;
  const int kb = part * kspan, ke = min(pitch, kb + kspan);
  unsigned x = 0;
  for (int k = kb; k < ke; k += D * kw) {
    uint4 v[D][L];
#pragma unroll
    for (int d = 0; d < D; ++d)
#pragma unroll
      for (int j = 0; j < L; ++j) {
        const int f = j * 512 + lane * 16;
        const int row = f >> kw_log2, col = f & (kw - 1);
        const int kk = k + d * kw + col;
        if (kk < ke && row0 + row < R)
          asm volatile("ld.global.nc.L1::no_allocate" HINT ".v4.u32 {%0,%1,%2,%3}, [%4];"
                       : "=r"(v[d][j].x), "=r"(v[d][j].y), "=r"(v[d][j].z), "=r"(v[d][j].w)
                       : "l"(X + (size_t)(row0 + row) * pitch + kk));
        else
          v[d][j] = make_uint4(0, 0, 0, 0);
      }
#pragma unroll
    for (int d = 0; d < D; ++d)
#pragma unroll
      for (int j = 0; j < L; ++j) x ^= v[d][j].x ^ v[d][j].y ^ v[d][j].z ^ v[d][j].w;
  }
  if (x == 0x12345679u) out[0] = x;
}
template <int L, int D>
static int go(const void* X, int R, int pitch, int rt, int kw_log2, int ksplit, int threads, void* out, void* s) {
  const int warps = ((R + rt - 1) / rt) * ksplit;
  const int kspan = ((pitch + ksplit - 1) / ksplit + 15) / 16 * 16;
  const int blocks = (warps * 32 + threads - 1) / threads;
  pat<L, D><<<blocks, threads, 0, (cudaStream_t)s>>>((const char*)X, R, pitch, rt, kw_log2, ksplit, kspan, (unsigned*)out);
  return cudaPeekAtLastError() == cudaSuccess ? 0 : 4;
}
extern "C" int pattern(const void* X, int R, int pitch, int rt, int kw_log2, int ksplit, int D, int threads,
                       void* out, void* s) {
  const int L = rt << kw_log2 >> 9;
#define C(LL, DD) if (L == LL && D == DD) return go<LL, DD>(X, R, pitch, rt, kw_log2, ksplit, threads, out, s);
  C(1, 1) C(1, 2) C(1, 4) C(2, 1) C(2, 2) C(2, 4) C(4, 1) C(4, 2) C(4, 4) C(8, 1) C(8, 2) C(16, 1) C(16, 2) C(32, 1)
  return 1;
}
