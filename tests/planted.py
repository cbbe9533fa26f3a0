"""Kernels with planted faults, made as code patches of a real sm90_cutlass genome (for gpu tests)."""

from __future__ import annotations

from genome import Genome, Patch
from templates import get_space
from templates import block_source

BASE = dict(schedule="pingpong", tile_m=64, tile_n=64, tile_k=64)

ROGUE = {
    # writes 64 elements just past the end of C (into the canary band)
    "oob": ("__global__ void evogemm_planted_oob(cutlass::half_t* C, long n) {\n"
            "  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;\n"
            "  if (i < 64) C[n + i] = cutlass::half_t(1.0f);\n}\n",
            "  evogemm_planted_oob<<<1, 64, 0, s>>>(static_cast<cutlass::half_t*>(C), (long)M * N);\n"),
    # spins forever on a flag nothing sets
    "hang": ("__device__ int evogemm_planted_flag = 0;\n"
             "__global__ void evogemm_planted_hang() {\n"
             "  volatile int* f = &evogemm_planted_flag;\n  while (*f == 0) { }\n}\n",
             "  evogemm_planted_hang<<<1, 1, 0, s>>>();\n"),
}


def base_genome() -> Genome:
    space = get_space("sm90_cutlass")
    return space.validate(Genome.make("sm90_cutlass", dict(space.default_params(), **BASE)))


def planted(kind: str) -> Genome:
    g = base_genome()
    decl, launch = ROGUE[kind]
    abi = block_source(g, "abi")
    abi = abi.replace('extern "C" {', decl + '\nextern "C" {', 1)
    tail = "  return cudaPeekAtLastError() == cudaSuccess ? 0 : 4;"
    assert tail in abi
    abi = abi.replace(tail, launch + tail, 1)
    return g.with_patch(Patch("abi", abi, note=f"planted fault: {kind}"))


def fp16_accumulating() -> Genome:
    """The base kernel with its accumulator in fp16 (a faster, less accurate kernel that the old
    fixed 1e-3 bound passed at short K; MEASURE.md)."""
    g = base_genome()
    types = block_source(g, "types")
    line = "using ElementAccumulator = float;"
    assert line in types
    return g.with_patch(Patch("types", types.replace(line, "using ElementAccumulator = cutlass::half_t;", 1),
                              note="planted: fp16 accumulation"))


SKINNY = dict(cluster_k=1, prefetch=1, s_tile=8, unroll=1, warp_rows=16, warps_k=4, warps_r=1)


def skinny_base() -> Genome:
    """A skinny_mma kernel that serves tiny shapes (the public record's at 128^3)."""
    return get_space("skinny_mma").validate(Genome.make("skinny_mma", SKINNY))


def dependent_launch() -> Genome:
    """skinny_base with its launch block made a programmatic dependent launch and nothing in the kernel
    waiting (what a patch after the overlap alone would write). Back to back in a timing graph each call
    would overlap its own previous one (24% faster at 128^3 on the H200); the worker's graphs must time it
    as after any other kernel (evaluator/worker_cuda.full_dependencies)."""
    g = skinny_base()
    launch = block_source(g, "launch")
    call = "  return evogemm_host::launch_in_clusters("
    assert launch.count(call) == 1, call
    start = launch.index(call)
    end = launch.index(");\n", start) + 3
    launch = launch[:start] + """  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(kThreads, 1, 1);
  cfg.dynamicSmemBytes = csplit > 1 ? kClusterSmemBytes : kSmemBytes;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = (unsigned)csplit;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[1].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 2;
  return cudaLaunchKernelEx(&cfg, kernel, X, Y, static_cast<__half*>(C), R, S, K, N, (int)x_is_a, csplit)
      == cudaSuccess ? 0 : 4;
""" + launch[end:]
    return g.with_patch(Patch("launch", launch, note="planted: programmatic dependent launch"))
