"""evaluator: compile (nvcc, cache, pool) -> verify -> time; baselines; GPU workers; simulator."""
