import json, sys, glob
from genome import Genome
from templates.render import block_source
dirs = sys.argv[2:]
out = {}
for d in dirs:
    for f in glob.glob(d + "/**/*.json", recursive=True):
        x = json.load(open(f))
        for g in (x if isinstance(x, list) else [x]):
            if isinstance(g, dict) and g.get("family") == "skinny_mma" and not g.get("patches"):
                gg = Genome.from_dict(g)
                out[gg.id] = {"genome": gg.to_dict(), "blocks": {b: block_source(gg, b) for b in ("config", "kernel", "launch", "abi")}}
json.dump(out, open(sys.argv[1], "w"))
print(len(out))
