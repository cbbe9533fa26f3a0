"""Time tma_stream.cu's TMA streaming kernel over box geometries (R rows x D 128-byte pieces a row, S stages) at
the streamed operand of six public weight-streaming shapes, interleaved round by round with the read ceiling
(grid-stride ld.global.nc) and torch.mm at the GEMM shape itself, over rotated buffers (>= 160 MB, so HBM).
usage: python tma_stream.py LIB OUT.json   (session 45; not evogemm bench: no gate, no vendor set, a probe)"""
import ctypes
import json
import statistics
import sys
import time

import torch

lib = ctypes.CDLL(sys.argv[1])
lib.tma_stream_run.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                               ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
lib.read_ceiling_run.argtypes = [ctypes.c_void_p, ctypes.c_long, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                 ctypes.c_void_p]
SMS = torch.cuda.get_device_properties(0).multi_processor_count
# (GEMM shape, streamed rows, K, the small side M): the streamed operand is W (N x K), or A for 8192x64x8192
SHAPES = [("128x28672x4096", 28672, 4096, 128), ("256x12288x4096", 12288, 4096, 256),
          ("128x4096x14336", 4096, 14336, 128), ("16x4096x14336", 4096, 14336, 16),
          ("16x6144x4096", 6144, 4096, 16), ("8192x64x8192", 8192, 8192, 64)]
ROUNDS, CALLS = 5, 20


def configs(rows, K):
    out = []
    for R in (256, 224, 192, 128, 64, 32, 16, 8):
        for D in (1, 2, 4, 8, 16):
            if (K // 64) % D:
                continue
            for S in (2, 4, 6):
                stage = 128 * R * D
                if stage * S > 200 * 1024 or stage * S < 16 * 1024:
                    continue
                per_sm = min(8, (227 * 1024) // (stage * S + 2048))
                blocks = -(-rows // R)
                if min(blocks, SMS * per_sm) < 96:   # too few CTAs to stream at all
                    continue
                out.append((R, D, S, min(blocks, SMS * per_sm)))
                if min(blocks, SMS * per_sm) > SMS:   # also one CTA an SM, persistent over row blocks
                    out.append((R, D, S, SMS))
    return out


def timed(fn, nbuf):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for c in range(CALLS):
        fn(c % nbuf)
    e.record()
    e.synchronize()
    return s.elapsed_time(e) * 1000.0 / CALLS


def main():
    stream = torch.cuda.current_stream().cuda_stream
    sink = torch.zeros(4, dtype=torch.int32, device="cuda")
    result = {"device": torch.cuda.get_device_name(0), "sms": SMS, "rounds": ROUNDS, "calls": CALLS, "shapes": {}}
    t0 = time.time()
    for name, rows, K, m in SHAPES:
        nbytes = rows * K * 2
        nbuf = max(2, -(-160_000_000 // nbytes))
        bufs = [torch.randn(rows, K, device="cuda").half() for _ in range(nbuf)]
        small = [torch.randn(m, K, device="cuda").half() for _ in range(nbuf)]
        cands = {}
        for R, D, S, grid in configs(rows, K):
            def f(i, R=R, D=D, S=S, grid=grid):
                rc = lib.tma_stream_run(bufs[i].data_ptr(), rows, K, R, D, S, grid, stream)
                if rc:
                    raise RuntimeError(f"tma_stream_run {R} {D} {S} {grid}: {rc}")
            cands[f"R{R}_D{D}_S{S}_g{grid}"] = f
        cands["read_ceiling"] = lambda i: lib.read_ceiling_run(bufs[i].data_ptr(), nbytes, SMS * 8, 512,
                                                                 sink.data_ptr(), stream)
        if name == "8192x64x8192":   # A streamed: C = A W^T with W 64 x 8192
            cands["torch_mm"] = lambda i: torch.mm(bufs[i], small[i][:64].t())
        else:
            cands["torch_mm"] = lambda i: torch.mm(small[i], bufs[i].t())
        for f in cands.values():   # warm-up, and any launch error now
            f(0)
        torch.cuda.synchronize()
        w_end = time.time() + 0.5
        while time.time() < w_end:
            for f in cands.values():
                f(1 % nbuf)
        samples = {k: [] for k in cands}
        for _ in range(ROUNDS):
            for k, f in cands.items():
                samples[k].append(timed(f, nbuf))
        med = {k: statistics.median(v) for k, v in samples.items()}
        result["shapes"][name] = {"rows": rows, "K": K, "bytes": nbytes, "buffers": nbuf,
                                  "median_us": med, "samples_us": samples}
        ceil, mm = med["read_ceiling"], med["torch_mm"]
        best = sorted((v, k) for k, v in med.items() if k.startswith("R"))
        print(f"{name}: {nbytes/1e6:.0f} MB  read ceiling {ceil:.2f} us ({nbytes/ceil/1e6:.2f} TB/s)  torch.mm {mm:.2f} us"
              f"  [{time.time()-t0:.0f} s]", flush=True)
        for v, k in best[:8]:
            print(f"   {k:24s} {v:8.2f} us  {nbytes/v/1e6:.2f} TB/s  {ceil/v:.3f} of ceiling", flush=True)
        for k in [k for k in med if k.startswith("R") and "_D1_" in k][:6]:
            print(f"   D1: {k:20s} {med[k]:8.2f} us  {nbytes/med[k]/1e6:.2f} TB/s", flush=True)
        del bufs, small
        torch.cuda.empty_cache()
    with open(sys.argv[2], "w") as fh:
        json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
