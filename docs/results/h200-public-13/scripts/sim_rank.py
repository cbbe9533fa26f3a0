"""How the stream_wgmma model (H200 device facts) ranks this bench's stream_wgmma kernels (cluster and ksplit twins,
the screen of ../../stream-cluster-k) within each shape (evaluator.sim_fit.rank_report).
Usage: python sim_rank.py call1/pub/bench.json"""
import json
import sys

from evaluator.sim_fit import rank_report

d = json.load(open(sys.argv[1]))
recs = [dict(genome=k["genome"], problem=s["problem"], time_us=k["measurement"]["device"]["median_us"])
        for s in d["shapes"] for k in s["kernels"]
        if k["genome"]["family"] == "stream_wgmma" and k["measurement"]["status"] == "ok"]
print(json.dumps(rank_report(recs, device="h200"), indent=1))
