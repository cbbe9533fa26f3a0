"""Graph-replay floor on this GPU: what a kernel costs in back-to-back CUDA-graph replay when it does nothing, or
only loads a few KB from HBM and stores a little, next to torch.matmul at the tiny public shapes, in one harness.
Every node of a graph reads its own cold bytes (L2 flushed before each replay by writing 512 MB, untimed)."""
import json, sys, statistics
import torch, cupy as cp

SRC = r'''
extern "C" __global__ void empty_k() {}
extern "C" __global__ void load_store(const int4* __restrict__ src, int4* __restrict__ dst, int per_block_int4) {
  const int4* p = src + (size_t)blockIdx.x * per_block_int4;
  int4 acc = make_int4(0, 0, 0, 0);
  for (int i = threadIdx.x; i < per_block_int4; i += blockDim.x) {
    int4 v = __ldcs(p + i); acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w; }
  dst[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
extern "C" __global__ void chase(const long long* __restrict__ src, long long* dst, int hops, long long start) {
  long long i = start;
  for (int h = 0; h < hops; ++h) i = src[i];
  if (threadIdx.x == 0) dst[blockIdx.x] = i;
}
'''
mod = cp.RawModule(code=SRC)
empty_k, load_store, chase = (mod.get_function(n) for n in ("empty_k", "load_store", "chase"))
NODES, ROUNDS = 40, 25
src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda").random_(0, 255)
dst = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
chain = (torch.arange(1 << 27, dtype=torch.int64, device="cuda") + (1 << 20) + 136) % (1 << 27)   # 1 GB: each hop 8 MB on
cp.cuda.Device().synchronize()

def cupy_launch(fn, grid, block, args, smem=0):
    s = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    with s:
        fn((grid,), (block,), args, shared_mem=smem)

def time_graph(make_node, name):
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for i in range(NODES): make_node(i)   # warm / compile
    torch.cuda.synchronize()
    with torch.cuda.graph(g, stream=s):
        for i in range(NODES): make_node(i)
    per = []
    for r in range(ROUNDS):
        flush.fill_(r & 0xff)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); torch.cuda.synchronize()
        per.append(a.elapsed_time(b) * 1000 / NODES)
    med = statistics.median(per)
    print(f"{name:48s} {med:7.3f} us/node  (min {min(per):.3f}, max {max(per):.3f})", flush=True)
    return {"name": name, "median_us": med, "min_us": min(per), "max_us": max(per)}

res = []
STRIDE = 16 << 20   # node i reads at i * 16 MB + ... : 40 nodes x 16 MB = 640 MB of the 1 GB buffer
res.append(time_graph(lambda i: cupy_launch(empty_k, 1, 32, ()), "empty, 1 CTA x 32"))
res.append(time_graph(lambda i: cupy_launch(empty_k, 132, 384, ()), "empty, 132 CTAs x 384"))
res.append(time_graph(lambda i: cupy_launch(empty_k, 132, 384, (), smem=0), "empty, 132 CTAs x 384 (again)"))
for grid, kb, thr in ((1, 32, 256), (128, 6, 128), (128, 32, 256), (132, 64, 256), (132, 256, 512)):
    per = kb * 1024 // 16
    res.append(time_graph(lambda i, g=grid, p=per, t=thr: cupy_launch(
        load_store, g, t, (src.data_ptr() + i * STRIDE, dst.data_ptr(), cp.int32(p))),
        f"load {kb} KB a CTA, {grid} CTAs x {thr}, store 16 B/thr"))
for hops in (1, 2, 4):
    res.append(time_graph(lambda i, h=hops: cupy_launch(chase, 1, 32, (chain.data_ptr(), dst.data_ptr(), cp.int32(h), cp.int64(i * 3 * (1 << 20) // 8 * 8 + 1000 * i))),
                          f"pointer chase {hops} hops, 1 CTA"))
A = {}
for (m, n, k) in ((128, 128, 128), (64, 64, 4096), (96, 3072, 768), (256, 4096, 256), (1000, 1000, 1000), (1024, 1024, 1024)):
    sets = [(torch.randn(m, k, device="cuda", dtype=torch.half), torch.randn(k, n, device="cuda", dtype=torch.half)) for _ in range(NODES)]
    res.append(time_graph(lambda i, s=sets: torch.matmul(s[i][0], s[i][1]), f"torch.matmul {m}x{n}x{k}"))
json.dump({"gpu": torch.cuda.get_device_name(), "nodes": NODES, "rounds": ROUNDS, "results": res},
          open(sys.argv[1] if len(sys.argv) > 1 else "floor.json", "w"), indent=1)
