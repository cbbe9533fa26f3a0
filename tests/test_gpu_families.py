"""Every seed of every new family, on shapes of its domain, passes the gate on a real Hopper GPU
(pytest -m gpu; skips cleanly without one)."""

import pytest

from genome import Problem
from templates import family_registry

pytestmark = pytest.mark.gpu
QUICK = {"repeats": 3, "warmup_s": 0.2, "server_samples": 3, "call_samples": 5, "autotune_algos": 8}
FAMILIES = family_registry()


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory):
    from evaluator.gpu import GpuEvaluator
    ev = GpuEvaluator(timing=QUICK, silence_timeout_s=30, log_dir=tmp_path_factory.mktemp("gpulog"))
    yield ev
    ev.close()


FAMILY_SHAPES = [
    ("skinny_mma", "16x4096x4096"), ("skinny_mma", "1x8191x4096"), ("skinny_mma", "8192x64x512"),
    ("skinny_mma", "64x64x4096"),
    ("sm80_cutlass", "1000x1000x999"), ("sm80_cutlass", "512x512x2048"), ("sm80_cutlass", "128x128x128"),
    ("sm90_padded", "1023x1023x1024"), ("sm90_padded", "1000x1000x999"), ("sm90_padded", "1536x6002x2500"),
    ("sm90_splitk", "512x512x4096"), ("sm90_splitk", "256x1024x8192"),
    ("sm90_cpasync", "1000x1000x1000"), ("sm90_cpasync", "1536x6002x2500"), ("sm90_cpasync", "264x1000x520"),
    # M and N unequal and not multiples of the tiles, so a kernel that mixed up the two would fail the gate
    ("sm90_swapab", "1000x2056x512"), ("sm90_swapab", "136x4096x1024"),
]


@pytest.mark.parametrize("family,shape", FAMILY_SHAPES)
def test_every_seed_passes_the_gate_in_its_familys_domain(evaluator, family, shape):
    fam = FAMILIES.resolve(family)
    problem = Problem.parse(shape)
    genomes = [g for _, g in fam.seeds() if fam.space.is_valid(g, problem)]
    assert genomes, f"no seed of {family} fits {shape}"
    results = evaluator.evaluate(genomes, problem)
    failed = [(g.short(), m.status, m.reason) for g, m in zip(genomes, results) if not m.ok]
    for g, m in zip(genomes, results):
        print(family, shape, g.short(), m.status, m.rel_error, m.acc_error, m.time_us)
    assert not failed, failed
    assert all(m.rel_error <= 1e-3 and m.acc_error is not None for m in results)
