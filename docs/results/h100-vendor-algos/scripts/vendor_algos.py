"""Which cuBLASLt algorithms win where (session 48): at each shape, the heuristic's first `MAX_ALGOS` candidates
("tn", as the bench's cublaslt_autotuned baseline asks for them), each timed alone, with what it is (tile, stages,
split-K, cluster: evaluator.cublaslt.describe_algo) and torch.mm beside them.

Timing: per algorithm 3 warm-up calls, then `ROUNDS` rounds of `CALLS` back-to-back calls over `SETS` rotated
input sets (at least 3x L2 over them), one event pair a round, the median round's time a call. Not the bench
protocol (no graphs, no interleaving): a ranking of the vendor's own candidates, not a claim about evogemm.

usage: python vendor_algos.py OUT.json [MxNxK ...]
"""
import json
import statistics
import sys

import torch

from evaluator import cublaslt

MAX_ALGOS, ROUNDS, CALLS = 24, 7, 20
L2_BYTES = 50 << 20
SHAPES = ["64x64x4096", "128x128x128", "256x4096x256", "512x512x16384", "1024x1024x1024", "128x4096x4096",
          "2048x2048x2048", "256x12288x4096", "4096x1024x1024", "8192x64x8192", "1024x4096x12288",
          "8192x8192x1024", "4096x8192x4096", "8192x8192x8192", "16x6144x4096", "16x4096x14336", "128x28672x4096",
          "128x4096x14336", "1024x6144x4096", "2048x28672x4096", "4096x4096x14336", "512x8192x28672",
          "4000x4096x4096", "1000x1000x1000", "96x3072x768",
          # not in the public suite: sizes nobody tuned for
          "768x768x768", "1280x1280x1280", "1536x1536x1536", "3072x1024x2048", "2000x2000x2000", "640x640x640",
          "1000x4096x1000", "3000x3000x3000", "1x4096x4096", "32x8192x8192", "64x14336x4096", "200x8192x3000"]


def timed(fn, sets):
    for i in range(3):
        fn(sets[i % len(sets)])
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rounds = []
    for _ in range(ROUNDS):
        start.record()
        for c in range(CALLS):
            fn(sets[c % len(sets)])
        stop.record()
        stop.synchronize()
        rounds.append(start.elapsed_time(stop) * 1000.0 / CALLS)
    return statistics.median(rounds)


def main():
    out_path, shapes = sys.argv[1], sys.argv[2:] or SHAPES
    dev = torch.cuda.get_device_properties(0)
    report = {"device": dev.name, "sms": dev.multi_processor_count, "torch": torch.__version__, "shapes": {}}
    handle = cublaslt.LtHandle()
    ws = torch.empty(cublaslt.WORKSPACE_BYTES, dtype=torch.uint8, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    for shape in shapes:
        m, n, k = map(int, shape.split("x"))
        per_set = 2 * (m * k + n * k + m * n)
        count = max(3, -(-3 * L2_BYTES // per_set))
        sets = [(torch.randn(m, k, device="cuda").half(), torch.randn(n, k, device="cuda").half(),
                 torch.empty(m, n, device="cuda", dtype=torch.half)) for _ in range(count)]
        torch_us = timed(lambda s: torch.mm(s[0], s[1].t(), out=s[2]), sets)
        ref = (sets[0][0].float() @ sets[0][1].float().t())
        rows = []
        with handle.plan(m, n, k, "tn", MAX_ALGOS) as plan:
            for i in range(len(plan.algos)):
                def call(s, i=i):
                    plan.run(i, s[1].data_ptr(), s[0].data_ptr(), s[2].data_ptr(), ws.data_ptr(), stream)
                try:
                    us = timed(call, sets)
                    call(sets[0])
                    torch.cuda.synchronize()
                    err = float((sets[0][2].float() - ref).abs().max() / ref.abs().max())
                except Exception as exc:   # an algorithm that fails is reported, not fatal
                    rows.append({"rank": i, "error": str(exc)})
                    continue
                cfg = plan.algo_config(i)
                rows.append({"rank": i, "us": round(us, 3), "err": err, "config": cfg,
                             "what": cublaslt.describe_algo(cfg)})
        timedrows = sorted((r for r in rows if "us" in r), key=lambda r: r["us"])
        report["shapes"][shape] = {"torch_us": round(torch_us, 3), "algos": rows}
        best = timedrows[0]
        print(f"{shape:>18}: torch {torch_us:8.2f} us | heuristic #0 {rows[0].get('us', float('nan')):8.2f} "
              f"({rows[0].get('what', '')}) | best #{best['rank']} {best['us']:8.2f} ({best['what']}, "
              f"algo {best['config'].get('algo_id')})", flush=True)
        for r in timedrows[1:4]:
            print(f"{'':>20}#{r['rank']:<2} {r['us']:8.2f} ({r['what']}, algo {r['config'].get('algo_id')})")
        del sets
        torch.cuda.empty_cache()
        with open(out_path, "w") as fh:
            json.dump(report, fh, indent=1)
    handle.close()


if __name__ == "__main__":
    main()
