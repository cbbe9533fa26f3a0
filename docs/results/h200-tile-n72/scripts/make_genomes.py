"""sm90_lean 128x72 tiles (the vendor's nvjet 72x128 at 1000^3), as patched genomes of the sm90_lean 128x80 twin
(session 39, for a device call): `includes` + the B-padded collective (pad_b_collective.hpp: CUTLASS's sm90 TMA
mainloop with B's stage buffer padded to 80 rows and TMA boxes of 80 rows every 72), `tile_config` with tile N 72,
`mainloop` the explicit CollectiveMma with that policy and 7 stages. Run from the repository root."""
import json, re, sys
from pathlib import Path
from genome import Genome, Patch
from templates import get_space
from templates.render import block_source

HERE = Path(__file__).resolve().parent
header = (HERE / "pad_b_collective.hpp").read_text().replace("#pragma once\n", "")
MAINLOOP = '''namespace builder = cutlass::gemm::collective::detail;
constexpr auto GmmaMajorA = builder::gmma_ss_tag_to_major_A<ElementA, LayoutA>();
constexpr auto GmmaMajorB = builder::gmma_ss_tag_to_major_B<ElementB, LayoutB>();
using TiledMma = decltype(cute::make_tiled_mma(cute::GMMA::ss_op_selector<
    ElementA, ElementB, ElementAccumulator, TileShape, GmmaMajorA, GmmaMajorB>()));
using SmemLayoutAtomA = decltype(builder::ss_smem_selector<GmmaMajorA, ElementA, decltype(cute::get<0>(TileShape{})), decltype(cute::get<2>(TileShape{}))>());
using SmemLayoutAtomB = decltype(builder::ss_smem_selector<GmmaMajorB, ElementB, decltype(cute::get<1>(TileShape{})), decltype(cute::get<2>(TileShape{}))>());
// evogemm experiment: tile N 72 through the B-padded collective (the includes block)
using CollectiveMainloop = cutlass::gemm::collective::CollectiveMma<
    evogemm_kernel_pad::MainloopSm90TmaGmmaWarpSpecializedPadB<STAGES, ClusterShape, KernelSchedule>,
    TileShape,
    ElementA, cutlass::gemm::TagToStrideA_t<LayoutA>,
    ElementB, cutlass::gemm::TagToStrideB_t<LayoutB>,
    TiledMma,
    decltype(builder::sm90_cluster_shape_to_tma_atom(shape<1>(ClusterShape{}))), SmemLayoutAtomA, void, cute::identity,
    decltype(builder::sm90_cluster_shape_to_tma_atom(shape<0>(ClusterShape{}))), SmemLayoutAtomB, void, cute::identity
  >;
'''
space = get_space("sm90_lean")
out = []
for cm, cn in ((1, 1), (2, 1), (1, 2), (2, 2), (1, 4), (2, 4), (4, 1)):
    stages = 7
    base = space.canonical(dict(space.default_params(), tile_m=128, tile_n=80, tile_k=64, cluster_m=cm, cluster_n=cn,
                                stages=stages))
    twin = Genome.make("sm90_lean", base)
    tile = block_source(twin, "tile_config").replace("Shape<_128, _80, _64>", "Shape<_128, _72, _64>")
    assert "_72" in tile
    patches = [Patch("includes", block_source(twin, "includes") + "\n" + header),
               Patch("tile_config", tile),
               Patch("mainloop", MAINLOOP.replace("STAGES", str(stages)))]
    g = Genome.make("sm90_lean", base, patches)
    d = g.to_dict()
    for p in d["patches"]:
        p["note"] = f"tile N 72 (B stage padded to 80 rows), cluster {cm}x{cn}"
    name = f"lean72_128x72_c{cm}x{cn}_s{stages}-{g.id[:8]}.json"
    (HERE / "genomes" / name).write_text(json.dumps(d, indent=1))
    out.append(name)
print("\n".join(out))
