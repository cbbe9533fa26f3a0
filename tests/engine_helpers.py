"""Helpers for the engine, campaign, resume and database tests (not a conftest: plain imports).

`FakeEvaluator` is a tiny deterministic evaluator: time is a smooth function of the tile shape and
a few knobs plus per-(genome, problem) noise from a hash, and about `fail_rate` of genomes fail
with a compile error. It logs every (genome id, problem) it is asked to evaluate, so tests can
prove nothing is measured twice. `SlowSimulator` is the analytic simulator with a delay per
genome, so that a subprocess campaign lives long enough to be killed mid-run.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Sequence

from evaluator.api import STATUS_COMPILE_FAILED, STATUS_OK, BaselineSet, Measurement, Timing
from genome import Genome, Problem

REPO = Path(__file__).resolve().parent.parent


def _unit(*parts: Any) -> float:
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") / 2 ** 64


class FakeEvaluator:
    OPTIONS = ("seed", "noise", "fail_rate")
    simulated = True

    def __init__(self, seed: int = 0, noise: float = 0.02, fail_rate: float = 0.1, fail_ids: Sequence[str] = (),
                 delay: float = 0.0, fail_tile_k: "int | None" = None):
        self.seed, self.noise, self.fail_rate, self.delay = seed, noise, fail_rate, delay
        self.fail_tile_k = fail_tile_k
        self.fail_ids = set(fail_ids)
        self.calls: list[tuple[str, str]] = []
        self.baseline_calls: list[str] = []
        self.closed = False

    def describe(self) -> str:
        return "fake evaluator (tests; simulated)"

    def ideal_us(self, genome: Genome, problem: Problem) -> float:
        p = genome.param_dict
        tm, tn, tk = p.get("tile_m", 128), p.get("tile_n", 128), p.get("tile_k", 64)
        tiles = math.ceil(problem.m / tm) * math.ceil(problem.n / tn)
        waves = math.ceil(tiles / 132)
        per_tile = (tm * tn * problem.k) / 4.0e6
        eff = 1.0 + 0.15 * abs(math.log2(tk / 64)) + (0.1 if p.get("schedule") == "pingpong" else 0.0)
        eff *= 1.0 + 0.05 * (p.get("swizzle", 1) != 2) + 0.03 * (p.get("raster") != "along_n")
        return 2.0 + waves * per_tile * eff

    def baselines(self, problem: Problem) -> BaselineSet:
        self.baseline_calls.append(problem.name)
        us = 2.0 + problem.flops / 6.0e8
        return BaselineSet(problem=problem.name, device={"cublas": Timing(us * 1.05, us, us * 1.1, 5),
                                                         "cublaslt": Timing(us, us, us * 1.1, 5)}, simulated=True)

    def evaluate(self, genomes: Sequence[Genome], problem: Problem) -> list[Measurement]:
        out = []
        if self.delay:
            time.sleep(self.delay * len(genomes))
        for g in genomes:
            self.calls.append((g.id, problem.name))
            if (_unit(self.seed, "fail", g.id) < self.fail_rate or g.id in self.fail_ids
                    or (self.fail_tile_k is not None and g.get("tile_k") == self.fail_tile_k)):
                out.append(Measurement(g.id, problem.name, STATUS_COMPILE_FAILED, reason="fake compile error",
                                       simulated=True))
                continue
            t = self.ideal_us(g, problem) * math.exp(self.noise * (2 * _unit(self.seed, g.id, problem.name) - 1))
            out.append(Measurement(g.id, problem.name, STATUS_OK, device=Timing(t, t * 0.99, t * 1.01, 5),
                                   rel_error=2e-4, simulated=True, gpu_seconds=0.001))
        return out

    def close(self) -> None:
        self.closed = True


class RepeatingStrategy:
    """A strategy plug-in that keeps proposing genomes from a small pool, repeats included (to test
    dedup): ask(n) cycles through `pool_size` genomes sampled once from the space."""

    def __init__(self, space: Any, problem: Problem, seed: int, pool_size: int = 5):
        import random
        rng = random.Random(seed)
        self.pool: list[Genome] = []
        while len(self.pool) < pool_size:
            g = space.sample(rng)
            if g.id not in {p.id for p in self.pool} and space.is_valid(g, problem):
                self.pool.append(g)
        self.cursor = 0
        self.told: list[tuple[str, str]] = []

    def ask(self, n: int) -> list[Any]:
        from genome import Offspring
        out = []
        for _ in range(n):
            out.append(Offspring(self.pool[self.cursor % len(self.pool)], "repeat", ()))
            self.cursor += 1
        return out

    def tell(self, offspring: Any, measurement: Measurement) -> None:
        self.told.append((offspring.genome.id, measurement.status))

    def state_dict(self) -> dict:
        return {"cursor": self.cursor}

    def load_state_dict(self, state: dict) -> None:
        self.cursor = state["cursor"]


class BigStep:
    """An operator plug-in (import path in a campaign): mutate 2 parameters, under its own name."""

    arity = 1

    def __init__(self, name: str = "big_step"):
        self.name = name

    def __call__(self, parents: Sequence[Genome], ctx: Any) -> list[Any]:
        from genome import Offspring
        child = ctx.space.mutate(parents[0], ctx.rng, n_changes=2)
        return [Offspring(child, self.name, (parents[0].id,), note="two steps")]


class BrokenOp:
    """An operator whose children always fail on FakeEvaluator(fail_tile_k=32): it mutates, then
    forces tile_k = 32 (like an LLM operator whose patches never compile)."""

    arity = 1

    def __init__(self, name: str = "broken"):
        self.name = name

    def __call__(self, parents: Sequence[Genome], ctx: Any) -> list[Any]:
        from genome import Offspring
        child = ctx.space.mutate(parents[0], ctx.rng).with_params(tile_k=32)
        return [Offspring(child, self.name, (parents[0].id,))]


class SlowSimulator:
    """An evaluator plug-in (import path in a campaign): the analytic simulator, sleeping `delay`
    seconds per evaluated genome."""

    OPTIONS = ("seed", "noise", "calibration", "device", "delay")
    simulated = True

    def __init__(self, delay: float = 0.02, families: Any = None, **options: Any):
        from evaluator.simulator import SimulatedEvaluator
        self.delay = delay
        self.inner = SimulatedEvaluator(families=families, **options)

    def describe(self) -> str:
        return self.inner.describe()

    def baselines(self, problem: Problem) -> BaselineSet:
        return self.inner.baselines(problem)

    def evaluate(self, genomes: Sequence[Genome], problem: Problem) -> list[Measurement]:
        time.sleep(self.delay * len(genomes))
        return self.inner.evaluate(genomes, problem)

    def close(self) -> None:
        self.inner.close()


def small_config(**over: Any) -> dict[str, Any]:
    """A small campaign dict (fake evaluator unless `evaluator` is given)."""
    data: dict[str, Any] = {
        "name": "t",
        "seed": 7,
        "shapes": ["1024x1024x1024", "2048x1024x1024", "128x4096x4096"],
        "budget": {"evaluations_per_shape": 40},
        "population": {"size": 6, "islands": 2, "offspring": 3, "migration_interval": 2, "migration_size": 1,
                       "elite": 1},
        "evaluator": {"backend": "engine_helpers:FakeEvaluator"},
        "selection": {"policy": "thompson"},
    }
    for key, value in over.items():
        data[key] = value
    return data


def halls_of_fame(folder: Path) -> dict[str, list]:
    """Each shape's hall-of-fame file as (genome id, device median) pairs."""
    return {path.stem: [(e["genome"]["id"], e["measurement"]["device"]["median_us"])
                        for e in json.loads(path.read_text())]
            for path in sorted((folder / "hall_of_fame").glob("*.json"))}


def fingerprint(folder: "str | Path", per_shape: bool = False) -> dict[str, Any]:
    """Everything a resumed campaign must share with an uninterrupted one.

    `per_shape`: each shape's proposals in their own order, without the global proposal numbers
    (they interleave in any order when shapes run side by side), and without the baselines."""
    folder = Path(folder)
    seq = "" if per_shape else "seq, "
    conn = sqlite3.connect(str(folder / "campaign.db"))
    try:
        evaluated = sorted(conn.execute("SELECT genome_id, problem, status, device_us FROM evaluations").fetchall())
        proposals = conn.execute(f"SELECT {seq}problem, round, island, genome_id, operator, arm, parent_ids "
                                 f"FROM proposals ORDER BY {'problem, seq' if per_shape else 'seq'}").fetchall()
        policy_log = conn.execute(f"SELECT problem, round, {seq}probabilities, stats, state FROM policy_log "
                                  "ORDER BY problem, round").fetchall()
        shapes = conn.execute("SELECT problem, status, allocation, reason FROM shapes ORDER BY idx").fetchall()
        baselines = conn.execute("SELECT problem, best_name, best_us FROM baselines ORDER BY problem").fetchall()
    finally:
        conn.close()
    policy = json.loads((folder / "policy.json").read_text()) if (folder / "policy.json").exists() else None
    if per_shape:
        return {"evaluated": evaluated, "proposals": proposals, "policy_log": policy_log, "shapes": shapes,
                "hall_of_fame": halls_of_fame(folder), "final_policy": policy["final"],
                "policies": policy["shapes"]}
    return {"evaluated": evaluated, "proposals": proposals, "policy_log": policy_log, "shapes": shapes,
            "baselines": baselines, "hall_of_fame": halls_of_fame(folder), "policy": policy,
            "counters": {"evaluations": len(evaluated), "proposals": len(proposals)}}


def db_count(folder: "str | Path", table: str = "evaluations") -> int:
    path = Path(folder) / "campaign.db"
    if not path.exists():
        return -1
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
        try:
            return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return -1


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("COLUMNS", "160")
    return env
