// A weight-streaming GEMM prototype on wgmma (session 46, not a family yet): out[m][n] = sum_k Y[m][k] X[n][k],
// fp16 in, fp32 accumulation, fp16 out, for a small Y (M <= 256 rows: the activations of a decode or prefill
// batch) and a large X (the weights, streamed from HBM once). X streams through an S-stage shared-memory ring in
// TMA boxes of BN rows x D 128-byte pieces a row (one cp.async.bulk.tensor.3d a stage, 128-byte swizzle: the
// geometry session 45's probe found reads at 0.9-1.0 of the HBM read ceiling for D >= 2); Y's same k range comes
// in an MT-row box beside it (rows past M zero-filled). One thread of warpgroup 0 issues the loads; BN / 64
// consumer warpgroups each run wgmma m64nMTk16 with its 64 rows of X as the A operand and Y as B (both K-major,
// straight from the swizzled stage). Work units are (small-side tile, row block, K split); a CTA takes units
// blockIdx.x, + grid,
// ... With ksplit > 1 the units write fp32 partials P[split][m][n] and a second kernel adds them up.
// `trans`: store out transposed (C[n][m]) - the A-streamed case C = A W^T with A the large operand.
// K % (64 D) == 0. `mode` (timing diagnostics only, results then wrong): bit 0 skips the wgmma, bit 1 the Y loads;
// bit 2 (results right) starts each unit's k loop at a different chunk, (unit x 37) mod its chunks, so that the CTAs
// do not all read the same lines of Y at the same moment.
#include <cstdint>
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

namespace {

__device__ __forceinline__ uint32_t su32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile("{\n.reg .pred p;\nW%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra W%=;\n}\n" ::"r"(bar),
               "r"(parity)
               : "memory");
}

// K-major operand, 128-byte swizzle: rows of 128 bytes, 8-row atoms 1024 bytes apart
__device__ __forceinline__ uint64_t sdesc(uint32_t saddr) {
  return static_cast<uint64_t>((saddr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}

#include "wgmma_ops.inc"

template <int BN, int MT, int D, int S>
__global__ void __launch_bounds__(128 * (BN / 64 + 1)) stream_wgmma(const __grid_constant__ CUtensorMap tx,
                                                                    const __grid_constant__ CUtensorMap ty,
                                                                    __half* C, float* P, int M, int N, int K,
                                                                    int ksplit, int trans, int mode) {
  constexpr int NWG = BN / 64;
  constexpr uint32_t XB = 128u * BN * D, YB = 128u * MT * D, SB = XB + YB;
  extern __shared__ __align__(1024) unsigned char raw[];
  unsigned char* ring = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  __shared__ __align__(8) uint64_t full[S], empty[S];
  const int wg = threadIdx.x >> 7, t = threadIdx.x & 127;
  // small-side tiles: MT rows of Y each (session 47; one tile when M <= MT, as before), the fastest-varying
  // index of a unit, so the CTAs sharing a weight block run side by side and its second read can come from L2
  const int qt = (M + MT - 1) / MT, blocks = (N + BN - 1) / BN, units = blocks * ksplit * qt, kchunks = K / (64 * D);
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(su32(&full[s])));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(su32(&empty[s])), "r"(NWG));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (wg == 0) {   // producer
    if (t == 0) {
      asm volatile("prefetch.tensormap [%0];" ::"l"(&tx) : "memory");
      asm volatile("prefetch.tensormap [%0];" ::"l"(&ty) : "memory");
      long i = 0;
      for (int u = blockIdx.x; u < units; u += gridDim.x) {
        const int q = u % qt, b = (u / qt) % blocks, sp = u / (qt * blocks);
        const int j0 = static_cast<int>(long(kchunks) * sp / ksplit), j1 = static_cast<int>(long(kchunks) * (sp + 1) / ksplit);
        const int n = j1 - j0, rot = (mode & 4) ? static_cast<int>((u * 37L) % n) : 0;
        for (int jj = 0; jj < n; ++jj, ++i) {
          const int j = j0 + (jj + rot) % n;
          const int s = static_cast<int>(i % S);
          if (i >= S) mbar_wait(su32(&empty[s]), static_cast<uint32_t>(((i - S) / S) & 1));
          const uint32_t bar = su32(&full[s]);
          const uint32_t st = su32(ring + static_cast<size_t>(s) * SB);
          asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"((mode & 2) ? XB : SB) : "memory");
          asm volatile(
              "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(st),
              "l"(&tx), "r"(0), "r"(b * BN), "r"(j * D), "r"(bar)
              : "memory");
          if (!(mode & 2)) asm volatile(
              "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(st + XB),
              "l"(&ty), "r"(0), "r"(q * MT), "r"(j * D), "r"(bar)
              : "memory");
        }
      }
    }
    return;
  }
  const int g = wg - 1, warp = t >> 5, lane = t & 31;
  float acc[MT / 2];
  long i = 0;
  for (int u = blockIdx.x; u < units; u += gridDim.x) {
    const int q = u % qt, b = (u / qt) % blocks, sp = u / (qt * blocks);
    const int j0 = static_cast<int>(long(kchunks) * sp / ksplit), j1 = static_cast<int>(long(kchunks) * (sp + 1) / ksplit);
#pragma unroll
    for (int r = 0; r < MT / 2; ++r) acc[r] = 0.f;
    int prev = -1;
    for (int j = j0; j < j1; ++j, ++i) {   // the order of the k chunks is the producer's; only the count matters here
      const int s = static_cast<int>(i % S);
      mbar_wait(su32(&full[s]), static_cast<uint32_t>((i / S) & 1));
      const uint32_t xs = su32(ring + static_cast<size_t>(s) * SB) + g * 64 * 128, ys = su32(ring + static_cast<size_t>(s) * SB) + XB;
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
      if (!(mode & 1)) {
#pragma unroll
      for (int d = 0; d < D; ++d)
#pragma unroll
        for (int k = 0; k < 4; ++k)
          wgmma<MT>(acc, sdesc(xs + d * BN * 128 + k * 32), sdesc(ys + d * MT * 128 + k * 32), 1);
      }
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
      if (prev >= 0 && t == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(su32(&empty[prev])) : "memory");
      prev = s;
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    if (prev >= 0 && t == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(su32(&empty[prev])) : "memory");
    // accumulator (row n of X, column m of Y): rows 16 warp + lane / 4 (+ 8), columns 8 j + 2 (lane % 4) (+ 1)
    const int n0 = b * BN + g * 64 + warp * 16 + (lane >> 2);
#pragma unroll
    for (int jj = 0; jj < MT / 8; ++jj)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int n = n0 + 8 * h, m = q * MT + jj * 8 + (lane & 3) * 2 + c;
          const float v = acc[jj * 4 + h * 2 + c];
          if (m < M && n < N) {
            if (ksplit > 1)
              P[(static_cast<size_t>(sp) * M + m) * N + n] = v;
            else if (trans)
              C[static_cast<size_t>(n) * M + m] = __float2half_rn(v);
            else
              C[static_cast<size_t>(m) * N + n] = __float2half_rn(v);
          }
        }
  }
}

// out[m][n] = sum over splits of P[s][m][n] (trans: C[n][m])
__global__ void reduce_splits(const float* __restrict__ P, __half* C, int M, int N, int ksplit, int trans) {
  const size_t total = size_t(M) * N;
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < total; e += size_t(gridDim.x) * blockDim.x) {
    float v = 0.f;
    for (int s = 0; s < ksplit; ++s) v += P[s * total + e];
    const size_t m = e / N, n = e % N;
    C[trans ? n * M + m : e] = __float2half_rn(v);
  }
}

PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 f = nullptr;
  if (!f) {
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&f), 12000,
                                         cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      f = nullptr;
  }
  return f;
}

int make_map(CUtensorMap* tm, const void* p, int rows, int K, int box_rows, int D) {
  auto enc = encoder();
  if (!enc) return 5;
  cuuint64_t dims[3] = {64, static_cast<cuuint64_t>(rows), static_cast<cuuint64_t>(K / 64)};
  cuuint64_t strides[2] = {static_cast<cuuint64_t>(K) * 2, 128};
  cuuint32_t box[3] = {64, static_cast<cuuint32_t>(box_rows), static_cast<cuuint32_t>(D)};
  cuuint32_t estr[3] = {1, 1, 1};
  CUresult r = enc(tm, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, const_cast<void*>(p), dims, strides, box, estr,
                   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? 0 : 100 + static_cast<int>(r);
}

template <int BN, int MT, int D, int S>
int launch(const void* Y, const void* X, void* C, void* P, int M, int N, int K, int ksplit, int grid, int trans,
           int mode, cudaStream_t st) {
  CUtensorMap tx, ty;
  int rc = make_map(&tx, X, N, K, BN, D);
  if (rc) return rc;
  if ((rc = make_map(&ty, Y, M, K, MT, D))) return rc;
  constexpr size_t SB = 128u * BN * D + 128u * MT * D;
  const size_t smem = S * SB + 1024;
  if (smem > 227 * 1024) return 2;
  auto k = stream_wgmma<BN, MT, D, S>;
  if (cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)) != cudaSuccess)
    return 3;
  const int blocks = (N + BN - 1) / BN, units = blocks * ksplit * ((M + MT - 1) / MT);
  k<<<grid < units ? grid : units, 128 * (BN / 64 + 1), smem, st>>>(tx, ty, static_cast<__half*>(C),
                                                                   static_cast<float*>(P), M, N, K, ksplit, trans, mode);
  if (ksplit > 1) reduce_splits<<<264, 256, 0, st>>>(static_cast<const float*>(P), static_cast<__half*>(C), M, N, ksplit, trans);
  return cudaPeekAtLastError() == cudaSuccess ? 0 : 4;
}

}  // namespace

// BN X rows a block (64 or 128), MT Y rows a tile (below M: a grid over ceil(M / MT) small-side tiles), D 128-byte
// pieces a row a stage, S stages
extern "C" int stream_wgmma_run(const void* Y, const void* X, void* C, void* P, int M, int N, int K, int BN, int MT,
                                int D, int S, int ksplit, int grid, int trans, int mode, void* stream) {
  if (M < 1 || K % (64 * D) != 0 || ksplit < 1 || ksplit > K / (64 * D)) return 1;
  auto st = static_cast<cudaStream_t>(stream);
#define CFG(bn, mt, d, s) \
  if (BN == bn && MT == mt && D == d && S == s) return launch<bn, mt, d, s>(Y, X, C, P, M, N, K, ksplit, grid, trans, mode, st);
  // MT 128: 128 x (BN + 128) x D bytes a stage
  CFG(128, 128, 1, 6) CFG(128, 128, 2, 3) CFG(64, 128, 1, 8) CFG(64, 128, 2, 4) CFG(64, 128, 4, 2)
  // MT 64
  CFG(128, 64, 1, 8) CFG(128, 64, 2, 4) CFG(128, 64, 4, 2) CFG(64, 64, 2, 6) CFG(64, 64, 4, 3)
  // MT 256
  CFG(128, 256, 1, 4) CFG(64, 256, 1, 6) CFG(64, 256, 2, 3)
#undef CFG
  return 6;
}
