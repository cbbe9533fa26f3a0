"""How the stream_wgmma model ranks a bench's stream_wgmma kernels (cluster and ksplit twins) within each shape
(evaluator.sim_fit.rank_report), with the device facts named (h100 by default: this folder's screen; session 62's
H200 bench: ../../h200-public-13). Usage: python sim_rank.py bench.json [h100|h200]"""
import json
import sys

from evaluator.sim_fit import rank_report

d = json.load(open(sys.argv[1]))
recs = [dict(genome=k["genome"], problem=s["problem"], time_us=k["measurement"]["device"]["median_us"])
        for s in d["shapes"] for k in s["kernels"]
        if k["genome"]["family"] == "stream_wgmma" and k["measurement"]["status"] == "ok"]
print(json.dumps(rank_report(recs, device=sys.argv[2] if len(sys.argv) > 2 else "h100"), indent=1))
