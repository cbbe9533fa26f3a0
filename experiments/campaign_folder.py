"""A campaign folder: its files, creating it, opening it (also after a crash), and keeping its
campaign.yaml and database in agreement.

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

Creation order makes a `kill -9` at any moment recoverable: campaign.yaml is written first
(atomically), then the database is initialised in one transaction; `open_campaign` initialises
the database from campaign.yaml when the first run died in between (no session has run then, so
there is no campaign.log). A database that is missing or empty after a session ran is refused:
starting over would silently throw results away.

The database holds the settings the campaign was created with; campaign.yaml is their copy. An
edit of campaign.yaml is refused (naming the changed keys), not silently ignored; the changes
that are allowed go through experiments/campaign_changes.py, which updates both.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import socket
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from evolution.db import CampaignDB
from evolution.seeding import load_handpicked, read_seed_pool
from evolution.campaign_spaces import creation_record

from .report import REPORT_FILE, atomic_write
from .schema import dump_campaign, load_campaign, parse_campaign


CONFIG_FILE = "campaign.yaml"
DB_FILE = "campaign.db"
LOG_FILE = "campaign.log"
POLICY_FILE = "policy.json"
HOF_DIR = "hall_of_fame"
# Everything a campaign writes into its folder (what `discard_unstarted` may remove).
OUTPUT_FILES = (CONFIG_FILE, DB_FILE, DB_FILE + "-wal", DB_FILE + "-shm", DB_FILE + "-journal", LOG_FILE,
                POLICY_FILE, REPORT_FILE, HOF_DIR)
BUDGET_REASONS = {"evaluations": "evaluation budget spent", "gpu_seconds": "GPU-time budget spent",
                  "wall_seconds": "wall-time budget spent"}


class CampaignRefused(RuntimeError):
    """A campaign folder that cannot be used as asked; the message says why and what to do."""


class CampaignExists(CampaignRefused):
    pass


class NotACampaign(CampaignRefused):
    pass


class CampaignEdited(CampaignRefused):
    """campaign.yaml differs from the settings the database recorded when the campaign was created."""


def now_stamp() -> tuple[float, str]:
    t = time.time()
    return t, dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat(timespec="seconds")


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
    out = Path(out_dir)
    if (out / DB_FILE).exists() or (out / CONFIG_FILE).exists():
        raise CampaignExists(f"{out} already holds a campaign; continue it with `evogemm resume {out}` "
                             "or choose another --out")
    if out.exists() and not out.is_dir():
        raise CampaignRefused(f"{out} is a file, not a folder; choose another --out")
    taken = [name for name in OUTPUT_FILES if (out / name).exists() or (out / name).is_symlink()]
    if taken:
        raise CampaignRefused(f"{out} holds {', '.join(taken)} but no campaign: a campaign would overwrite them; "
                              "choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / CONFIG_FILE, dump_campaign(config, source))
    _initialise_db(out, config).close()
    return out


def create_or_continue(config: Any, out_dir: "str | Path", source: "str | None" = None) -> Path:
    """For runs that a command makes and continues (ablate, ablate-arms): create the campaign, or keep
    the one already in `out_dir` when it was made with these very settings (a run stopped part-way goes
    on). One made with other settings is refused: its results would be reported as this run's."""
    out = Path(out_dir)
    if not (out / DB_FILE).exists():
        return create_campaign(config, out, source)
    try:
        with CampaignDB(out / DB_FILE, readonly=True) as db:
            stored = db.get_meta("config")
    except sqlite3.DatabaseError:
        stored = None
    if stored is None:   # its creation died before the database was initialised: nothing measured, start afresh
        for name in OUTPUT_FILES:
            path = out / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
        return create_campaign(config, out, source)
    diff = _flat_diff(stored, _plain(config.resolved()))
    if diff:
        shown = [f"{k} {_short(a)} -> {_short(b)}" for k, (a, b) in list(diff.items())[:4]]
        more = f" and {len(diff) - 4} more" if len(diff) > 4 else ""
        raise CampaignRefused(f"{out} holds a run made with other settings ({'; '.join(shown)}{more}); "
                              "choose another --out or remove it")
    return out


def _initialise_db(out: Path, config: Any) -> CampaignDB:
    db = CampaignDB(out / DB_FILE)
    if db.initialised():
        return db
    try:
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
            "handpicked": load_handpicked(config.families) if config.population.handpicked else [],
            "seed_pool": pool,
            "warm_start_policy": warm,
            "argv": sys.argv,
            **creation_record(),   # the parameters it searches; one added later stays pinned
        }
        db.initialise(config.resolved(), [p.name for p in config.problems], extra)
    except BaseException:
        db.close()
        raise
    return db


# -- opening a folder: crash recovery, lost databases, edited campaign.yaml ----------------------

def _ran_before(folder: Path) -> "str | None":
    """The output that proves a session ran here (sessions start only once the database holds the
    campaign), or None."""
    for name in (LOG_FILE, HOF_DIR, POLICY_FILE, REPORT_FILE):
        if (folder / name).exists():
            return name
    return None


def open_folder(folder: "str | Path") -> "tuple[Any, CampaignDB, str | None]":
    """(config, database, note): the note says when the database was initialised here because
    the first run stopped while creating the campaign."""
    folder = Path(folder)
    db_path = folder / DB_FILE
    yaml_path = folder / CONFIG_FILE
    if db_path.exists() and db_path.stat().st_size > 0:
        try:
            db = CampaignDB(db_path)
        except sqlite3.DatabaseError as exc:
            raise NotACampaign(f"{db_path} is not a readable campaign database ({exc})") from None
        try:
            data = db.get_meta("config")
            if data is not None:
                config = parse_campaign(data, base_dir=folder, source=str(db_path), stored=True)
                check_config_file(folder, db, config)
                return config, db, None
        except sqlite3.DatabaseError as exc:
            db.close()
            raise NotACampaign(f"{db_path} is not a readable campaign database ({exc})") from None
        except BaseException:
            db.close()
            raise
        db.close()
    if not yaml_path.exists():
        if db_path.exists():
            raise NotACampaign(f"{folder} is not a campaign folder: {DB_FILE} holds no campaign and there is no "
                               f"{CONFIG_FILE}")
        raise NotACampaign(f"{folder} is not a campaign folder (no {DB_FILE} or {CONFIG_FILE})")
    state = "is empty" if db_path.exists() else "is missing"
    ran = _ran_before(folder)
    if ran is not None:
        raise NotACampaign(
            f"{db_path} {state}, but this campaign has run before ({ran} exists): resuming would start it over "
            f"and silently drop its results. Restore {DB_FILE} from a copy, or start a new campaign with the same "
            f"settings: evogemm run {yaml_path} --out NEW_DIR")
    config = load_campaign(yaml_path)
    note = (f"{DB_FILE} {state}: the first run stopped while creating the campaign, before anything ran; "
            f"the database was initialised from {CONFIG_FILE}")
    return config, _initialise_db(folder, config), note


def open_campaign(folder: "str | Path") -> tuple[Any, CampaignDB]:
    """The config and database of a campaign folder (initialising the database if the first run
    died before it did). Refuses a lost database and an edited campaign.yaml (CampaignRefused)."""
    config, db, _ = open_folder(folder)
    return config, db


def _plain(data: Any) -> Any:
    return json.loads(json.dumps(data, default=str))


def _flat_diff(old: Any, new: Any, prefix: str = "") -> dict[str, tuple[Any, Any]]:
    """Dotted key -> (old, new) for every value that differs (mappings compared key by key)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        out: dict[str, tuple[Any, Any]] = {}
        for key in list(old) + [k for k in new if k not in old]:
            out.update(_flat_diff(old.get(key), new.get(key), f"{prefix}{key}."))
        return out
    return {} if old == new else {prefix.rstrip(".") or "(the whole file)": (old, new)}


def _short(value: Any, limit: int = 40) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit - 3] + "..."


def config_history(db: CampaignDB) -> list[dict]:
    return list(db.get_meta("extensions") or []) + list(db.get_meta("backend_changes") or [])


def check_config_file(folder: "str | Path", db: CampaignDB, config: Any = None) -> None:
    """Refuse (CampaignEdited) when campaign.yaml says something else than the settings the database
    recorded. A missing or empty campaign.yaml is written again; one left behind by an interrupted
    `extend` (or backend switch) is brought up to date."""
    folder = Path(folder)
    path = folder / CONFIG_FILE
    stored = db.get_meta("config")
    if config is None:
        config = parse_campaign(stored, base_dir=folder, source=str(folder / DB_FILE), stored=True)
    if not path.exists():
        write_config_file(folder, config, config_history(db))
        return
    try:
        data = yaml.safe_load(path.read_text())
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        why = "it is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else "it is no longer valid YAML"
        raise CampaignEdited(f"{path} was edited after the campaign was created and {why}. The campaign's settings "
                             f"are in {DB_FILE}; delete {path} and it is written again from them") from None
    if data is None:  # empty (or only comments): nothing of the settings is left in it, so no edit to refuse
        write_config_file(folder, config, config_history(db))
        return
    if _plain(data) == stored:
        return
    if any(_plain(data) == entry.get("config_before") for entry in config_history(db)):
        write_config_file(folder, config, config_history(db))  # an extend/switch stopped before rewriting the file
        return
    try:
        if isinstance(data, Mapping) and \
                parse_campaign(dict(data), base_dir=folder, stored=True).resolved() == config.resolved():
            return  # written differently (or with the defaults of settings recorded before an option existed): same
    except Exception:  # an invalid edit is still an edit: report its keys below
        pass
    diff = _flat_diff(stored, _plain(data) if isinstance(data, Mapping) else data)
    shown = [f"{k} {_short(a)} -> {_short(b)}" for k, (a, b) in list(diff.items())[:6]]
    more = f" and {len(diff) - 6} more" if len(diff) > 6 else ""
    raise CampaignEdited(
        f"{path} was edited after the campaign was created (changed: {'; '.join(shown)}{more}). A campaign keeps "
        f"the settings it was created with (recorded in {DB_FILE}), so the edit would be ignored. Undo it; raise a "
        f"budget with `evogemm extend {folder} --evaluations N`; or run the edited settings as a new campaign: "
        f"evogemm run {path} --out NEW_DIR. If the file was damaged rather than edited, delete it: it is written "
        f"again from {DB_FILE}")


def write_config_file(folder: Path, config: Any, history: Sequence[Mapping[str, Any]] = ()) -> Path:
    """campaign.yaml from `config`, keeping the `# from SOURCE` line, with one comment per change."""
    path = folder / CONFIG_FILE
    source = None
    try:
        for line in path.read_text().splitlines()[:4]:
            if line.startswith("# from "):
                source = line[len("# from "):]
    except (OSError, UnicodeDecodeError):
        pass
    lines = dump_campaign(config, source).splitlines(keepends=True)
    n_head = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
    notes = [f"# {e.get('at', '')}: {e.get('what', '')}\n" for e in sorted(history, key=lambda e: e.get("time", 0))]
    atomic_write(path, "".join(lines[:n_head] + notes + lines[n_head:]))
    return path


# -- who else is running this campaign --------------------------------------------------------------

def process_alive(pid: int) -> bool:
    """Whether process `pid` of this machine still runs. A zombie (killed, not yet reaped: where PID 1
    reaps no orphans, as in a container without an init, it stays one) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return True   # no /proc (not Linux): the signal test is all there is
    return fields[0] not in ("Z", "X")


def refuse_if_running(db: CampaignDB, folder: Path, what: str) -> None:
    sessions = db.sessions()
    if not sessions:
        return
    last = sessions[-1]
    pid = last.get("pid")
    if not pid or last.get("host") != socket.gethostname() or pid == os.getpid():
        return
    if time.time() - float(last.get("last_seen") or 0) > 6 * 3600:
        return
    if any(e["session"] == last["id"] for e in db.events("campaign_done") + db.events("session_error")):
        return  # that session ended (the process may live on, e.g. a notebook)
    if not process_alive(int(pid)):
        return
    raise CampaignRefused(f"{folder} is being run by process {pid} on this machine (its session {last['id']} "
                          f"is still alive); stop it before you {what}")
