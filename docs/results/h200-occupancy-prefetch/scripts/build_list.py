import sys,glob,time
from pathlib import Path
from genome.genome import Genome
from evaluator.compile import Compiler
files=[f for d in sys.argv[2:] for f in sorted(glob.glob(d+'/*.json'))]
c=Compiler.default(Path(sys.argv[1]),jobs=int(__import__("os").environ.get("JOBS","2")))
t=time.time()
def prog(done,total,r): print(done,total,r.genome_id[:8],r.ok,round(r.seconds),flush=True)
c.build_many([Genome.load(f) for f in files],progress=prog)
print('total',time.time()-t,flush=True)
