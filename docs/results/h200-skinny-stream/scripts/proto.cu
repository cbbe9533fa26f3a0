// Prototype (session 35): a skinny GEMM whose streamed operand arrives by cp.async.bulk row copies into a
// shared-memory ring (one producer warp, mbarriers), consumed by mma.sync m16n8k16 with the permuted-k trick.
// Plus two read-ceiling kernels: a grid-stride 16-byte stream, and the same bulk ring with no compute.
// C[M,N] = A[M,K] W[N,K]^T, row-major, fp16, fp32 accumulation. X = the operand with more rows.
#include <cstdint>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__device__ __forceinline__ uint32_t su32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t* b, int n) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(su32(b)), "r"(n));
}
__device__ __forceinline__ void mbar_expect_arrive(uint64_t* b, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(su32(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(su32(b)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* b, uint32_t parity) {
  asm volatile(
      "{\n .reg .pred p;\n W_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra W_%=;\n}" ::"r"(
          su32(b)),
      "r"(parity)
      : "memory");
}
template <bool EVICT_FIRST>
__device__ __forceinline__ void bulk_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar, uint64_t pol) {
  if (EVICT_FIRST)
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
            su32(dst)),
        "l"(src), "r"(bytes), "r"(su32(bar)), "l"(pol)
        : "memory");
  else
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     su32(dst)),
                 "l"(src), "r"(bytes), "r"(su32(bar))
                 : "memory");
}
__device__ __forceinline__ uint4 lds128(const void* p) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(su32(p)));
  return v;
}
__device__ __forceinline__ void mma_16816(float* d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                          uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// RB: X rows per CTA (multiple of 16); KS: k per stage (multiple of 64); ST: stages; WK: consumer warps per
// 16-row tile splitting a stage's chunks; SMAX: Y rows (multiple of 8); COMPUTE false: consume nothing.
template <int RB, int KS, int ST, int WK, int SMAX, bool COMPUTE, bool EF>
struct Cfg {
  static constexpr int MT = RB / 16, NT = SMAX / 8;
  static constexpr int CW = MT * WK;                 // consumer warps
  static constexpr int THREADS = 32 * (1 + CW);
  static constexpr int PITCH = KS * 2 + 64;          // bytes; = 64 mod 128: two rows fill the 32 banks
  static constexpr int STAGE_BYTES = (RB + SMAX) * PITCH;
  static constexpr int RED_BYTES = 4 * RB * SMAX * WK;
  static constexpr int SMEM = 256 + ST * STAGE_BYTES + RED_BYTES;
};

template <int RB, int KS, int ST, int WK, int SMAX, bool COMPUTE, bool EF>
__global__ void __launch_bounds__(Cfg<RB, KS, ST, WK, SMAX, COMPUTE, EF>::THREADS)
    skinny_bulk(const __half* __restrict__ X, const __half* __restrict__ Y, __half* __restrict__ C, int R, int S,
                int K, int ldc, int x_is_a, int ksplit) {
  using G = Cfg<RB, KS, ST, WK, SMAX, COMPUTE, EF>;
  extern __shared__ __align__(128) unsigned char smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + ST;
  unsigned char* ring = smem + 256;
  float* red = reinterpret_cast<float*>(smem + 256 + ST * G::STAGE_BYTES);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int rank = blockIdx.x % ksplit, rb = blockIdx.x / ksplit;
  const int row0 = rb * RB;
  const int rows = min(RB, R - row0);
  const int nst = (K + KS - 1) / KS, per = (nst + ksplit - 1) / ksplit;
  const int st0 = rank * per, st1 = min(nst, st0 + per);
  if (threadIdx.x == 0) {
    for (int s = 0; s < ST; ++s) {
      mbar_init(full + s, 1);
      mbar_init(empty + s, G::CW);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  float acc[G::NT][4];
#pragma unroll
  for (int j = 0; j < G::NT; ++j)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[j][c] = 0.f;
  const int cw = warp - 1, mt = cw % G::MT, wk = cw / G::MT;
  const int gid = lane >> 2, t4 = lane & 3;

  if (warp == 0) {  // producer
    uint64_t pol = 0;
    if (EF) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    for (int st = st0, i = 0; st < st1; ++st, ++i) {
      const int slot = i % ST;
      if (i >= ST) mbar_wait(empty + slot, ((i / ST) - 1) & 1);
      const int k0 = st * KS, klen = min(KS, K - k0);
      const uint32_t rowbytes = (uint32_t)klen * 2;
      if (lane == 0) mbar_expect_arrive(full + slot, rowbytes * (rows + S));
      __syncwarp();
      unsigned char* base = ring + slot * G::STAGE_BYTES;
      for (int q = lane; q < rows + S; q += 32) {
        if (q < rows)
          bulk_g2s<EF>(base + q * G::PITCH, X + (size_t)(row0 + q) * K + k0, rowbytes, full + slot, pol);
        else
          bulk_g2s<false>(base + (RB + q - rows) * G::PITCH, Y + (size_t)(q - rows) * K + k0, rowbytes, full + slot,
                          pol);
      }
    }
  } else {  // consumers
    for (int st = st0, i = 0; st < st1; ++st, ++i) {
      const int slot = i % ST;
      mbar_wait(full + slot, (i / ST) & 1);
      if (COMPUTE) {
        const int klen = min(KS, K - st * KS);
        const int nch = (klen + 31) / 32;
        const unsigned char* xb = ring + slot * G::STAGE_BYTES + (mt * 16 + gid) * G::PITCH + t4 * 16;
        const unsigned char* yb = ring + slot * G::STAGE_BYTES + (RB + gid) * G::PITCH + t4 * 16;
#pragma unroll 4
        for (int c = wk; c < nch; c += WK) {
          const bool kin = c * 32 + t4 * 8 < klen;
          const uint4 z = make_uint4(0, 0, 0, 0);
          const uint4 x0 = kin ? lds128(xb + c * 64) : z;
          const uint4 x1 = kin ? lds128(xb + 8 * G::PITCH + c * 64) : z;
#pragma unroll
          for (int j = 0; j < G::NT; ++j) {
            const uint4 y = kin ? lds128(yb + j * 8 * G::PITCH + c * 64) : z;
            mma_16816(acc[j], x0.x, x1.x, x0.y, x1.y, y.x, y.y);
            mma_16816(acc[j], x0.z, x1.z, x0.w, x1.w, y.z, y.w);
          }
        }
      }
      __syncwarp();
      if (lane == 0) mbar_arrive(empty + slot);
    }
    // this warp's partial tile -> red[wk]
    float* mine = red + wk * RB * SMAX;
#pragma unroll
    for (int j = 0; j < G::NT; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int lr = mt * 16 + gid + (c >> 1) * 8, lc = j * 8 + t4 * 2 + (c & 1);
        mine[lr * SMAX + lc] = acc[j][c];
      }
  }
  __syncthreads();
  constexpr int TILE = RB * SMAX;
  if (WK > 1) {
    for (int e = threadIdx.x; e < TILE; e += G::THREADS) {
      float v = red[e];
#pragma unroll
      for (int w = 1; w < WK; ++w) v += red[w * TILE + e];
      red[e] = v;
    }
    __syncthreads();
  }
  cg::cluster_group cluster = cg::this_cluster();
  if (ksplit > 1) cluster.sync();
  const int share = (TILE + ksplit - 1) / ksplit;
  const int e0 = rank * share, e1 = min(TILE, e0 + share);
  for (int e = e0 + threadIdx.x; e < e1; e += G::THREADS) {
    int lr, lc;
    if (x_is_a) { lr = e / SMAX; lc = e % SMAX; } else { lc = e / RB; lr = e % RB; }
    const int idx = lr * SMAX + lc;
    float v = red[idx];
    for (int q = 1; q < ksplit; ++q) v += cluster.map_shared_rank(red, (rank + q) % ksplit)[idx];
    const int r = row0 + lr;
    if (r < R && lc < S) C[x_is_a ? (size_t)r * ldc + lc : (size_t)lc * ldc + r] = __float2half_rn(v);
  }
  if (ksplit > 1) cluster.sync();
}

template <int RB, int KS, int ST, int WK, int SMAX, bool COMPUTE, bool EF>
static int launch_bulk(int M, int N, int K, const void* A, const void* B, void* C, int ksplit, cudaStream_t stream) {
  using G = Cfg<RB, KS, ST, WK, SMAX, COMPUTE, EF>;
  auto kern = skinny_bulk<RB, KS, ST, WK, SMAX, COMPUTE, EF>;
  const bool x_is_a = M > N;
  const __half* X = static_cast<const __half*>(x_is_a ? A : B);
  const __half* Y = static_cast<const __half*>(x_is_a ? B : A);
  const int R = x_is_a ? M : N, S = x_is_a ? N : M;
  if (S > SMAX || K % 8) return 1;
  static bool set = false;
  if (!set) {
    if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, G::SMEM) != cudaSuccess) return 3;
    if (cudaFuncSetAttribute(kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) return 3;
    set = true;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((unsigned)(((R + RB - 1) / RB) * ksplit), 1, 1);
  cfg.blockDim = dim3(G::THREADS, 1, 1);
  cfg.dynamicSmemBytes = G::SMEM;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = (unsigned)ksplit;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  if (cudaLaunchKernelEx(&cfg, kern, X, Y, static_cast<__half*>(C), R, S, K, N, (int)x_is_a, ksplit) != cudaSuccess)
    return 4;
  return 0;
}

// ---- read ceiling: grid-stride 16-byte non-caching loads, 4 in flight per thread ----
__global__ void read_stream(const uint4* __restrict__ p, size_t n, unsigned* out) {
  unsigned x = 0;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                   : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w)
                   : "l"(p + i + u * stride));
#pragma unroll
    for (int u = 0; u < 4; ++u) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < n; i += stride) x ^= p[i].x ^ p[i].w;
  if (x == 0x12345679u) out[0] = x;
}

extern "C" {
int read_stream_launch(const void* p, size_t bytes, void* out, int blocks, int threads, void* stream) {
  read_stream<<<blocks, threads, 0, (cudaStream_t)stream>>>((const uint4*)p, bytes / 16, (unsigned*)out);
  return cudaPeekAtLastError() == cudaSuccess ? 0 : 4;
}

#define BULK(NAME, RB, KS, ST, WK, SMAX, COMPUTE, EF)                                                       \
  int NAME(int M, int N, int K, const void* A, const void* B, void* C, int ksplit, void* stream) {           \
    int s = launch_bulk<RB, KS, ST, WK, SMAX, COMPUTE, EF>(M, N, K, A, B, C, ksplit, (cudaStream_t)stream); \
    if (s) return s;                                                                                         \
    return cudaPeekAtLastError() == cudaSuccess ? 0 : 4;                                                     \
  }                                                                                                          \
  int NAME##_smem(void) { return Cfg<RB, KS, ST, WK, SMAX, COMPUTE, EF>::SMEM; }

// name: rb_ks_stages_wk_smax[_nc: no compute][_ef: evict-first X]
BULK(b32_512_4_2_16, 32, 512, 4, 2, 16, true, false)
BULK(b32_512_4_4_16, 32, 512, 4, 4, 16, true, false)
BULK(b32_256_6_2_16, 32, 256, 6, 2, 16, true, false)
BULK(b32_256_8_2_16, 32, 256, 8, 2, 16, true, false)
BULK(b16_512_4_4_16, 16, 512, 4, 4, 16, true, false)
BULK(b16_256_4_4_16, 16, 256, 4, 4, 16, true, false)
BULK(b64_256_4_1_16, 64, 256, 4, 1, 16, true, false)
BULK(b64_256_4_2_16, 64, 256, 4, 2, 16, true, false)
BULK(b64_128_8_2_16, 64, 128, 8, 2, 16, true, false)
BULK(b32_512_4_2_16_ef, 32, 512, 4, 2, 16, true, true)
BULK(b32_256_6_2_16_ef, 32, 256, 6, 2, 16, true, true)
BULK(b32_512_4_2_8, 32, 512, 4, 2, 8, true, false)
BULK(b64_256_4_2_8, 64, 256, 4, 2, 8, true, false)
BULK(b32_512_4_2_16_nc, 32, 512, 4, 2, 16, false, false)
BULK(b32_256_6_2_16_nc, 32, 256, 6, 2, 16, false, false)
BULK(b16_512_4_4_16_nc, 16, 512, 4, 4, 16, false, false)
}
