// How fast does TMA stream a row-major R_total x K fp16 matrix out of HBM, as a function of the box a
// single cp.async.bulk.tensor instruction moves? A 3-D view of the matrix, {64 k, rows, K / 64 k-blocks},
// lets one instruction fetch D consecutive 128-byte pieces of each of R rows (128-byte swizzle, as the
// sm90 mainloops use), so the DRAM sees runs of 128 x D bytes a row. One thread a CTA issues the loads
// into an S-stage ring of mbarriers (no math: the consumer is instant); CTAs take row blocks in turn.
// Also a grid-stride ld.global.nc kernel: the read ceiling in the same harness. Session 45, not a family.
#include <cstdint>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__global__ void __launch_bounds__(32) tma_stream(const __grid_constant__ CUtensorMap tm, int row_blocks, int R,
                                                 int D, int kchunks, int S, uint32_t stage_bytes) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full[8];
  unsigned char* smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~static_cast<uintptr_t>(1023));
  if (threadIdx.x != 0) return;
  asm volatile("prefetch.tensormap [%0];" ::"l"(&tm) : "memory");
  for (int s = 0; s < S; ++s)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&full[s])));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  long i = 0;  // loads issued so far by this CTA
  for (int rb = blockIdx.x; rb < row_blocks; rb += gridDim.x) {
    for (int j = 0; j < kchunks; ++j, ++i) {
      const int s = static_cast<int>(i % S);
      if (i >= S) {  // wait for the load that used this stage S loads ago
        const uint32_t parity = static_cast<uint32_t>(((i - S) / S) & 1);
        asm volatile(
            "{\n.reg .pred p;\nW%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra W%=;\n}\n" ::"r"(
                smem_u32(&full[s])),
            "r"(parity)
            : "memory");
      }
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(&full[s])),
                   "r"(stage_bytes)
                   : "memory");
      asm volatile(
          "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
          "[%5];" ::"r"(smem_u32(smem + static_cast<size_t>(s) * stage_bytes)),
          "l"(&tm), "r"(0), "r"(rb * R), "r"(j * D), "r"(smem_u32(&full[s]))
          : "memory");
    }
  }
  for (long t = (i > S ? i - S : 0); t < i; ++t) {  // drain
    const int s = static_cast<int>(t % S);
    const uint32_t parity = static_cast<uint32_t>((t / S) & 1);
    asm volatile("{\n.reg .pred p;\nV%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra V%=;\n}\n" ::"r"(
                     smem_u32(&full[s])),
                 "r"(parity)
                 : "memory");
  }
}

__global__ void read_ceiling(const uint4* __restrict__ x, long n16, unsigned* out) {
  unsigned acc = 0;
  const long stride = static_cast<long>(gridDim.x) * blockDim.x;
  long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int d = 0; d < 4; ++d)
      asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                   : "=r"(v[d].x), "=r"(v[d].y), "=r"(v[d].z), "=r"(v[d].w)
                   : "l"(x + i + d * stride));
#pragma unroll
    for (int d = 0; d < 4; ++d) acc ^= v[d].x ^ v[d].y ^ v[d].z ^ v[d].w;
  }
  for (; i < n16; i += stride) {
    uint4 v = x[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) out[0] = acc;
}

extern "C" int tma_stream_run(void* W, int rows, int K, int R, int D, int S, int grid, void* stream) {
  if (K % (64 * D) != 0 || R < 1 || R > 256 || D < 1 || D > 256 || S < 1 || S > 8) return 1;
  CUtensorMap tm;
  cuuint64_t dims[3] = {64, static_cast<cuuint64_t>(rows), static_cast<cuuint64_t>(K / 64)};
  cuuint64_t strides[2] = {static_cast<cuuint64_t>(K) * 2, 128};
  cuuint32_t box[3] = {64, static_cast<cuuint32_t>(R), static_cast<cuuint32_t>(D)};
  cuuint32_t estr[3] = {1, 1, 1};
  static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;  // the driver's, without linking libcuda
  if (!encode) {
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&encode), 12000,
                                         cudaEnableDefault, &q) != cudaSuccess || q != cudaDriverEntryPointSuccess)
      return 5;
  }
  CUresult r = encode(&tm, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, W, dims, strides, box, estr,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return 100 + static_cast<int>(r);
  const uint32_t stage_bytes = 128u * R * D;
  const size_t smem = static_cast<size_t>(stage_bytes) * S + 1024;
  if (smem > 227 * 1024) return 2;
  static size_t set_for = 0;
  if (smem > set_for) {
    if (cudaFuncSetAttribute(tma_stream, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)) !=
        cudaSuccess)
      return 3;
    set_for = smem;
  }
  const int row_blocks = (rows + R - 1) / R;
  tma_stream<<<grid, 32, smem, static_cast<cudaStream_t>(stream)>>>(tm, row_blocks, R, D, K / (64 * D), S,
                                                                   stage_bytes);
  return cudaPeekAtLastError() == cudaSuccess ? 0 : 4;
}

extern "C" int read_ceiling_run(void* W, long bytes, int grid, int threads, void* out, void* stream) {
  read_ceiling<<<grid, threads, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const uint4*>(W), bytes / 16,
                                                                        static_cast<unsigned*>(out));
  return cudaPeekAtLastError() == cudaSuccess ? 0 : 4;
}
