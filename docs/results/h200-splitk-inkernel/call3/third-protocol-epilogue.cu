namespace evogemm_splitk {

struct UnitScale {        // make_arguments sets alpha = 1, beta = 0; the in-kernel reduction computes C = A W^T only
  float alpha = 1.f;
  float beta = 0.f;
};

CUTLASS_DEVICE unsigned long long launch_tag() {
  unsigned long long id;
  asm volatile("mov.u64 %0, %%gridid;" : "=l"(id));
  return ((id & 0x7fffffffffffull) | 0x800000000000ull) << 16;
}

CUTLASS_DEVICE unsigned long long load_acquire(unsigned long long const* word) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(word) : "memory");
  return v;
}

CUTLASS_DEVICE unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// counts one split in on `word` for the launch `tag` and returns the count. A word of another tag (stale, zeroed or
// garbage) counts as none: the first split to find it so swaps in tag + 1; every other split adds one, so the
// splits of a tile do not queue behind a compare-and-swap loop. The caller's fence releases its partial sums.
CUTLASS_DEVICE unsigned count_in(unsigned long long* word, unsigned long long tag) {
  unsigned long long seen = atomicCAS(word, 0ull, tag + 1);   // a word the last launch zeroed: first in
  if (seen == 0ull) return 1u;
  while ((seen & ~0xffffull) != tag) {
    const unsigned long long old = atomicCAS(word, seen, tag + 1);
    if (old == seen) return 1u;
    seen = old;
  }
  return static_cast<unsigned>((atomicAdd(word, 1ull) + 1ull) & 0xffffull);
}

// waits until `word` reads `target`; traps after a second (a split that never came: the grid was not resident)
CUTLASS_DEVICE void wait_for(unsigned long long const* word, unsigned long long target) {
  const unsigned long long start = global_ns();
  while (load_acquire(word) != target) {
    if (global_ns() - start > 1000000000ull) __trap();
  }
}

template <class TileShape_, class StrideD_>
class InKernelReduceEpilogue {
 public:
  using EpilogueSchedule = cutlass::epilogue::NoSmemWarpSpecialized;
  using DispatchPolicy = EpilogueSchedule;
  // named for GemmUniversalAdapter (its EpilogueOutputOp); the epilogue computes C = A W^T with no thread op
  using ThreadEpilogueOp = cutlass::epilogue::thread::LinearCombination<cutlass::half_t, 8, float, float>;
  using ElementAccumulator = float;
  using ElementCompute = float;
  using ElementScalar = float;
  using ElementOutput = cutlass::half_t;
  using ElementC = void;
  using ElementD = cutlass::half_t;
  using StrideC = StrideD_;
  using StrideD = StrideD_;
  using GmemElementC = ElementD;
  using GmemTiledCopyC = void;
  using GmemTiledCopyD = void;
  static constexpr int kTileM = cute::size<0>(TileShape_{});
  static constexpr int kTileN = cute::size<1>(TileShape_{});
  static constexpr int kTileElements = kTileM * kTileN;
  static_assert(kTileN % 4 == 0, "a quad of C a thread");

  struct SharedStorage {};
  using TensorStorage = SharedStorage;

  struct Arguments {
    UnitScale thread{};
    void const* ptr_C = nullptr;
    StrideC dC{};
    ElementD* ptr_D = nullptr;                // C, fp16, row stride get<0>(dD)
    StrideD dD{};
    float* partials = nullptr;                // [tile][split][kTileM x kTileN], row-major in the tile
    unsigned long long* words = nullptr;      // [tile][2]: arrivals, departures
  };
  using Params = Arguments;

  template <class ProblemShape>
  static constexpr Params to_underlying_arguments(ProblemShape const&, Arguments const& args, void*) {
    return args;
  }
  template <class ProblemShape>
  static size_t get_workspace_size(ProblemShape const&, Arguments const&) {
    return 0;   // the partial sums and words are the ABI's workspace (evogemm_workspace_size)
  }
  template <class ProblemShape>
  static cutlass::Status initialize_workspace(ProblemShape const&, Arguments const&, void*, cudaStream_t,
                                              cutlass::CudaHostAdapter* = nullptr) {
    return cutlass::Status::kSuccess;
  }
  template <class ProblemShape>
  static bool can_implement(ProblemShape const& problem, Arguments const&) {
    return cute::get<1>(problem) % 4 == 0 && cute::get<3>(problem) < 0xffff;
  }

  CUTLASS_HOST_DEVICE InKernelReduceEpilogue(Params const& params, SharedStorage const& = SharedStorage())
      : params(params) {}

  CUTLASS_DEVICE bool is_source_needed() { return false; }

  template <class ProblemShapeMNKL, class BlockShapeMNK, class BlockCoordMNKL, class FrgEngine, class FrgLayout,
            class TiledMma, class ResidueMNK>
  CUTLASS_DEVICE void operator()(ProblemShapeMNKL problem_shape_mnkl, BlockShapeMNK, BlockCoordMNKL blk_coord_mnkl,
                                 cute::Tensor<FrgEngine, FrgLayout> const& accumulators, TiledMma tiled_mma,
                                 ResidueMNK, int thread_idx, char*) {
    using namespace cute;
    constexpr int kThreads = size(TiledMma{});
    // ping-pong: each consumer warpgroup (1 or 2) has its own tile and barrier; cooperative: both share one
    const int barrier = kThreads == 128 ? 1 + (static_cast<int>(threadIdx.x) / 128) % 2 : 0;
    const int M = static_cast<int>(get<0>(problem_shape_mnkl)), N = static_cast<int>(get<1>(problem_shape_mnkl));
    const int splits = static_cast<int>(get<3>(problem_shape_mnkl));
    const int m_tile = static_cast<int>(get<0>(blk_coord_mnkl)), n_tile = static_cast<int>(get<1>(blk_coord_mnkl));
    const int split = static_cast<int>(get<3>(blk_coord_mnkl));
    const long long tile = m_tile + static_cast<long long>(n_tile) * ((M + kTileM - 1) / kTileM);
    float* tile_partials = params.partials + tile * splits * kTileElements;

    // 1. this split's partial sums, the whole tile (rows and columns past M, N included: never read back)
    Tensor gP = make_tensor(make_gmem_ptr(tile_partials + static_cast<long long>(split) * kTileElements),
                            make_layout(make_shape(Int<kTileM>{}, Int<kTileN>{}), make_stride(Int<kTileN>{}, _1{})));
    Tensor tCgP = tiled_mma.get_slice(thread_idx).partition_C(gP);
    static_assert(decltype(size(accumulators))::value == decltype(size(tCgP))::value, "one partial sum an accumulator");
    // pairs of adjacent columns a store (the tile and every row of it start 8-byte aligned)
    copy(AutoVectorizingCopyWithAssumedAlignment<64>{}, accumulators, tCgP);
    cutlass::arch::NamedBarrier::sync(kThreads, barrier);   // the tile's partial sums written, then one thread

    // 2. releases them (its fence covers the writes the barrier ordered before it), counts in and, unless it came
    // last, waits for every split of the tile (acquiring theirs)
    unsigned long long* words = params.words + 2 * tile;
    const unsigned long long tag = launch_tag();
    if (thread_idx == 0) {
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
      if (count_in(words, tag) != static_cast<unsigned>(splits))
        wait_for(words, tag | static_cast<unsigned long long>(splits));
    }
    cutlass::arch::NamedBarrier::sync(kThreads, barrier);

    // 3. this split's share of the tile: every split's partial sums of it added and rounded once to fp16. Where the
    // share has fewer quads than threads, `groups` lanes of a warp share a quad, each adding every groups-th split
    // in order, combined by shuffles in a fixed tree: the sum's order depends only on splits and the tile
    constexpr int kQuads = kTileElements / 4, kQuadsPerRow = kTileN / 4;
    const int first = static_cast<int>(static_cast<long long>(split) * kQuads / splits);
    const int last = static_cast<int>(static_cast<long long>(split + 1) * kQuads / splits);
    int groups = 1;
    while (groups < 32 && groups * 2 <= splits && (last - first) * groups * 2 <= kThreads) groups *= 2;
    const int per_pass = kThreads / groups, g = thread_idx % groups;
    const float4* sums = reinterpret_cast<const float4*>(tile_partials);
    const long long ldc = static_cast<long long>(get<0>(params.dD));
    for (int base = first; base < last; base += per_pass) {      // the same passes for every thread: shuffles meet
      const int q = base + thread_idx / groups;
      float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
      if (q < last) {
#pragma unroll 4
        for (int s = g; s < splits; s += groups) {
          const float4 w = __ldcg(sums + static_cast<long long>(s) * kQuads + q);
          v.x += w.x; v.y += w.y; v.z += w.z; v.w += w.w;
        }
      }
      for (int d = groups >> 1; d > 0; d >>= 1) {
        v.x += __shfl_xor_sync(0xffffffffu, v.x, d);
        v.y += __shfl_xor_sync(0xffffffffu, v.y, d);
        v.z += __shfl_xor_sync(0xffffffffu, v.z, d);
        v.w += __shfl_xor_sync(0xffffffffu, v.w, d);
      }
      const int row = m_tile * kTileM + q / kQuadsPerRow, col = n_tile * kTileN + (q % kQuadsPerRow) * 4;
      if (g == 0 && q < last && row < M && col < N) {
        const __half2 lo = __floats2half2_rn(v.x, v.y), hi = __floats2half2_rn(v.z, v.w);
        *reinterpret_cast<uint2*>(params.ptr_D + row * ldc + col) =
            make_uint2(*reinterpret_cast<const uint32_t*>(&lo), *reinterpret_cast<const uint32_t*>(&hi));
      }
    }

    // 4. leave: the last split of the tile to do so (every split has then passed its wait) zeroes the words
    if (thread_idx == 0 && count_in(words + 1, tag) == static_cast<unsigned>(splits)) {
      atomicExch(words, 0ull);
      atomicExch(words + 1, 0ull);
    }
  }

 private:
  Params params;
};

}  // namespace evogemm_splitk
