"""cluster_grid (space revision 5): how many clusters a persistent TMA kernel launches.

Left to itself (cluster_grid cutlass, every genome before revision 5) CUTLASS's persistent scheduler estimates the
clusters that fit from the SM count with GPCs of 18 SMs: 29 clusters of 4 and 14 of 8 on 132 SMs, where an H200
runs 30 and 15 (docs/results/h200-cluster-capacity). With cluster_grid occupancy the kernel asks
cudaOccupancyMaxActiveClusters once per device and hands CUTLASS the count. Here: the space, the source, the
model, and that older campaigns draw as before. That the kernels pass the gate on an H200 is the gpu tests' part
(test_gpu_families.py), whether they are faster `evogemm bench`'s.
"""

import random
from dataclasses import replace

import pytest

from genome import Genome
from templates import get_space, render

SPACE = get_space("sm90_cutlass")


def genome(family="sm90_cutlass", **changes):
    space = get_space(family)
    params = dict(space.default_params(), schedule="cooperative", tile_m=256, tile_n=192, tile_k=64,
                  cluster_m=2, cluster_n=2)
    params.update(changes)
    return space.validate(Genome.make(family, space.canonical(params)))


def test_it_is_named_only_where_it_changes_the_grid():
    default = genome()
    assert "cluster_grid" not in default.param_dict                          # ids and builds as before
    asked = genome(cluster_grid="occupancy")
    assert asked.param_dict["cluster_grid"] == "occupancy" and asked.id != default.id
    # clusters of 1 or 2: CUTLASS's estimate is the device's 132 CTAs; the ws schedule is not persistent
    assert genome(cluster_m=2, cluster_n=1, cluster_grid="occupancy").id == genome(cluster_m=2, cluster_n=1).id
    assert genome("sm90_padded", schedule="ws", tile_m=128, tile_n=128, cluster_grid="occupancy").id == \
        genome("sm90_padded", schedule="ws", tile_m=128, tile_n=128).id
    for family in ("sm90_swapab", "sm90_splitk", "sm90_padded"):
        assert get_space(family).spec("cluster_grid").choices == ("cutlass", "occupancy"), family
    for family in ("sm90_lean", "sm90_cpasync"):       # one CTA a tile, or no clusters
        assert get_space(family).spec("cluster_grid").choices == ("cutlass",), family


def test_its_source_asks_the_device_and_hands_cutlass_the_count():
    plain = render(genome()).source
    assert "max_active_clusters" not in plain and "cudaOccupancyMaxActiveClusters" not in plain
    asked = render(genome(cluster_grid="occupancy")).source
    assert "hw_info.max_active_clusters = evogemm_host::max_active_clusters(device);" in asked
    assert asked.count("int max_active_clusters(int device)") == 2                  # declared, then defined
    assert "cudaOccupancyMaxActiveClusters(&n, (void const*)cutlass::device_kernel<KernelOp>" in asked
    assert "kSmemBytes, nullptr);" in asked                    # with the kernel's dynamic shared memory
    split = render(genome("sm90_splitk", schedule="pingpong", tile_m=64, tile_n=128, cluster_m=2, cluster_n=2,
                          ksplit=4, cluster_grid="occupancy")).source
    assert "hw_info.max_active_clusters" in split          # its arguments block extends sm90_cutlass's


def test_the_model_gives_it_the_clusters_the_device_runs():
    """At 5000x1000x3000 the 256x192 cooperative tile makes 120 tiles: 30 clusters of 4, 15 of 8. CUTLASS's
    estimate runs the last cluster's tiles as a second round (115-118 us on the H200 against 60.5 us for the
    pair: docs/results/h200-cluster-capacity/benchKp3); the device's count runs them in one."""
    from evaluator.simulator import simulate_time_us
    pair = simulate_time_us(genome(cluster_m=2, cluster_n=1), "5000x1000x3000")
    for cm, cn in ((2, 2), (4, 1), (4, 2)):
        estimated = simulate_time_us(genome(cluster_m=cm, cluster_n=cn), "5000x1000x3000")
        asked = simulate_time_us(genome(cluster_m=cm, cluster_n=cn, cluster_grid="occupancy"), "5000x1000x3000")
        assert estimated > 1.6 * pair and asked < 1.05 * pair, (cm, cn)


# sha1 of the ids (and the next random number) that 12 seeds' sample, mutate(n_changes=2) and crossover drew from
# each family's space with the code before cluster_grid (commit e211120)
REVISION_4_DRAWS = {"sm90_cutlass": "d1fe12958dbd4717a886b502975d2bd5c6a389d6",
                    "sm90_splitk": "76e99448434cec1cf57fd30197b875aa46f63b6e",
                    "sm90_swapab": "fb5709f421c810572de30866f899204c7348e4ba",
                    "sm90_padded": "62cd239bbe00bdc34ac13bc357f25f77506280e7"}


@pytest.mark.parametrize("family", sorted(REVISION_4_DRAWS))
def test_a_space_as_of_revision_4_draws_what_the_code_before_it_drew(family):
    import hashlib
    space, ids = get_space(family).as_of(4), []
    for seed in range(12):
        rng = random.Random(seed)
        x = space.sample(rng)
        y = space.mutate(x, rng, n_changes=2)
        z = space.crossover(y, space.sample(rng), rng)
        ids += [x.id, y.id, z.id, f"{rng.random():.12f}"]
    assert hashlib.sha1(" ".join(ids).encode()).hexdigest() == REVISION_4_DRAWS[family]


def test_a_campaign_of_revision_4_draws_as_before_it():
    """A space as of revision 4 is the space before cluster_grid: the same samples, mutations and crossovers
    from the same seeds (so such a campaign's resume by replay stays as it was); the current space reaches
    cluster_grid occupancy through its search moves."""
    pinned = SPACE.as_of(4)
    before = replace(pinned, params=tuple(p for p in pinned.params if p.name != "cluster_grid"))
    assert pinned.spec("cluster_grid").choices == ("cutlass",)
    for seed in range(40):
        a, b = random.Random(seed), random.Random(seed)
        x, y = pinned.sample(a), before.sample(b)
        assert x == y
        assert pinned.mutate(x, a, n_changes=2) == before.mutate(y, b, n_changes=2)
        assert pinned.crossover(x, pinned.sample(a), a) == before.crossover(y, before.sample(b), b)
        assert a.random() == b.random()
    rng = random.Random(5)
    parent = genome()
    seen = {SPACE.params_of(SPACE.mutate(parent, rng, n_changes=2))["cluster_grid"] for _ in range(300)}
    assert seen == {"cutlass", "occupancy"}


@pytest.mark.nvcc
def test_a_cluster_grid_occupancy_kernel_builds(kernel_cache):
    from evaluator.compile import Compiler
    small = genome(schedule="pingpong", tile_m=64, tile_n=64, cluster_grid="occupancy")
    built = Compiler.default(kernel_cache).build(small)
    assert built.ok, built.reason
    assert built.spill_bytes == 0
