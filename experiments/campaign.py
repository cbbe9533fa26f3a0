"""A campaign folder: create, open (also after a crash), run / resume, and write the outputs.

Layout of a campaign folder::

    DIR/
      campaign.yaml              the campaign as it runs: resolved (explicit shapes, absolute paths,
                                 effective seed and backend); `evogemm run DIR/campaign.yaml` repeats it
      campaign.db                SQLite (WAL) database: config, genomes, proposals, evaluations,
                                 baselines, policy log, events; the source of truth (evolution/db.py)
      campaign.log               text log of every session (one line per round, shape and event)
      hall_of_fame/<MxNxK>.json  per shape, best first: [{genome, measurement, fitness, origin}]
      policy.json                selection-policy states: {"policy", "arms", "scope", "shapes":
                                 {shape: state}, "final": state}; `selection.warm_start` of a later
                                 campaign reads "final" from here (or this folder)
      report.md                  per shape: best genome, its time, against every baseline; every
                                 figure marked "simulated" when it came from the simulator

Policy scope: one policy per shape (a shape's operators may differ in worth), warm-started from the
previous shape's final state (weight `selection.warm_start_weight`), the first shape from
`selection.warm_start` if given. The per-round history is the `policy_log` table of the database.

Creation order makes a `kill -9` at any moment recoverable: campaign.yaml is written first
(atomically), then the database is initialised in one transaction; `open_campaign` initialises
the database from campaign.yaml when the first run died in between.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from evaluator.api import Evaluator

from .db import CampaignDB
from .engine import Engine, ShapeState
from .population import hall_of_fame_entries
from .progress import CampaignLog, LiveProgress
from .seeding import load_handpicked, read_seed_pool

CONFIG_FILE = "campaign.yaml"
DB_FILE = "campaign.db"
LOG_FILE = "campaign.log"
POLICY_FILE = "policy.json"
REPORT_FILE = "report.md"
HOF_DIR = "hall_of_fame"


class CampaignExists(RuntimeError):
    pass


class NotACampaign(RuntimeError):
    pass


def atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def default_output_dir(config: Any) -> Path:
    return Path(config.output_dir) if config.output_dir else Path("runs") / config.name


def load_policy_state(path: "str | Path") -> Any:
    """A policy state from policy.json (its "final" entry), a campaign folder, or a state file."""
    path = Path(path)
    if path.is_dir():
        if (path / POLICY_FILE).exists():
            path = path / POLICY_FILE
        elif (path / DB_FILE).exists():
            db = CampaignDB(path / DB_FILE, readonly=True)
            try:
                log = db.policy_log()
            finally:
                db.close()
            if not log:
                raise ValueError(f"{path} has no policy state yet")
            return log[-1]["state"]
    data = json.loads(path.read_text())
    if isinstance(data, Mapping) and "final" in data:
        return data["final"]
    return data


def create_campaign(config: Any, out_dir: "str | Path", source: "str | None" = None) -> Path:
    """Make the campaign folder: campaign.yaml, then the initialised database."""
    from experiments.schema import dump_campaign
    out = Path(out_dir)
    if (out / DB_FILE).exists() or (out / CONFIG_FILE).exists():
        raise CampaignExists(f"{out} already holds a campaign; continue it with `evogemm resume {out}` "
                             "or choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / CONFIG_FILE, dump_campaign(config, source))
    _initialise_db(out, config)
    return out


def _initialise_db(out: Path, config: Any) -> CampaignDB:
    db = CampaignDB(out / DB_FILE)
    if db.initialised():
        return db
    pool: dict[str, list[dict]] = {}
    for folder in config.seed_from:
        for problem, items in read_seed_pool(folder).items():
            pool.setdefault(problem, []).extend(items)
    for items in pool.values():
        items.sort(key=lambda e: (e.get("time_us") is None, e.get("time_us") or 0.0))
    warm = load_policy_state(config.selection.warm_start) if config.selection.warm_start else None
    extra = {
        "seed": config.seed,
        "name": config.name,
        "handpicked": load_handpicked() if config.population.handpicked else [],
        "seed_pool": pool,
        "warm_start_policy": warm,
        "argv": sys.argv,
    }
    db.initialise(config.resolved(), [p.name for p in config.problems], extra)
    return db


def open_campaign(folder: "str | Path") -> tuple[Any, CampaignDB]:
    """The config and database of a campaign folder (initialising the database if the first run
    died before it did)."""
    from experiments.schema import load_campaign, parse_campaign
    folder = Path(folder)
    db_path = folder / DB_FILE
    if db_path.exists():
        db = CampaignDB(db_path)
        data = db.get_meta("config")
        if data is not None:
            return parse_campaign(data, base_dir=folder, source=str(db_path), stored=True), db
        db.close()
    if (folder / CONFIG_FILE).exists():
        config = load_campaign(folder / CONFIG_FILE)
        return config, _initialise_db(folder, config)
    raise NotACampaign(f"{folder} is not a campaign folder (no {DB_FILE} or {CONFIG_FILE})")


@dataclass
class CampaignResult:
    folder: Path
    states: dict[str, ShapeState]
    simulated: "bool | None"
    evaluator: "str | None"


def run_campaign(folder: "str | Path", evaluator: "Evaluator | None" = None, console: Any = None,
                 live: "bool | None" = None, mode: str = "run", echo: bool = False,
                 progress: Any = None) -> CampaignResult:
    """Run a created campaign, or resume one: the engine replays what is recorded and goes on."""
    folder = Path(folder)
    config, db = open_campaign(folder)
    log = CampaignLog(folder / LOG_FILE, echo=sys.stderr if echo else None)
    db.start_session(mode)
    log(f"session {db.session}: {mode} campaign {config.name!r} (seed {config.seed}, strategy "
        f"{config.strategy.name}, policy {config.selection.policy}, {len(config.problems)} shapes) in {folder}")
    try:
        from templates import render as render_kernel

        def render(genome: Any) -> str:
            return render_kernel(genome).source
    except ImportError:  # pragma: no cover - templates is part of the package
        render = None  # type: ignore[assignment]

    def shape_done(state: ShapeState) -> None:
        write_hall_of_fame(folder, state)
        write_policy(folder, engine)

    view = progress if progress is not None else LiveProgress(console=console, title=f"evogemm {config.name}",
                                                              live=live)
    engine = Engine(config, db, evaluator=evaluator, log=log, progress=view, render=render, mode=mode,
                    on_shape_done=shape_done)
    try:
        with view if hasattr(view, "__enter__") else _Null():
            engine.run()
        write_policy(folder, engine)
        from .report import write_report
        write_report(folder, db)
        db.event("campaign_done", None, {"session": db.session})
        log(f"session {db.session}: campaign finished; report in {folder / REPORT_FILE}")
    except BaseException as exc:
        log(f"session {db.session}: stopped by {type(exc).__name__}: {exc}")
        try:
            db.event("session_error", None, {"error": f"{type(exc).__name__}: {exc}"})
        except Exception:
            pass
        raise
    finally:
        engine.close()
        db.close()
        log.close()
    return CampaignResult(folder, engine.states, engine.simulated, engine.evaluator_description)


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def write_hall_of_fame(folder: Path, state: ShapeState) -> Path:
    hof_dir = folder / HOF_DIR
    hof_dir.mkdir(exist_ok=True)
    path = hof_dir / f"{state.name}.json"
    atomic_write(path, json.dumps(hall_of_fame_entries(state.hof) if state.hof is not None else [], indent=1) + "\n")
    return path


def write_policy(folder: Path, engine: Engine) -> "Path | None":
    if not engine.policy_states:
        return None
    data = {
        "policy": engine.config.selection.policy,
        "arms": [op.arm_name for op in engine.config.operators],
        "scope": "one policy per shape, each warm-started from the previous shape's final state",
        "shapes": engine.policy_states,
        "final": engine.last_policy_state,
    }
    path = folder / POLICY_FILE
    atomic_write(path, json.dumps(data, indent=1, default=str) + "\n")
    return path


def shapes_of(states: Mapping[str, ShapeState]) -> Sequence[str]:
    return list(states)
