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


def test_the_prebuild_list_holds_the_mirrors_of_the_vendor_picks_recorded_at_the_mirror_tests_shapes():
    """The vendor-mirror gate test builds mirrors of what the GPU's cuBLASLt picks; the picks recorded so far (H100
    and H200 benches under docs/results/) are prebuilt, so that the test finds them in the carried cache."""
    import test_gpu_families
    from genome import Problem
    mirrors = test_gpu_families.recorded_vendor_mirror_genomes()
    listed = {g.id for g in gpu_prebuild.gpu_test_genomes()}
    assert mirrors and {g.id for g in mirrors} <= listed
    for shape in test_gpu_families.VENDOR_SHAPES:   # each shape has its picks recorded, two mirrors at least
        problem = Problem.parse(shape)
        valid = [g for g in mirrors if test_gpu_families.FAMILIES.resolve(g.family).space.is_valid(g, problem)]
        assert len(valid) >= 2, shape
