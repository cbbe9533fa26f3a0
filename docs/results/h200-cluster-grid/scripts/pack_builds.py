"""Build (or find in the cache) every kernel the device call needs: the experiment's (../kernels), the gpu tests'
cluster_grid kernels and the ABI host-path case; then pack only their build folders. Run from the repository root:
python docs/results/h200-cluster-grid/scripts/pack_builds.py CACHE_DIR ARCHIVE.txz  (about 12 minutes on 2 cores
from an empty cache; the archive unpacks to CACHE_DIR's last folder name)."""
import glob
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, "tests")
import test_gpu_abi_host_path as host_path  # noqa: E402
import test_gpu_families as families  # noqa: E402
from evaluator.compile import Compiler  # noqa: E402
from genome import Genome  # noqa: E402

cache, archive = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
genomes = {}
for f in sorted(glob.glob("docs/results/h200-cluster-grid/kernels/*/*.json")):
    g = Genome.from_dict(json.load(open(f)))
    genomes[g.id] = g
genomes.update((g.id, g) for g in families.cluster_grid_genomes())
genomes.update((c.genome().id, c.genome()) for c in host_path.CASES if dict(c.changes).get("cluster_grid"))
compiler = Compiler.default(cache)
try:
    results = compiler.build_many(list(genomes.values()))
finally:
    compiler.close()
failed = [(g.id, r.reason) for g, r in zip(genomes.values(), results) if not r.ok]
assert not failed, failed
keys = sorted({r.build_key for r in results})
print(len(genomes), "genomes,", len(keys), "builds")
subprocess.run(["tar", "cJf", str(archive), "-C", str(cache.parent), *[f"{cache.name}/{k[:2]}/{k}" for k in keys]],
               check=True)
