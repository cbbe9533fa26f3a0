"""`evogemm prebuild CAMPAIGN.yaml`: build a campaign's first-round kernels before it runs.

A GPU campaign's first round of each shape times seeds: the hall-of-fame genomes of `seed_from`
runs and the families' hand-picked seeds. Which ones does not depend on any measurement, so the
same campaign run on the analytic simulator (seconds, no GPU) proposes the same first rounds. This
command does that in a scratch folder, then builds those kernels into the kernel cache with the
local nvcc: a GPU machine that gets the cache (EVOGEMM_CACHE) spends its time timing, not
compiling. Later rounds depend on the measurements and are not built ahead.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from genome import Genome


def first_round_genomes(campaign: "str | Path") -> list[tuple[str, Genome]]:
    """(shape, genome) of every first-round proposal of `campaign`, shape by shape, as the campaign
    run on the simulator (no wall budget) proposes them."""
    from experiments.schema import load_campaign
    config = load_campaign(campaign, {"evaluator.backend": "simulator", "budget.wall_seconds": None})
    return simulated_proposals(config, first_round_only=True)


def simulated_proposals(config: Any, first_round_only: bool = True) -> list[tuple[str, Genome]]:
    """(shape, genome) of the proposals of the campaign `config` (its evaluator the simulator) run in a
    scratch folder, in proposal order: the first round's only, or all of them."""
    from experiments.campaign import create_campaign, run_campaign
    from experiments.progress import SilentProgress
    with tempfile.TemporaryDirectory(prefix="evogemm-prebuild-") as tmp:
        folder = Path(tmp) / "campaign"
        create_campaign(config, folder)
        run_campaign(folder, progress=SilentProgress(), plots=False)
        conn = sqlite3.connect(str(folder / "campaign.db"))
        try:
            rows = conn.execute("SELECT p.problem, g.json FROM proposals p JOIN genomes g ON g.id = p.genome_id "
                                + ("WHERE p.round = 0 " if first_round_only else "") + "ORDER BY p.seq").fetchall()
        finally:
            conn.close()
    return [(problem, Genome.from_json(js)) for problem, js in rows]


def cmd_prebuild(args: argparse.Namespace) -> int:
    from evaluator.compile import Compiler
    from experiments.campaign_cli import check_runs_something, load_campaign_file
    check_runs_something(args.campaign, load_campaign_file(args.campaign))
    t0 = time.monotonic()
    pairs = first_round_genomes(args.campaign)
    compiler = Compiler.default(args.cache, jobs=args.jobs) if args.jobs else Compiler.default(args.cache)
    by_key: dict[str, Genome] = {}
    for _, genome in pairs:
        by_key.setdefault(compiler.key_of(genome), genome)
    todo = [g for g in by_key.values() if not compiler.cached(g)]
    shapes = len({p for p, _ in pairs})
    print(f"{len(pairs)} first-round genomes over {shapes} shapes (the campaign on the simulator, "
          f"{time.monotonic() - t0:.0f} s): {len(by_key)} builds, {len(by_key) - len(todo)} in {compiler.cache_dir}, "
          f"{len(todo)} to build", flush=True)
    if args.list:
        for genome in todo:
            print(f"  {compiler.key_of(genome)} {genome.family} {genome.short()}")
    if args.list or not todo:
        return 0
    print(f"building {len(todo)} with {compiler.pool_size()} at a time", flush=True)

    def progress(done: int, total: int, result) -> None:
        state = "ok" if result.ok else f"FAILED: {result.reason}"
        print(f"  [{done}/{total}] {result.genome_id[:8]} {result.seconds:.0f} s {state}", flush=True)
    results = compiler.build_many(todo, progress=progress)
    compiler.close()
    failed = [r for r in results if not r.ok]
    print(f"{len(results) - len(failed)} built, {len(failed)} failed, {time.monotonic() - t0:.0f} s in all")
    return 1 if failed else 0


def register(sub: argparse._SubParsersAction) -> None:
    from experiments.cli import add_command
    p = add_command(sub, "prebuild", "build a campaign's first-round kernels (its seeds) into the kernel cache, "
                                     "found by running it on the simulator")
    p.add_argument("campaign", help="campaign YAML file")
    p.add_argument("--cache", help="kernel cache directory (default $EVOGEMM_CACHE or ~/.cache/evogemm/kernels)")
    p.add_argument("--jobs", type=int, help="parallel nvcc builds (default: by cores and memory)")
    p.add_argument("--list", action="store_true", help="list what would be built, build nothing")
    p.set_defaults(func=cmd_prebuild)
