"""Ablations of skinny_mma kernels (not correct GEMMs; timed only by ablate.py): where a latency-bound call's
time goes. full: as built; peer: the cluster reduction's peer reads unrolled (compile-time count, csplit 4);
noload: no global loads (fragments from registers); noreduce: no cluster barrier or peer read (each CTA
stores its own partial); nomain: no loads and no mma (partials of zero, then smem + cluster + store as built);
empty: the kernel returns at once (launch config as built)."""
import json, sys
from pathlib import Path
from genome import Genome, Patch
from templates.render import block_source, render

def patched(g, **blocks):
    d = g.to_dict(); d.pop("id", None)
    d["patches"] = [Patch(b, c, note="ablation").to_dict() for b, c in blocks.items()]
    return Genome.from_dict(d)

def sub(text, old, new):
    assert old in text, old[:80]
    return text.replace(old, new)

OLD_PEER = """    for (int q = 1; q < csplit; ++q) {
      const float* peer = cluster.map_shared_rank(red, (rank + q) % csplit);
      v += peer[idx];
    }"""
NEW_PEER = """    if (csplit == 4) {
      float pv[3];
#pragma unroll
      for (int q = 1; q < 4; ++q) pv[q - 1] = cluster.map_shared_rank(red, (rank + q) & 3)[idx];
      v += pv[0] + pv[1] + pv[2];
    } else {
      for (int q = 1; q < csplit; ++q) {
        const float* peer = cluster.map_shared_rank(red, (rank + q) % csplit);
        v += peer[idx];
      }
    }"""

def ablations(g):
    kern, loads = block_source(g, "kernel"), block_source(g, "loads")
    noload = loads.replace('asm volatile("ld.global.nc.L1::no_allocate', 'v = make_uint4((uint32_t)(uintptr_t)p, 1u, 2u, 3u); if (0) asm volatile("ld.global.nc.L1::no_allocate')
    noload = noload.replace('asm volatile("ld.global.nc.v4.u32', 'v = make_uint4((uint32_t)(uintptr_t)p, 1u, 2u, 3u); if (0) asm volatile("ld.global.nc.v4.u32')
    assert noload.count("if (0)") == 2
    out = {"full": g, "peer": patched(g, kernel=sub(kern, OLD_PEER, NEW_PEER)), "noload": patched(g, loads=noload)}
    nored = sub(kern, "  if (csplit > 1) cluster.sync();                 // every CTA's slice 0 is complete",
                "  if (false) cluster.sync();")
    nored = sub(nored, OLD_PEER, "")
    nored = sub(nored, "  if (csplit > 1) cluster.sync();                 // keep shared memory alive until peers are done", "")
    out["noreduce"] = patched(g, kernel=nored)
    nomain = sub(kern, "  if constexpr (kPrefetch) {", "  if (K < 0) {")   # the loads and mma never run
    out["nomain"] = patched(g, kernel=nomain)
    head = "                                            int csplit) {\n"
    out["empty"] = patched(g, kernel=sub(kern, head, head + "  if (K > 0) return;\n"))
    return out

if __name__ == "__main__":
    out = Path(sys.argv[1]); rows = []
    for f in sys.argv[2:]:
        g = Genome.from_dict(json.load(open(f))[0])
        for name, v in ablations(g).items():
            render(v)
            p = out / f"{g.id[:8]}-{name}.json"; p.write_text(json.dumps(v.to_dict(), indent=1)); rows.append(str(p))
    print("\n".join(rows))
