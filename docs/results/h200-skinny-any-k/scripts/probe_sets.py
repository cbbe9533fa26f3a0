"""Session 43: the cost of making rotation sets at 5x3x33 one by one (as before) and in one batch."""
import random, time, torch
from evaluator.worker_inputs import Problem, make_set, make_set_batch
from evaluator.timing_stats import rotation_set_count
p = Problem(5, 3, 33)
l2 = torch.cuda.get_device_properties(0).L2_cache_size
n_uncapped = -(-3 * l2 // p.set_bytes)
print(f"L2 {l2} B, set {p.set_bytes} B: {n_uncapped} sets for 3 x L2 before the cap, {rotation_set_count(l2, p.set_bytes, 3.0)} now")
rng = random.Random(0)
t = time.perf_counter(); s = [make_set(torch, p, rng.randrange(1 << 30), True) for _ in range(5000)]; torch.cuda.synchronize()
dt = time.perf_counter() - t; del s
print(f"one by one: 5000 sets {dt:.2f} s -> {dt / 5000 * n_uncapped:.0f} s for {n_uncapped}")
t = time.perf_counter(); s = make_set_batch(torch, p, 65536, 1, True); dt = time.perf_counter() - t
print(f"one batch: 65536 sets {dt:.2f} s")
