"""Changes to a campaign after it was created, each recorded in its database's meta and written
to campaign.yaml too: `extend_campaign` raises a budget (meta "extensions"; shapes already started
get budget grants that the engine takes when their budget runs out), and `switch_backend` changes
the evaluator backend while nothing has been measured (meta "backend_changes")."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence


from evolution.db import CampaignDB

from .schema import parse_campaign

from .campaign_folder import (BUDGET_REASONS, CONFIG_FILE, DB_FILE, CampaignRefused, config_history, now_stamp,
                              open_folder, refuse_if_running, write_config_file)


# -- evaluator backend -----------------------------------------------------------------------------

def measured_count(db: CampaignDB) -> int:
    """Evaluations plus baseline sets recorded: anything measured (or simulated) so far."""
    return db.evaluation_count() + sum(1 for row in db.shape_rows() if db.baselines(row["problem"]) is not None)


def switch_backend(folder: Path, db: CampaignDB, config: Any, backend: str) -> "tuple[Any, str | None]":
    """The config to run with when `--backend` is given on resume, and a line saying what changed.
    The recorded backend stays when it is what was asked for; another one is taken only while nothing
    has been measured (simulated and measured times must never mix in one campaign)."""
    current = config.evaluator.backend
    recorded = db.get_meta("resolved_backend")
    if backend == recorded or (recorded is None and backend == current):
        return config, None
    measured = measured_count(db)
    if backend == current and measured:
        return config, None  # e.g. `auto`, which resolved to the recorded backend when it first ran
    if measured:
        used = recorded or current
        raise CampaignRefused(
            f"{folder}: cannot switch the evaluator backend to {backend!r}: {measured} measurement(s) in this campaign "
            f"were made with {used!r} ({db.get_meta('evaluator_description') or 'recorded'}), and simulated and "
            f"measured times must not mix in one campaign. Resume without --backend (it uses {used!r}), or start a "
            f"new campaign from the same settings: "
            f"evogemm run {folder / CONFIG_FILE} --out NEW_DIR --backend {backend}")
    stored = db.get_meta("config")
    data = json.loads(json.dumps(stored))
    data.setdefault("evaluator", {})["backend"] = backend
    new_config = parse_campaign(data, base_dir=folder, source=str(folder / DB_FILE), stored=True)
    t, at = now_stamp()
    old = recorded or current
    what = f"evaluator backend {old} -> {backend} (nothing measured yet)"
    change = {"time": t, "at": at, "old": old, "new": backend, "what": what, "config_before": stored}
    changes = list(db.get_meta("backend_changes") or []) + [change]
    db.set_meta({"config": new_config.resolved(), "resolved_backend": None, "simulated": None,
                 "evaluator_description": None, "backend_changes": changes})
    write_config_file(folder, new_config, config_history(db))
    return new_config, what



# -- extend: raise a budget ----------------------------------------------------------------------------

def _split(amount: float, names: Sequence[str], integer: bool) -> dict[str, float]:
    if not names:
        return {}
    if integer:
        base, rest = divmod(int(amount), len(names))
        return {n: base + (1 if i < rest else 0) for i, n in enumerate(names)}
    return {n: amount / len(names) for n in names}


def extend_campaign(folder: "str | Path", evaluations: "int | None" = None, wall_seconds: "float | None" = None,
                    gpu_seconds: "float | None" = None) -> dict[str, Any]:
    """Raise a campaign's budget; the next `resume` goes on with it.

    `evaluations` N raises `budget.evaluations_per_shape` by N (each shape may spend N more) and, if
    set, `budget.total_evaluations` by N per shape; with only a total, the total by N.
    `wall_seconds` / `gpu_seconds` raise those limits. The database's config and campaign.yaml are
    updated together, and meta "extensions" gets {time, at, changes: {key: [old, new]}, grants,
    pending, what, config_before}.

    Shapes not started yet take their share of the new budget when they start (the engine fixes a
    shape's allocation then). A started shape keeps its recorded allocation, so that resume replays
    it faithfully; `grants` (shape -> {evaluations|wall_seconds|gpu_seconds: extra}) lists what each
    started shape may spend in addition, once it has spent its allocation (evolution/budget.py
    takes them, in order, where the recorded run did). Raised wall or GPU seconds go to the started
    shapes that stopped on that limit or are still running, and to those that go on with more
    evaluations (granted in this extension, or in an earlier one no run has taken yet): split evenly
    among them, or, with shapes not started yet, an even share each among them and those shapes, which
    take the rest when they start. With evaluations and time raised together, a started shape that
    stopped on that time limit also gets the evaluations. An extension that changes nothing for any
    shape is refused."""
    asked = {"evaluations": evaluations, "wall_seconds": wall_seconds, "gpu_seconds": gpu_seconds}
    if all(v is None for v in asked.values()):
        raise ValueError("nothing to extend: give --evaluations N, --wall-seconds S and/or --gpu-seconds S")
    for key, value in asked.items():
        if value is not None and (not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0):
            raise ValueError(f"--{key.replace('_', '-')} must be a positive number, got {value}")
    folder = Path(folder)
    config, db, _ = open_folder(folder)
    try:
        refuse_if_running(db, folder, "extend it")
        stored = db.get_meta("config")
        budget = dict(stored["budget"])
        n_shapes = len(config.problems)
        changes: dict[str, list[Any]] = {}
        if evaluations is not None:
            per, total = budget.get("evaluations_per_shape"), budget.get("total_evaluations")
            if per is None and total is None:
                raise CampaignRefused(f"{folder}: the budget has no evaluation limit (evaluations_per_shape and "
                                      "total_evaluations are unset), so there is none to raise")
            if per is not None:
                changes["budget.evaluations_per_shape"] = [per, per + int(evaluations)]
            if total is not None:
                changes["budget.total_evaluations"] = [total, total + int(evaluations) * (n_shapes if per else 1)]
        for key in ("wall_seconds", "gpu_seconds"):
            if asked[key] is not None:
                if budget.get(key) is None:
                    raise CampaignRefused(f"{folder}: budget.{key} is not set (no limit), so there is none to raise")
                changes[f"budget.{key}"] = [budget[key], budget[key] + float(asked[key])]
        data = json.loads(json.dumps(stored))
        for key, (_, new) in changes.items():
            data["budget"][key.split(".", 1)[1]] = new
        new_config = parse_campaign(data, base_dir=folder, source=str(folder / DB_FILE), stored=True)

        rows = db.shape_rows()
        pending = [r["problem"] for r in rows if r["status"] == "pending" and r["allocation"] is None]
        started = [r for r in rows if r["allocation"] is not None]
        grants: dict[str, dict[str, float]] = {}
        raised = {k.split(".", 1)[1] for k in changes}
        # evaluation grants of earlier extensions that no run has taken yet (none ran since them)
        unspent = {name for ext in db.get_meta("extensions") or []
                   if ext.get("evaluations_before") == db.evaluation_count()
                   for name, grant in (ext.get("grants") or {}).items() if "evaluations" in grant}
        # the stop reasons of the time limits this extension raises: with evaluations raised too, a shape
        # that stopped on one goes on to the raised evaluation budget, as a shape not started would
        time_raised = {BUDGET_REASONS[d] for d in ("wall_seconds", "gpu_seconds") if d in raised}
        for dim, keys in (("evaluations", {"evaluations_per_shape", "total_evaluations"}),
                          ("wall_seconds", {"wall_seconds"}), ("gpu_seconds", {"gpu_seconds"})):
            if not raised & keys:
                continue
            # who would go on: started shapes still running, or stopped because this budget ran out; and
            # for time, also those that go on with more evaluations (granted now or by an earlier extension
            # no run has taken yet), else a shape that spent its wall share on its first evaluations stops
            # at once, its evaluation grant unspent
            goes_on = unspent | {name for name, grant in grants.items() if "evaluations" in grant}
            # and for evaluations, also those that stopped on a time limit this extension raises (below)
            takers = [r["problem"] for r in started
                      if r["status"] != "done" or (r["reason"] or "") == BUDGET_REASONS[dim]
                      or (dim != "evaluations" and r["problem"] in goes_on)
                      or (dim == "evaluations" and (r["reason"] or "") in time_raised)]
            if dim == "evaluations" and "evaluations_per_shape" in raised:
                extra = {n: int(evaluations) for n in takers}  # type: ignore[arg-type]
            elif pending and dim == "evaluations":
                extra = {}  # a shared total: the shapes not started yet take it
            elif pending:
                # time: an even share for each started shape that goes on; the shapes not started yet
                # take the rest when they start (the started ones run before them)
                extra = {n: (asked[dim] or 0) / (len(takers) + len(pending)) for n in takers}
            else:
                extra = _split(asked[dim] or 0, takers, integer=dim == "evaluations")
            for name, amount in extra.items():
                if amount:
                    grants.setdefault(name, {})[dim] = amount
        # shapes that get more evaluations but no wall, having spent their wall share: they stop at once
        short = {} if budget.get("wall_seconds") is None or "wall_seconds" in raised else {
            r["problem"]: [float(r["wall_seconds"] or 0.0), float(r["allocation"]["wall_seconds"])]
            for r in started if "evaluations" in grants.get(r["problem"], {})
            and (r["allocation"] or {}).get("wall_seconds") is not None
            and float(r["wall_seconds"] or 0.0) >= float(r["allocation"]["wall_seconds"])}
        if not pending and not grants:
            raise CampaignRefused(f"{folder}: no shape would go on with more budget: every shape has finished for "
                                  "another reason than that budget (see `evogemm status`)")
        t, at = now_stamp()
        what = "budget " + ", ".join(f"{k.split('.', 1)[1]} {a} -> {b}" for k, (a, b) in changes.items())
        entry = {"time": t, "at": at, "changes": changes, "grants": grants, "pending": pending, "wall_spent": short,
                 "what": what, "evaluations_before": db.evaluation_count(), "config_before": stored}
        history = list(db.get_meta("extensions") or []) + [entry]
        db.set_meta({"config": new_config.resolved(), "extensions": history})
        write_config_file(folder, new_config, config_history(db))
        db.event("extended", None, {k: v for k, v in entry.items() if k != "config_before"})
    finally:
        db.close()
    return {k: v for k, v in entry.items() if k != "config_before"}
