// Max co-resident clusters per cluster size on this GPU (cudaOccupancyMaxActiveClusters), for a kernel
// that takes one CTA per SM (200 KB of shared memory) and one that could take two (100 KB); and the SM
// ids a grid of that many clusters actually runs on at once (spinning CTAs record %smid).
#include <cstdio>
#include <cuda_runtime.h>
__global__ void spin(int* smid, long long ns) {
  extern __shared__ char s[];
  unsigned id; asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  long long t0 = clock64(); while (clock64() - t0 < ns) {}
  if (threadIdx.x == 0) smid[blockIdx.x] = (int)id + (s[0] == 123 ? 1000 : 0);
}
int main() {
  int dev = 0; cudaDeviceProp p; cudaGetDeviceProperties(&p, dev);
  printf("{\"device\": \"%s\", \"sms\": %d, \"results\": [\n", p.name, p.multiProcessorCount);
  int* smid; cudaMalloc(&smid, 4096 * sizeof(int));
  const int sizes[] = {1, 2, 3, 4, 6, 8, 16};
  const int smems[] = {200 * 1024, 100 * 1024};
  bool first = true;
  for (int smem : smems) {
    cudaFuncSetAttribute(spin, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    cudaFuncSetAttribute(spin, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    for (int cs : sizes) {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(cs * 64); cfg.blockDim = dim3(384); cfg.dynamicSmemBytes = smem;
      cudaLaunchAttribute a; a.id = cudaLaunchAttributeClusterDimension; a.val.clusterDim.x = cs;
      a.val.clusterDim.y = 1; a.val.clusterDim.z = 1; cfg.attrs = &a; cfg.numAttrs = 1;
      int n = -1; cudaError_t e = cudaOccupancyMaxActiveClusters(&n, (void*)spin, &cfg);
      // one wave of exactly n clusters, then n + 1: time both (a second wave doubles the time)
      float ms[2] = {-1, -1};
      for (int extra = 0; extra < 2 && e == cudaSuccess && n > 0; ++extra) {
        cfg.gridDim = dim3(cs * (n + extra));
        cudaEvent_t a0, a1; cudaEventCreate(&a0); cudaEventCreate(&a1);
        cudaLaunchKernelEx(&cfg, spin, smid, 200000LL);   // warm
        cudaEventRecord(a0); cudaLaunchKernelEx(&cfg, spin, smid, 200000LL); cudaEventRecord(a1);
        cudaEventSynchronize(a1); cudaEventElapsedTime(&ms[extra], a0, a1);
      }
      printf("%s{\"smem\": %d, \"cluster\": %d, \"max_active_clusters\": %d, \"ctas\": %d, \"err\": \"%s\", "
             "\"ms_n\": %.4f, \"ms_n_plus_1\": %.4f}\n", first ? "" : ",", smem, cs, n, n * cs,
             cudaGetErrorString(e), ms[0], ms[1]);
      first = false; cudaGetLastError();
    }
  }
  printf("]}\n");
  return 0;
}
