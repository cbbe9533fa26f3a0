"""Check and time stream_wgmma.cu's prototype against torch.mm at weight-streaming shapes (M = 32-256 activations
against a large weight; one with the activations' operand streamed): every configuration's result against an
fp32 reference, then interleaved rounds over rotated buffers (>= 160 MB) of torch.mm and every correct
configuration, 5 rounds of 20 calls, medians. A prototype's harness, not evogemm bench.
usage: python stream_wgmma.py LIB OUT.json [SHAPE ...]   (session 46)
SMALL_GRID=1 (session 47) also times MT below the small side: a grid over ceil(small / MT) small-side tiles, each
CTA over the whole K of its weight block (or a K split of it), its partner CTAs beside it in launch order."""
import ctypes
import json
import statistics
import sys
import time

import torch

lib = ctypes.CDLL(sys.argv[1])
lib.stream_wgmma_run.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 11 + [ctypes.c_void_p]
SMALL_GRID = bool(__import__('os').environ.get('SMALL_GRID'))
DIAG = [tuple(map(int, c.split(','))) for c in __import__('os').environ.get('DIAG', '').split(';') if c]   # BN,MT,D,S,ks
SMS = torch.cuda.get_device_properties(0).multi_processor_count
SHAPES = sys.argv[3:] or ["128x4096x14336", "128x28672x4096", "128x4096x4096", "256x12288x4096", "8192x64x8192",
                          "96x3072x768", "64x14336x4096", "128x14336x4096", "256x4096x14336", "32x8192x8192"]
CONFIGS = [(128, 128, 1, 6), (128, 128, 2, 3), (64, 128, 1, 8), (64, 128, 2, 4), (64, 128, 4, 2),
           (128, 64, 1, 8), (128, 64, 2, 4), (128, 64, 4, 2), (64, 64, 2, 6), (64, 64, 4, 3),
           (128, 256, 1, 4), (64, 256, 1, 6), (64, 256, 2, 3)]
ROUNDS, CALLS = 5, 20


def smem(BN, MT, D, S):
    return S * 128 * (BN + MT) * D + 1024


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
        trans = M > N          # the activations' operand is the large one: stream A, C = (W A^T)^T
        rows, small = (M, N) if trans else (N, M)
        nbuf = max(2, -(-160_000_000 // (rows * K * 2)))
        gen = torch.Generator(device="cuda").manual_seed(46)
        A = [torch.randn(M, K, device="cuda", generator=gen).half() for _ in range(nbuf)]
        W = [torch.randn(N, K, device="cuda", generator=gen).half() for _ in range(nbuf)]
        X, Y = (A, W) if trans else (W, A)
        C = torch.empty(M, N, device="cuda", dtype=torch.half)
        P = torch.empty(8 * M * N, device="cuda", dtype=torch.float32)
        ref = A[0].float() @ W[0].float().t()
        scale = ref.abs().max().item()
        torch_err = (torch.mm(A[0], W[0].t()).float() - ref).abs().max().item() / scale
        mt = next(m for m in (64, 128, 256) if m >= small)
        cands, errors = {}, {}
        for BN, MT, D, S in CONFIGS:
            if K % (64 * D) or not (MT == mt or (SMALL_GRID and MT < small)):
                continue
            blocks = -(-rows // BN) * -(-small // MT)   # work units a K split: weight blocks x small-side tiles
            per_sm = max(1, min(2, (227 * 1024) // smem(BN, MT, D, S)))
            for ks in (1, 2, 3, 4, 6, 8):
                units = blocks * ks
                if ks > 1 and (units > 4 * SMS or K // (64 * D) < 4 * ks or blocks >= SMS):
                    continue
                for grid in sorted({min(units, SMS), min(units, SMS * per_sm)}):
                    name = f"BN{BN}_MT{MT}_D{D}_S{S}_ks{ks}_g{grid}"

                    def f(i, BN=BN, MT=MT, D=D, S=S, ks=ks, grid=grid, name=name):
                        rc = lib.stream_wgmma_run(Y[i].data_ptr(), X[i].data_ptr(), C.data_ptr(), P.data_ptr(), small,
                                                  rows, K, BN, MT, D, S, ks, grid, int(trans), 0, stream)
                        if rc:
                            raise RuntimeError(f"{name}: rc {rc}")
                    C.fill_(float("nan"))
                    try:
                        f(0)
                        torch.cuda.synchronize()
                        err = (C.float() - ref).abs().max().item() / scale
                    except RuntimeError as exc:
                        print("  ", exc, flush=True)
                        err = float("nan")
                    errors[name] = err
                    if err == err and err < 2e-3:
                        cands[name] = f
        for BN, MT, D, S, ks in DIAG:   # the same configuration with the k loops rotated, without its wgmma, without its Y loads, without both
            if MT != mt or K % (64 * D):
                continue
            grid = min(-(-rows // BN) * ks, SMS)
            for mode, tag in ((4, "rot"), (1, "nomma"), (2, "noY"), (3, "nomma_noY")):
                name = f"BN{BN}_MT{MT}_D{D}_S{S}_ks{ks}_g{grid}_{tag}"
                cands[name] = (
                    lambda i, BN=BN, MT=MT, D=D, S=S, ks=ks, grid=grid, mode=mode: lib.stream_wgmma_run(
                        Y[i].data_ptr(), X[i].data_ptr(), C.data_ptr(), P.data_ptr(), small, rows, K, BN, MT, D, S, ks,
                        grid, int(trans), mode, stream))
                if mode == 4:   # a rotated k order changes only the order of the sums
                    C.fill_(float("nan"))
                    cands[name](0)
                    torch.cuda.synchronize()
                    errors[name] = (C.float() - ref).abs().max().item() / scale
                    print(f"   {name}: relative error {errors[name]:.2e}", flush=True)
        cands["torch_mm"] = lambda i: torch.mm(A[i], W[i].t(), out=C)
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
        ranked = sorted((v, k) for k, v in med.items() if k.startswith("BN") and not k.endswith(("nomma", "noY", "rot")))
        bad = [k for k, e in errors.items() if not (e == e and e < 2e-3)]
        byt = rows * K * 2
        print(f"{shape}: torch.mm {mm:.2f} us ({byt / mm / 1e6:.2f} TB/s)  torch err {torch_err:.2e}  worst ok err "
              f"{max((e for k, e in errors.items() if k not in bad), default=0):.2e}  failed {len(bad)}/{len(errors)} "
              f"{bad[:3]}  [{time.time() - t0:.0f} s]", flush=True)
        for v, k in ranked[:5]:
            print(f"   {k:28s} {v:8.2f} us  {byt / v / 1e6:.2f} TB/s  torch/this {mm / v:.3f}", flush=True)
        for k, v in med.items():
            if k.endswith(("nomma", "noY", "rot")):
                print(f"   {k:38s} {v:8.2f} us  X alone {byt / v / 1e6:.2f} TB/s", flush=True)
        del A, W, X, Y, P
        torch.cuda.empty_cache()
        with open(sys.argv[2], "w") as fh:   # after every shape: a hang or a crash later keeps what was measured
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
