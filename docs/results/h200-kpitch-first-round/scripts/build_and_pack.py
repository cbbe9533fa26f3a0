"""Build (or find in .kc/cache) every kernel of make_first_round.py's folder and pack only those builds into
.kc/s41kp/cache.txz (unpacks to cache/). Usage: python build_and_pack.py FOLDER"""
import glob, json, os, shutil, subprocess, sys
sys.path.insert(0, ".")
from genome import Genome
from evaluator.compile import Compiler
gs = {}
for f in glob.glob(sys.argv[1] + "/hall_of_fame/*.json"):
    for d in json.load(open(f)):
        g = Genome.from_dict(d); gs[g.id] = g
c = Compiler.default(".kc/cache", jobs=2)
rs = c.build_many(list(gs.values())); c.close()
bad = [(g.id, r.reason) for g, r in zip(gs.values(), rs) if not r.ok]
print(len(gs), "genomes", len(bad), "failed", bad[:3])
keys = sorted({r.build_key for r in rs if r.ok})
shutil.rmtree("/tmp/s41kp", ignore_errors=True)
for k in keys:
    os.makedirs(f"/tmp/s41kp/cache/{k[:2]}", exist_ok=True)
    shutil.copytree(f".kc/cache/{k[:2]}/{k}", f"/tmp/s41kp/cache/{k[:2]}/{k}")
os.makedirs(".kc/s41kp", exist_ok=True)
subprocess.run(["tar", "cJf", ".kc/s41kp/cache.txz", "-C", "/tmp/s41kp", "cache"], check=True)
print("packed", len(keys), os.path.getsize(".kc/s41kp/cache.txz"))
