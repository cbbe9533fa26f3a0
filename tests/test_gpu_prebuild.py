"""tests/gpu_prebuild.py lists what the gpu tests build, the short campaigns' kernels included (no GPU)."""

import gpu_prebuild
import test_gpu


def test_the_prebuild_list_holds_the_short_campaigns_seeds():
    listed = {g.id for g in gpu_prebuild.gpu_test_genomes()}
    proposed = gpu_prebuild.short_campaign_genomes()
    assert proposed and {g.id for g in proposed} <= listed
    # both campaigns' seeds: the second shape in flight starts from seeds of its own, not the first's hall
    families = {g.family for g in proposed}
    assert families == {"sm90_cutlass"}
    tiles = {(g.get("tile_m"), g.get("tile_n"), g.get("cluster_m"), g.get("cluster_n")) for g in proposed}
    assert len(tiles) >= 2 and len(test_gpu.IN_FLIGHT_SHAPES) == 2
