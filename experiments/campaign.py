"""Run or resume a campaign folder, and write its outputs (hall of fame, policy, report).

Policy scope: one policy per shape (a shape's operators may differ in worth), warm-started from the
previous shape's final state (weight `selection.warm_start_weight`), the first shape from
`selection.warm_start` if given. The per-round history is the `policy_log` table of the database.

Folders (create, open, the campaign.yaml check) are in experiments/campaign_folder.py; extending a
budget and switching the backend in experiments/campaign_changes.py. This module re-exports their
public names, so `experiments.campaign` is the one place to import from.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from evaluator.api import Evaluator
from evolution.db import CampaignDB
from evolution.engine import Engine, ShapeState
from evolution.population import hall_of_fame_entries

from .progress import CampaignLog, LiveProgress
from .report import REPORT_FILE, atomic_write, write_report
from .report_html import write_campaign_plots

from .campaign_changes import extend_campaign, measured_count, switch_backend
from .campaign_folder import (CONFIG_FILE, DB_FILE, HOF_DIR, LOG_FILE, OUTPUT_FILES, POLICY_FILE, CampaignEdited,
                              CampaignExists, CampaignRefused, NotACampaign, create_campaign, create_or_continue,
                              default_output_dir,
                              load_policy_state, open_campaign, open_folder, refuse_if_running)

__all__ = ["CONFIG_FILE", "DB_FILE", "LOG_FILE", "POLICY_FILE", "REPORT_FILE", "HOF_DIR", "CampaignRefused",
           "CampaignExists", "NotACampaign", "CampaignEdited", "CampaignResult", "atomic_write",
           "default_output_dir", "load_policy_state", "create_campaign", "create_or_continue", "open_campaign",
           "run_campaign",
           "before_create", "discard_unstarted", "measured_count", "extend_campaign"]


# -- run / resume ----------------------------------------------------------------------------------

@dataclass
class CampaignResult:
    folder: Path
    states: dict[str, ShapeState]
    simulated: "bool | None"
    evaluator: "str | None"


def run_campaign(folder: "str | Path", evaluator: "Evaluator | None" = None, console: Any = None,
                 live: "bool | None" = None, mode: str = "run", echo: bool = False,
                 progress: Any = None, backend: "str | None" = None, plots: bool = True) -> CampaignResult:
    """Run a created campaign, or resume one: the engine replays what is recorded and goes on.
    `backend` (auto, gpu, simulator, ray) replaces the recorded evaluator backend, but only while nothing
    has been measured; otherwise it must be the recorded one (CampaignRefused). `plots`: write the
    figures of report/ at the end (a second or so; a failure there is only logged)."""
    folder = Path(folder)
    config, db, note = open_folder(folder)
    notes = [note] if note else []
    try:
        if mode == "resume":
            notes.insert(0, f"resuming {folder}: {db.evaluation_count()} evaluation(s) recorded")
        refuse_if_running(db, folder, f"{mode} it")
        if backend is not None:
            config, switched = switch_backend(folder, db, config, backend)
            notes += [switched] if switched else []
    except BaseException:
        db.close()
        raise
    log = CampaignLog(folder / LOG_FILE, echo=sys.stderr if echo else None)
    db.start_session(mode)
    log(f"session {db.session}: {mode} campaign {config.name!r} (seed {config.seed}, strategy "
        f"{config.strategy.name}, policy {config.selection.policy}, {len(config.problems)} shapes) in {folder}")
    for line in notes:
        log(line)
        if console is not None:
            console.print(line, highlight=False, soft_wrap=True)
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
    engine: "Engine | None" = None
    try:
        engine = Engine(config, db, evaluator=evaluator, log=log, progress=view, render=render, mode=mode,
                        on_shape_done=shape_done)
        with view if hasattr(view, "__enter__") else _Null():
            engine.run()
        write_policy(folder, engine)
        write_report(folder, db, write_campaign_plots(folder, db, log) if plots else ())
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
        if engine is not None:
            engine.close()
        db.close()
        log.close()
    return CampaignResult(folder, engine.states, engine.simulated, engine.evaluator_description)


def before_create(path: "str | Path") -> dict[str, Any]:
    """What is there before `create_campaign(config, path)`: the outermost folder it will create
    (None when `path` exists) and the campaign file names already in `path`. `discard_unstarted`
    removes only what is new since."""
    path = Path(path).absolute()
    if path.exists():
        return {"created": None, "existed": [name for name in OUTPUT_FILES if (path / name).exists()]}
    top = path
    while not top.parent.exists():
        top = top.parent
    return {"created": str(top), "existed": []}


def discard_unstarted(folder: "str | Path", before: Mapping[str, Any]) -> bool:
    """After a run that failed at its start: remove the campaign files this run wrote into `folder`
    and the folders it created (`before` from `before_create`), so that nothing is left behind.
    Only when nothing was measured; True when something was removed."""
    folder = Path(folder).absolute()
    db_path = folder / DB_FILE
    if db_path.exists() and db_path.stat().st_size > 0:
        try:
            with CampaignDB(db_path, readonly=True) as db:
                if measured_count(db):
                    return False
        except sqlite3.DatabaseError:
            return False
    removed = False
    for name in OUTPUT_FILES:
        path = folder / name
        if name in before.get("existed", ()) or not (path.exists() or path.is_symlink()):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()
        removed = True
    for tmp in folder.glob(f".{CONFIG_FILE}.tmp*"):
        tmp.unlink()
    created = before.get("created")
    if created is not None:
        top = Path(created)
        here = folder
        while here == top or top in here.parents:  # the folders this run made, innermost first, while empty
            try:
                here.rmdir()
            except OSError:
                break
            removed = True
            if here == top:
                break
            here = here.parent
    return removed


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
