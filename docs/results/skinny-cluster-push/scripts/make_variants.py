"""skinny_mma latency variants as patched genomes of the records' kernels at the latency-bound shapes.
peer: the cluster reduction's peer reads all issued before any add (unrolled to 15 peers, predicated; the peer's
rank by a mask, csplit being a power of two), instead of a runtime loop that reads one peer at a time.
nocl: the launch sets no cluster attribute where csplit == 1 (a plain launch).
Writes <out>/<variant>/<id>.json for base, peer, nocl, peer+nocl."""
import json, sys
from pathlib import Path
from genome import Genome, Patch
from templates.render import block_source, render

OLD_PEER = """    float v = red[idx];
    for (int q = 1; q < csplit; ++q) {
      const float* peer = cluster.map_shared_rank(red, (rank + q) % csplit);
      v += peer[idx];
    }"""
NEW_PEER = """    float v = red[idx];
    float pv[15];
#pragma unroll
    for (int q = 1; q < 16; ++q)   // every peer's read in flight before the first add
      pv[q - 1] = q < csplit ? cluster.map_shared_rank(red, (rank + q) & (csplit - 1))[idx] : 0.f;
#pragma unroll
    for (int q = 1; q < 16; ++q) v += pv[q - 1];"""
OLD_LAUNCH = """  if (cudaLaunchKernelEx(&cfg, kernel, X, Y, static_cast<__half*>(C), R, S, K, N, (int)x_is_a, csplit)
      != cudaSuccess)
    return 4;"""
NEW_LAUNCH = """  if (csplit == 1) {   // no cluster: a plain launch
    kernel<<<cfg.gridDim, cfg.blockDim, kSmemBytes, stream>>>(X, Y, static_cast<__half*>(C), R, S, K, N, (int)x_is_a, 1);
    return 0;
  }
  if (cudaLaunchKernelEx(&cfg, kernel, X, Y, static_cast<__half*>(C), R, S, K, N, (int)x_is_a, csplit)
      != cudaSuccess)
    return 4;"""

def variants(g: Genome) -> dict[str, Genome]:
    kern, launch = block_source(g, "kernel"), block_source(g, "launch")
    assert OLD_PEER in kern and OLD_LAUNCH in launch, g.id
    pk = Patch("kernel", kern.replace(OLD_PEER, NEW_PEER), note="peer reads in flight together")
    pl = Patch("launch", launch.replace(OLD_LAUNCH, NEW_LAUNCH), note="no cluster attribute at csplit 1")
    out = {"base": g}
    for name, patches in (("peer", [pk]), ("nocl", [pl]), ("both", [pk, pl])):
        d = g.to_dict(); d.pop("id", None); d["patches"] = [p.to_dict() for p in patches]
        out[name] = Genome.from_dict(d)
    return out

if __name__ == "__main__":
    out = Path(sys.argv[1]); srcs = sys.argv[2:]
    seen = set()
    for f in srcs:
        for d in json.load(open(f)):
            g = Genome.from_dict(d)
            if g.family != "skinny_mma" or g.patches or g.id in seen: continue
            seen.add(g.id)
            for name, v in variants(g).items():
                render(v)   # validates
                (out / name).mkdir(parents=True, exist_ok=True)
                (out / name / f"{v.family}-{v.id[:8]}.json").write_text(json.dumps(v.to_dict(), indent=1))
                print(name, g.id[:8], "->", v.id[:8], json.dumps(dict(v.params) if hasattr(v,'params') else {}))
