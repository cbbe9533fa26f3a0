// A skinny GEMM prototype fed by TMA (session 45, not a family yet): C[M,N] = Y[M,K] W[N,K]^T, M <= 16,
// fp16 in, fp32 accumulation, fp16 out. W streams through an S-stage shared-memory ring in boxes of R rows x
// D 128-byte pieces a row (one cp.async.bulk.tensor.3d per stage, 128-byte swizzle), the probe's geometry that
// read at the HBM ceiling; Y's same k range comes in a 16-row box beside it (rows past M zero-filled). Warp 0
// issues the loads; CW consumer warps run mma.sync m16n8k16 with W as the 16-row A operand and Y as B (n8 tiles),
// from ldmatrix on the swizzled stages. A CTA takes row blocks blockIdx.x, + grid, ...; the consumer warps of a
// row group split each stage's k and add up through shared memory at the end of the block. K % 64 == 0.
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

template <int R, int D, int S, int CW, int MT, bool TWO_D>
__global__ void __launch_bounds__(32 * (CW + 1)) skinny_tma(const __grid_constant__ CUtensorMap tw,
                                                            const __grid_constant__ CUtensorMap ty, __half* C, int M,
                                                            int N, int K) {
  constexpr int G = R / 16;           // 16-row groups of a block
  constexpr int KS = CW / G;          // consumer warps splitting a stage's k
  constexpr int STEPS = D * 4;        // k16 steps a stage
  static_assert(CW % G == 0 && STEPS % KS == 0, "consumer warps must tile the stage");
  constexpr uint32_t WB = 128u * R * D, YB = 128u * 16 * D, SB = WB + YB;
  extern __shared__ __align__(1024) unsigned char raw[];
  unsigned char* ring = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  float* red = reinterpret_cast<float*>(ring + S * SB);   // CW x 16 x 16 partial sums
  __shared__ __align__(8) uint64_t full[S], empty[S];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int row_blocks = (N + R - 1) / R, kchunks = (K + 64 * D - 1) / (64 * D);
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(su32(&full[s])));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(su32(&empty[s])), "r"(CW));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (warp == 0) {   // producer
    if (lane == 0) {
      asm volatile("prefetch.tensormap [%0];" ::"l"(&tw) : "memory");
      asm volatile("prefetch.tensormap [%0];" ::"l"(&ty) : "memory");
      long i = 0;
      for (int rb = blockIdx.x; rb < row_blocks; rb += gridDim.x)
        for (int j = 0; j < kchunks; ++j, ++i) {
          const int s = static_cast<int>(i % S);
          if (i >= S) mbar_wait(su32(&empty[s]), static_cast<uint32_t>(((i - S) / S) & 1));
          const uint32_t bar = su32(&full[s]);
          unsigned char* st = ring + static_cast<size_t>(s) * SB;
          asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(SB) : "memory");
          if (TWO_D) {   // D instructions of 64 k x rows each (any K % 8 == 0: the row ends zero-filled)
#pragma unroll
            for (int d = 0; d < D; ++d) {
              asm volatile(
                  "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
                      su32(st + d * R * 128)),
                  "l"(&tw), "r"((j * D + d) * 64), "r"(rb * R), "r"(bar)
                  : "memory");
              asm volatile(
                  "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
                      su32(st + WB + d * 16 * 128)),
                  "l"(&ty), "r"((j * D + d) * 64), "r"(0), "r"(bar)
                  : "memory");
            }
          } else {
            asm volatile(
                "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(
                    su32(st)),
                "l"(&tw), "r"(0), "r"(rb * R), "r"(j * D), "r"(bar)
                : "memory");
            asm volatile(
                "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(
                    su32(st + WB)),
                "l"(&ty), "r"(0), "r"(0), "r"(j * D), "r"(bar)
                : "memory");
          }
        }
    }
    return;
  }
  const int cw = warp - 1, grp = cw / KS, ks = cw % KS;
  long i = 0;
  for (int rb = blockIdx.x; rb < row_blocks; rb += gridDim.x) {
    float acc[MT][4];
#pragma unroll
    for (int t = 0; t < MT; ++t) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.f;
    for (int j = 0; j < kchunks; ++j, ++i) {
      const int s = static_cast<int>(i % S);
      mbar_wait(su32(&full[s]), static_cast<uint32_t>((i / S) & 1));
      const uint32_t wbase = su32(ring + static_cast<size_t>(s) * SB), ybase = wbase + WB;
#pragma unroll 4
      for (int q = ks; q < STEPS; q += KS) {   // k16 step q: piece d = q / 4, 16-byte chunks 2 (q % 4), + 1
        const int d = q >> 2, c0 = (q & 3) * 2;
        uint32_t a[4], b[4];
        {
          const int r = grp * 16 + (lane & 15), c = c0 + (lane >> 4);
          const uint32_t addr = wbase + (d * R + r) * 128 + ((c ^ (r & 7)) << 4);
          asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                       : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                       : "r"(addr));
        }
        {
          // x4: lanes 0-7 n-tile 0 k-half 0, 8-15 n-tile 0 k-half 1, 16-23 n-tile 1 k-half 0, 24-31 n-tile 1 k-half 1
          const int r = (lane & 7) + ((lane >> 4) << 3), c = c0 + ((lane >> 3) & 1);
          const uint32_t addr = ybase + (d * 16 + r) * 128 + ((c ^ (r & 7)) << 4);
          if (MT == 2)
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                         : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
                         : "r"(addr));
          else
            asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                         : "=r"(b[0]), "=r"(b[1])
                         : "r"(addr));
        }
#pragma unroll
        for (int t = 0; t < MT; ++t)
          asm volatile(
              "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
              : "+f"(acc[t][0]), "+f"(acc[t][1]), "+f"(acc[t][2]), "+f"(acc[t][3])
              : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2 * t]), "r"(b[2 * t + 1]));
      }
      __syncwarp();
      if (lane == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(su32(&empty[s])) : "memory");
    }
    // the row block's partial sums: warp cw's 16 rows x (8 MT) columns, added over the KS warps of its group
    float* mine = red + cw * 256;
#pragma unroll
    for (int t = 0; t < MT; ++t) {
      const int r = lane >> 2, col = t * 8 + (lane & 3) * 2;
      mine[r * 16 + col] = acc[t][0];
      mine[r * 16 + col + 1] = acc[t][1];
      mine[(r + 8) * 16 + col] = acc[t][2];
      mine[(r + 8) * 16 + col + 1] = acc[t][3];
    }
    asm volatile("bar.sync 1, %0;" ::"r"(CW * 32) : "memory");
    for (int e = threadIdx.x - 32; e < G * 16 * 16; e += CW * 32) {
      const int g = e / 256, rr = (e % 256) / 16, m = e % 16, n = rb * R + g * 16 + rr;
      float v = 0.f;
#pragma unroll
      for (int w = 0; w < KS; ++w) v += red[(g * KS + w) * 256 + rr * 16 + m];
      if (m < M && n < N) C[static_cast<size_t>(m) * N + n] = __float2half_rn(v);
    }
    asm volatile("bar.sync 1, %0;" ::"r"(CW * 32) : "memory");
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

int make_map(CUtensorMap* tm, const void* p, int rows, int K, int box_rows, int D, bool two_d) {
  auto enc = encoder();
  if (!enc) return 5;
  cuuint64_t dims3[3] = {64, static_cast<cuuint64_t>(rows), static_cast<cuuint64_t>(K / 64)};
  cuuint64_t dims2[2] = {static_cast<cuuint64_t>(K), static_cast<cuuint64_t>(rows)};
  cuuint64_t strides[2] = {static_cast<cuuint64_t>(K) * 2, 128};
  cuuint32_t box[3] = {64, static_cast<cuuint32_t>(box_rows), static_cast<cuuint32_t>(D)};
  cuuint32_t estr[3] = {1, 1, 1};
  CUresult r = enc(tm, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, two_d ? 2 : 3, const_cast<void*>(p), two_d ? dims2 : dims3,
                   strides, box, estr,
                   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? 0 : 100 + static_cast<int>(r);
}

template <int R, int D, int S, int CW, bool TWO_D>
int launch(const void* Y, const void* W, void* C, int M, int N, int K, int grid, cudaStream_t st) {
  CUtensorMap tw, ty;
  int rc = make_map(&tw, W, N, K, R, D, TWO_D);
  if (rc) return rc;
  if ((rc = make_map(&ty, Y, M, K, 16, D, TWO_D))) return rc;
  constexpr size_t SB = 128u * R * D + 128u * 16 * D;
  const size_t smem = S * SB + CW * 256 * 4 + 1024;
  if (smem > 220 * 1024) return 2;
  auto k = M > 8 ? skinny_tma<R, D, S, CW, 2, TWO_D> : skinny_tma<R, D, S, CW, 1, TWO_D>;
  if (cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)) != cudaSuccess)
    return 3;
  k<<<grid, 32 * (CW + 1), smem, st>>>(tw, ty, static_cast<__half*>(C), M, N, K);
  return cudaPeekAtLastError() == cudaSuccess ? 0 : 4;
}

}  // namespace

// configs: R rows a block, D 128-byte pieces a row a stage, S stages, CW consumer warps
extern "C" int skinny_tma_run(const void* Y, const void* W, void* C, int M, int N, int K, int R, int D, int S, int CW,
                              int grid, int two_d, void* stream) {
  if (M < 1 || M > 16 || K % 8 != 0 || (!two_d && K % (64 * D) != 0)) return 1;
  auto st = static_cast<cudaStream_t>(stream);
#define CFG(r, d, s, c) \
  if (R == r && D == d && S == s && CW == c) \
    return two_d ? launch<r, d, s, c, true>(Y, W, C, M, N, K, grid, st) : launch<r, d, s, c, false>(Y, W, C, M, N, K, grid, st);
  CFG(16, 8, 4, 2) CFG(16, 8, 4, 4) CFG(16, 16, 2, 4) CFG(16, 16, 3, 4) CFG(16, 4, 6, 2) CFG(16, 4, 6, 4)
  CFG(32, 4, 4, 4) CFG(32, 8, 2, 4) CFG(32, 8, 3, 4) CFG(32, 4, 6, 4) CFG(32, 4, 4, 8) CFG(32, 8, 3, 8)
  CFG(64, 2, 6, 4) CFG(64, 4, 3, 4) CFG(64, 4, 3, 8) CFG(64, 2, 6, 8)
#undef CFG
  return 6;
}
