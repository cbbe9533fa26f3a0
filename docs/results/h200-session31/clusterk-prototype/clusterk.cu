// Prototype: split-K GEMM whose K splits are the CTAs of one thread-block cluster; the partial tiles are
// summed through distributed shared memory (no workspace, one launch). TMA + WGMMA (sm_90a).
// C[M,N] = A[M,K] @ W[N,K]^T, fp16 in/out, fp32 accumulation. K % 8 == 0, N % 2 == 0.
#include <cstdint>
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cutlass/cutlass.h>
#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/cutlass.h>
#include <cutlass/device_kernel.h>

using namespace cute;
namespace cg = cooperative_groups;

template <int BM, int BN, int BK, int ST>
struct Cfg {
  using T = cutlass::half_t;
  using SmemA = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<T>{}, make_shape(Int<BM>{}, Int<BK>{}, Int<ST>{})));
  using SmemB = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<T>{}, make_shape(Int<BN>{}, Int<BK>{}, Int<ST>{})));
  static constexpr int kLd = BN + 4;   // fp32 row pitch of the reduction tile
  struct Storage {
    alignas(1024) cute::ArrayEngine<T, cosize_v<SmemA>> A;
    alignas(1024) cute::ArrayEngine<T, cosize_v<SmemB>> B;
    uint64_t full[ST];
    uint64_t empty[ST];
  };
  static_assert(sizeof(float) * BM * kLd <= sizeof(T) * (cosize_v<SmemA> + cosize_v<SmemB>), "reduction tile fits");
  using Atom = decltype(SM90::GMMA::ss_op_selector<T, T, float, Shape<_64, Int<BN>, Int<BK>>, GMMA::Major::K,
                                                    GMMA::Major::K>());
  using Mma = decltype(make_tiled_mma(Atom{}, Layout<Shape<Int<BM / 64>, _1, _1>>{}));
};

template <class C, int BM, int BN, int BK, int ST, bool WS, class TmaA, class TmaB>
__global__ void __launch_bounds__(BM / 64 * 128 + (WS ? 32 : 0), 1)
clusterk_kernel(int M, int N, int K, CUTLASS_GRID_CONSTANT TmaA const tma_a, CUTLASS_GRID_CONSTANT TmaB const tma_b,
                cutlass::half_t* __restrict__ Cout, int splits, int skip_reduce) {
  using T = cutlass::half_t;
  using Storage = typename C::Storage;
  extern __shared__ char smem_raw[];
  Storage& smem = *reinterpret_cast<Storage*>(smem_raw);
  typename C::Mma mma;
  constexpr int kConsumers = BM / 64 * 128;
  constexpr int kThreads = kConsumers + (WS ? 32 : 0);
  const bool consumer = threadIdx.x < kConsumers;

  const int rank = blockIdx.x % splits;          // cluster (splits, 1, 1): the K split
  const int m_blk = blockIdx.y, n_blk = blockIdx.z;

  Tensor mA = tma_a.get_tma_tensor(make_shape(M, K));
  Tensor mB = tma_b.get_tma_tensor(make_shape(N, K));
  Tensor gA = local_tile(mA, make_tile(Int<BM>{}, Int<BK>{}), make_coord(m_blk, _));   // (BM,BK,kt)
  Tensor gB = local_tile(mB, make_tile(Int<BN>{}, Int<BK>{}), make_coord(n_blk, _));   // (BN,BK,kt)
  Tensor sA = make_tensor(make_smem_ptr(smem.A.begin()), typename C::SmemA{});
  Tensor sB = make_tensor(make_smem_ptr(smem.B.begin()), typename C::SmemB{});
  auto [tAgA, tAsA] = tma_partition(tma_a, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sA), group_modes<0, 2>(gA));
  auto [tBgB, tBsB] = tma_partition(tma_b, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sB), group_modes<0, 2>(gB));
  constexpr int kTx = (BM + BN) * BK * int(sizeof(T));

  using FullBar = cutlass::arch::ClusterTransactionBarrier;
  using EmptyBar = cutlass::arch::ClusterBarrier;
  const bool leader = threadIdx.x == 0;
  if (leader) {
    for (int s = 0; s < ST; ++s) {
      FullBar::init(&smem.full[s], 1);
      EmptyBar::init(&smem.empty[s], kConsumers / 32);   // one arrival a consumer warp
    }
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();

  const int kt_total = (K + BK - 1) / BK;
  const int per = (kt_total + splits - 1) / splits;
  const int kt0 = rank * per;
  const int n = max(0, min(kt_total, kt0 + per) - kt0);

  if constexpr (!WS) {
    if (leader) {
      for (int p = 0; p < ST && p < n; ++p) {
        FullBar::arrive_and_expect_tx(&smem.full[p], kTx);
        copy(tma_a.with(smem.full[p]), tAgA(_, kt0 + p), tAsA(_, p));
        copy(tma_b.with(smem.full[p]), tBgB(_, kt0 + p), tBsB(_, p));
      }
    }
  }

  ThrMMA thr = mma.get_thread_slice(threadIdx.x);
  Tensor tCsA = thr.partition_A(sA);
  Tensor tCsB = thr.partition_B(sB);
  Tensor tCrA = thr.make_fragment_A(tCsA);
  Tensor tCrB = thr.make_fragment_B(tCsB);
  Tensor acc = partition_fragment_C(mma, make_shape(Int<BM>{}, Int<BN>{}));
  clear(acc);

  if (WS && !consumer) {
    // the producer warp: one lane issues every TMA load, as soon as the consumers free a stage
    if (threadIdx.x == kConsumers) {
      for (int k = 0; k < n; ++k) {
        const int s = k % ST;
        if (k >= ST) EmptyBar::wait(&smem.empty[s], ((k / ST) - 1) & 1);
        FullBar::arrive_and_expect_tx(&smem.full[s], kTx);
        copy(tma_a.with(smem.full[s]), tAgA(_, kt0 + k), tAsA(_, s));
        copy(tma_b.with(smem.full[s]), tBgB(_, kt0 + k), tBsB(_, s));
      }
    }
  } else {
    for (int k = 0; k < n; ++k) {
      const int s = k % ST;
      FullBar::wait(&smem.full[s], (k / ST) & 1);
      warpgroup_fence_operand(acc);
      warpgroup_arrive();
      gemm(mma, tCrA(_, _, _, s), tCrB(_, _, _, s), acc);
      warpgroup_commit_batch();
      warpgroup_wait<1>();                          // the previous k tile's MMAs are done with its stage
      warpgroup_fence_operand(acc);
      if (k > 0) {
        const int j = k - 1, sp = j % ST;
        if (cute::elect_one_sync()) EmptyBar::arrive(&smem.empty[sp]);
        if (!WS && leader && j + ST < n) {
          EmptyBar::wait(&smem.empty[sp], (j / ST) & 1);
          FullBar::arrive_and_expect_tx(&smem.full[sp], kTx);
          copy(tma_a.with(smem.full[sp]), tAgA(_, kt0 + j + ST), tAsA(_, sp));
          copy(tma_b.with(smem.full[sp]), tBgB(_, kt0 + j + ST), tBsB(_, sp));
        }
      }
    }
  }
  if (consumer) {
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc);
  }
  __syncthreads();                                // every MMA of the CTA has read its last stage

  // partial tile -> fp32 in shared memory (over the pipeline buffers)
  float* red = reinterpret_cast<float*>(smem.A.begin());
  Tensor cC = make_identity_tensor(make_shape(Int<BM>{}, Int<BN>{}));
  Tensor tCcC = thr.partition_C(cC);
  if (consumer) {
    CUTE_UNROLL
    for (int i = 0; i < size(acc); ++i) {
      auto c = tCcC(i);
      red[get<0>(c) * C::kLd + get<1>(c)] = acc(i);
    }
  }
  cg::cluster_group cluster = cg::this_cluster();
  if (splits > 1) cluster.sync(); else __syncthreads();

  // this CTA finishes rows [r0, r1) of the tile, reading its peers' partial sums
  const int rows = (BM + splits - 1) / splits;
  const int r0 = rank * rows, r1 = min(BM, r0 + rows);
  constexpr int kQuads = BN / 4;
  const int nsrc = skip_reduce ? 1 : splits;
  for (int e = threadIdx.x; e < (r1 - r0) * kQuads; e += kThreads) {
    const int r = r0 + e / kQuads, c = (e % kQuads) * 4;
    const int idx = r * C::kLd + c;
    float4 v = *reinterpret_cast<const float4*>(red + idx);
    for (int q = 1; q < nsrc; ++q) {
      const float* peer = cluster.map_shared_rank(red, (rank + q) % splits);
      const float4 w = *reinterpret_cast<const float4*>(peer + idx);
      v.x += w.x; v.y += w.y; v.z += w.z; v.w += w.w;
    }
    const int gm = m_blk * BM + r, gn = n_blk * BN + c;
    if (gm < M && gn < N) {   // N % 4 == 0
      __half2 lo = __floats2half2_rn(v.x, v.y), hi = __floats2half2_rn(v.z, v.w);
      uint2 packed = make_uint2(*reinterpret_cast<uint32_t*>(&lo), *reinterpret_cast<uint32_t*>(&hi));
      *reinterpret_cast<uint2*>(reinterpret_cast<__half*>(Cout) + (size_t)gm * N + gn) = packed;
    }
  }
  if (splits > 1) cluster.sync();                 // peers may still read this CTA's tile
}

template <int BM, int BN, int BK, int ST, bool WS>
static int run_cfg(int M, int N, int K, const void* A, const void* B, void* Cp, int splits, int skip, cudaStream_t stream) {
  using C = Cfg<BM, BN, BK, ST>;
  using T = cutlass::half_t;
  Tensor mA = make_tensor(make_gmem_ptr(static_cast<const T*>(A)), make_shape(M, K), make_stride(K, Int<1>{}));
  Tensor mB = make_tensor(make_gmem_ptr(static_cast<const T*>(B)), make_shape(N, K), make_stride(K, Int<1>{}));
  auto sA = typename C::SmemA{};
  auto sB = typename C::SmemB{};
  auto tma_a = make_tma_atom(SM90_TMA_LOAD{}, mA, sA(_, _, 0), make_shape(Int<BM>{}, Int<BK>{}));
  auto tma_b = make_tma_atom(SM90_TMA_LOAD{}, mB, sB(_, _, 0), make_shape(Int<BN>{}, Int<BK>{}));
  auto kernel = &clusterk_kernel<C, BM, BN, BK, ST, WS, decltype(tma_a), decltype(tma_b)>;
  const int smem = int(sizeof(typename C::Storage));
  static bool attrs = false;   // prototype: not thread-safe
  if (!attrs) {
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) return 3;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) return 3;
    attrs = true;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((unsigned)splits, (unsigned)((M + BM - 1) / BM), (unsigned)((N + BN - 1) / BN));
  cfg.blockDim = dim3(BM / 64 * 128 + (WS ? 32 : 0));
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = (unsigned)splits;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  if (cudaLaunchKernelEx(&cfg, kernel, M, N, K, tma_a, tma_b, static_cast<T*>(Cp), splits, skip) != cudaSuccess) return 4;
  return cudaPeekAtLastError() == cudaSuccess ? 0 : 4;
}

extern "C" int proto_run(int M, int N, int K, const void* A, const void* B, void* C, int splits, int variant,
                         void* stream) {
  if (K % 8 || N % 4 || splits < 1 || splits > 16) return 1;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int skip = variant >= 100;
  switch (variant % 100) {
    case 0: return run_cfg<128, 128, 64, 5, false>(M, N, K, A, B, C, splits, skip, s);
    case 1: return run_cfg<128, 64, 64, 7, false>(M, N, K, A, B, C, splits, skip, s);
    case 2: return run_cfg<128, 256, 64, 4, false>(M, N, K, A, B, C, splits, skip, s);
    case 3: return run_cfg<64, 128, 64, 7, false>(M, N, K, A, B, C, splits, skip, s);
    case 4: return run_cfg<128, 128, 64, 5, true>(M, N, K, A, B, C, splits, skip, s);
    case 5: return run_cfg<128, 64, 64, 7, true>(M, N, K, A, B, C, splits, skip, s);
    case 6: return run_cfg<128, 256, 64, 4, true>(M, N, K, A, B, C, splits, skip, s);
    case 7: return run_cfg<64, 128, 64, 7, true>(M, N, K, A, B, C, splits, skip, s);
    case 8: return run_cfg<64, 256, 64, 5, true>(M, N, K, A, B, C, splits, skip, s);
    default: return 1;
  }
}
