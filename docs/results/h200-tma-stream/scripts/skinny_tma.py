"""Check and time skinny_tma.cu's prototype against torch.mm at decode shapes: every configuration's result
against an fp32 reference (and torch.mm's own error), then interleaved rounds over rotated buffers (>= 160 MB)
of torch.mm, the TMA read probe (tma_stream.cu, the best geometries of the first probe) and every configuration.
usage: python skinny_tma.py SKINNY_LIB STREAM_LIB OUT.json   (session 45; a prototype's harness, not evogemm bench)"""
import ctypes
import json
import statistics
import sys
import time

import torch

lib = ctypes.CDLL(sys.argv[1])
lib.skinny_tma_run.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 9 + [ctypes.c_void_p]
probe = ctypes.CDLL(sys.argv[2])
probe.tma_stream_run.argtypes = [ctypes.c_void_p] + [ctypes.c_int] * 6 + [ctypes.c_void_p]
SMS = torch.cuda.get_device_properties(0).multi_processor_count
SHAPES = ["16x6144x4096", "16x4096x14336", "1x8192x8192", "8x14336x4096", "4x12288x4096", "16x14336x4096",
          "12x3584x3584", "8x16384x5120", "2x5120x5120", "16x1024x16384", "16x4096x4104", "8x5000x3000"]
CONFIGS = [(16, 8, 4, 2), (16, 8, 4, 4), (16, 16, 2, 4), (16, 16, 3, 4), (16, 4, 6, 2), (16, 4, 6, 4),
           (32, 4, 4, 4), (32, 8, 2, 4), (32, 8, 3, 4), (32, 4, 6, 4), (32, 4, 4, 8), (32, 8, 3, 8),
           (64, 2, 6, 4), (64, 4, 3, 4), (64, 4, 3, 8), (64, 2, 6, 8)]
TWO_D = [(16, 8, 4, 4), (32, 8, 3, 4), (32, 4, 4, 4), (64, 4, 3, 4)]   # D 2-D loads a stage (K % 8 == 0)
ROUNDS, CALLS = 5, 20


def smem(R, D, S, CW):
    return S * (128 * R * D + 128 * 16 * D) + CW * 1024 + 1024


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
    out = {"device": torch.cuda.get_device_name(0), "sms": SMS, "rounds": ROUNDS, "calls": CALLS, "shapes": {}}
    t0 = time.time()
    for shape in SHAPES:
        M, N, K = map(int, shape.split("x"))
        nbuf = max(2, -(-160_000_000 // (N * K * 2)))
        gen = torch.Generator(device="cuda").manual_seed(45)
        W = [torch.randn(N, K, device="cuda", generator=gen).half() for _ in range(nbuf)]
        Y = [torch.randn(M, K, device="cuda", generator=gen).half() for _ in range(nbuf)]
        C = torch.empty(M, N, device="cuda", dtype=torch.half)
        ref = (Y[0].float() @ W[0].float().t())
        scale = ref.abs().max().item()
        torch_err = (torch.mm(Y[0], W[0].t()).float() - ref).abs().max().item() / scale
        cands, errors = {}, {}
        for R, D, S, CW, two_d in [c + (0,) for c in CONFIGS] + [c + (1,) for c in TWO_D]:
            if (not two_d and K % (64 * D)) or smem(R, D, S, CW) > 220 * 1024:
                continue
            blocks = -(-N // R)
            per_sm = max(1, min(2, (227 * 1024) // smem(R, D, S, CW)))
            for grid in sorted({min(blocks, SMS), min(blocks, SMS * per_sm)}):
                name = f"R{R}_D{D}_S{S}_W{CW}_g{grid}" + ("_2d" if two_d else "")

                def f(i, R=R, D=D, S=S, CW=CW, grid=grid, name=name, two_d=two_d):
                    rc = lib.skinny_tma_run(Y[i].data_ptr(), W[i].data_ptr(), C.data_ptr(), M, N, K, R, D, S, CW,
                                            grid, two_d, stream)
                    if rc:
                        raise RuntimeError(f"{name}: rc {rc}")
                C.fill_(float("nan"))
                f(0)
                torch.cuda.synchronize()
                err = (C.float() - ref).abs().max().item() / scale
                errors[name] = err
                if err == err and err < 2e-3:   # not NaN, and fp32-accumulation accurate
                    cands[name] = f
        cands["torch_mm"] = lambda i: torch.mm(Y[i], W[i].t(), out=C)
        for R, D, S in ((16, 16, 2), (8, 16, 4), (32, 8, 4)):
            if K % (64 * D) == 0:
                cands[f"probe_R{R}_D{D}_S{S}"] = (lambda i, R=R, D=D, S=S: probe.tma_stream_run(
                    W[i].data_ptr(), N, K, R, D, S, SMS, stream))
        w_end = time.time() + 0.5
        while time.time() < w_end:
            for f in cands.values():
                f(1 % nbuf)
        samples = {k: [] for k in cands}
        for _ in range(ROUNDS):
            for k, f in cands.items():
                samples[k].append(timed(f, nbuf))
        med = {k: statistics.median(v) for k, v in samples.items()}
        out["shapes"][shape] = {"buffers": nbuf, "torch_rel_error": torch_err, "rel_error": errors,
                                "median_us": med, "samples_us": samples}
        mm = med["torch_mm"]
        ranked = sorted((v, k) for k, v in med.items() if k.startswith("R"))
        bad = [k for k, e in errors.items() if not (e == e and e < 2e-3)]
        print(f"{shape}: torch.mm {mm:.2f} us  probe best {min((v for k, v in med.items() if k.startswith('probe')), default=float('nan')):.2f} us"
              f"  W {N*K*2/1e6:.0f} MB  torch err {torch_err:.2e}  worst ok err "
              f"{max((e for k, e in errors.items() if k not in bad), default=0):.2e}  failed {bad}  [{time.time()-t0:.0f} s]",
              flush=True)
        for v, k in ranked[:6]:
            print(f"   {k:26s} {v:8.2f} us  {N*K*2/v/1e6:.2f} TB/s  torch/this {mm/v:.3f}", flush=True)
        del W, Y
        torch.cuda.empty_cache()
    with open(sys.argv[3], "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
