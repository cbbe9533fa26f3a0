"""How the stream_wgmma model (H100 device facts) ranks the screen's stream_wgmma kernels, cluster and ksplit twins,
within each shape (evaluator.sim_fit.rank_report). Usage: python sim_rank.py bench.json"""
import json
import sys

from evaluator.sim_fit import rank_report

d = json.load(open(sys.argv[1]))
recs = [dict(genome=k["genome"], problem=s["problem"], time_us=k["measurement"]["device"]["median_us"])
        for s in d["shapes"] for k in s["kernels"]
        if k["genome"]["family"] == "stream_wgmma" and k["measurement"]["status"] == "ok"]
print(json.dumps(rank_report(recs, device="h100"), indent=1))
