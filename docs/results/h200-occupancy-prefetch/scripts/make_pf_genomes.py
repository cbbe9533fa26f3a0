"""Patched genomes: each base genome's `mainloop` block with the prefetching collective (AHEAD k-tiles)."""
import sys
from pathlib import Path
from genome.genome import Genome, Patch
from templates.render import block_source, render

INC = Path("/work/exp/pf/prefetch_mainloop.inc").read_text()
out = Path(sys.argv[1])
for spec in sys.argv[2:]:
    path, aheads = spec.split("@")
    base = Genome.load(path)
    block = block_source(base, "mainloop")
    key = "using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<"
    assert key in block, path
    for ahead in (int(a) for a in aheads.split(",")):
        code = block.replace(key, "using BaseMainloop = typename cutlass::gemm::collective::CollectiveBuilder<")
        inc = INC.replace("#define EVOGEMM_L2_PREFETCH_AHEAD 8", f"#define EVOGEMM_L2_PREFETCH_AHEAD {ahead}")
        inc = inc.replace("#ifndef EVOGEMM_L2_PREFETCH_AHEAD\n", "").replace("\n#endif\n", "\n", 1)
        inc = inc.replace("#define EVOGEMM_L2_PREFETCH_AHEAD", "#undef EVOGEMM_L2_PREFETCH_AHEAD\n#define EVOGEMM_L2_PREFETCH_AHEAD")
        g = base.with_patch(Patch("mainloop", code + "\n" + inc, note=f"L2 prefetch {ahead} k-tiles past the pipeline"))
        render(g)
        name = f"pf{ahead}-{Path(path).stem}-{g.id[:8]}.json"
        g.save(out / name)
        print(name)
