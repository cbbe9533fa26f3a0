"""A patch that does not compile, through the whole path with a real nvcc (marked `nvcc`): the
scripted model's llm_patch answer passes the safety check, its build fails, the failure (with the
compiler's own message) is credited to llm_patch's arm, and llm_fix gets the failed kernel and an
excerpt of its log, answers with a repair, and the repaired kernel builds."""

from __future__ import annotations

import json
import sqlite3

import pytest

from engine_helpers import small_config
from evaluator.compile import Compiler
from evaluator.pipeline import build_failure
from evaluator.simulator import SimulatedEvaluator
from experiments.campaign import create_campaign, run_campaign
from experiments.schema import parse_campaign
from scripted_llm_server import ScriptedServer

pytestmark = pytest.mark.nvcc

SHAPE = "16x4096x4096"
FIRST = "// X: R x K (streamed), Y: S x K (small). out(r, s) goes to C[s * ldc + r] (X = W) or C[r * ldc + s] (X = A)."
BROKEN_LINE = "static int broken_on_purpose = this_name_does_not_exist;"
BREAK = f"kernel\n<<<<<<< SEARCH\n{FIRST}\n=======\n{FIRST}\n{BROKEN_LINE}\n>>>>>>> REPLACE\n"
REPAIR = f"kernel\n<<<<<<< SEARCH\n{BROKEN_LINE}\n=======\n>>>>>>> REPLACE\n"


class Silent:
    def update(self, rows, simulated=None, evaluator=None):
        pass


class BuildPatched(SimulatedEvaluator):
    """The simulator, except that a patched kernel is really built first (a failed build is the
    measurement, with its log excerpt, as on a GPU)."""

    def __init__(self, cache_dir, **kw):
        super().__init__(**kw)
        self.compiler = Compiler.default(cache_dir)
        self.built: list[tuple[str, bool]] = []

    def evaluate(self, genomes, problem):
        out = []
        for g in genomes:
            if g.patches:
                build = self.compiler.build(g)
                self.built.append((g.id, build.ok))
                if not build.ok:
                    out.append(build_failure(g, problem, build))
                    continue
            out.extend(super().evaluate([g], problem))
        return out


def answer(body):
    prompt = body["messages"][-1]["content"]
    if "FAILED" in prompt or "failed" in prompt.split("\n", 3)[0].lower() or BROKEN_LINE in prompt:
        return {"content": REPAIR}
    return {"content": BREAK}


def test_a_patch_that_does_not_compile_is_credited_to_its_arm_and_fixed(tmp_path, kernel_cache):
    with ScriptedServer([answer]) as server:
        data = small_config(
            shapes=[SHAPE], families=["skinny_mma"], budget={"evaluations_per_shape": 8},
            population={"size": 3, "islands": 1, "offspring": 2, "seed_fraction": 1.0},
            operators=[{"name": "llm_patch", "model": "scripted", "params": {"blocks": ["kernel"]}},
                       {"name": "llm_fix", "model": "scripted", "prior": 2.0}],
            llm={"concurrency": 1, "providers": [{"name": "scripted", "kind": "openai", "model": "smol",
                                                  "base_url": server.base_url,
                                                  "options": {"max_retries": 0, "timeout_s": 30}}]})
        folder = tmp_path / "c"
        config = parse_campaign(data, base_dir=tmp_path)
        create_campaign(config, folder)
        evaluator = BuildPatched(kernel_cache)
        run_campaign(folder, evaluator=evaluator, progress=Silent())
    conn = sqlite3.connect(str(folder / "campaign.db"))
    rows = conn.execute("SELECT p.operator, p.arm, e.status, e.reason, e.log FROM proposals p JOIN evaluations e "
                        "ON e.genome_id = p.genome_id WHERE p.operator IN ('llm_patch', 'llm_fix')").fetchall()
    broken = [r for r in rows if r[0] == "llm_patch"]
    assert broken and all(r[2] == "compile_failed" for r in broken), rows
    assert any("this_name_does_not_exist" in (r[4] or "") for r in broken), "the log excerpt lost the error"
    fixed = [r for r in rows if r[0] == "llm_fix"]
    assert fixed and any(r[2] == "ok" for r in fixed), rows
    assert any(ok for _, ok in evaluator.built) and any(not ok for _, ok in evaluator.built)
    # the fix prompt carried the compiler's message
    fix_prompts = [m for (m,) in conn.execute("SELECT messages FROM llm_calls") if BROKEN_LINE in m and "error" in m]
    assert fix_prompts
    # rewards: the failed child cost llm_patch's arm, the repaired one did not
    (stats,) = conn.execute("SELECT stats FROM policy_log ORDER BY seq DESC, round DESC LIMIT 1").fetchone()
    stats = json.loads(stats)
    assert stats["llm_patch@scripted"]["pulls"] >= 1 and stats["llm_patch@scripted"]["mean_reward"] < 0
    assert stats["llm_fix@scripted"]["mean_reward"] > stats["llm_patch@scripted"]["mean_reward"]
