"""The campaign database: one SQLite file (stdlib sqlite3, WAL mode) in the campaign folder.

Every row that matters for resume is committed in its own transaction as soon as it is known, so
a `kill -9` at any moment loses at most the evaluation in flight. Tables (the methods of
llm_calls, operator_failures and policy_log are in evolution/db_records.py):

  meta(key, value)              config (resolved campaign, JSON), seed, schema version, created,
                                resolved evaluator backend, seed pools (hand-picked genomes,
                                halls of fame of seed_from campaigns), warm-start policy state
  sessions(id, started, last_seen, pid, host, mode, evaluator)
                                one row per run/resume; last_seen is bumped with every commit, so
                                wall time used = sum(last_seen - started)
  shapes(problem, idx, status, allocation, reason, started, finished, wall_seconds)
                                status pending|running|done; allocation = the per-shape budget
                                fixed when the shape started (replayed on resume)
  genomes(id, family, json)     every genome ever proposed
  proposals(seq, problem, round, island, genome_id, operator, arm, parent_ids, prompt_id,
            response_id, note, meta, tokens, created)
                                every offspring the strategy asked for, in order (seq is global)
  evaluations(genome_id, problem, status, device_us, device, server, call, rel_error, acc_error, reason,
              simulated, build_key, build_seconds, gpu_seconds, seconds, seq, session, created, paired, log)
                                one row per (genome, problem), never two: a genome measured on a
                                problem is never measured again. device_us is the time the search
                                ranks by (Measurement.time_us: drift-corrected when `paired`); log is
                                a failure's diagnostic (a compile error's log excerpt)
  llm_calls(key, model, messages, status, text, error, tokens, response, created)
                                every LLM call, recorded before its answer is used: a resume
                                answers the same request from here (no paid call repeated)
  confirmations(genome_id, problem, json, created)
                                the second, independent measurement a genome gets before it enters
                                the shape's hall of fame (GPU campaigns); the hall holds this one
  baselines(problem, best_name, best_us, json, simulated, created)
  policy_log(problem, round, seq, policy, probabilities, stats, state, created)
                                the selection policy after each round of each shape
  operator_failures(problem, idx, arm, kind, error, reason, llm_calls, session, created)
                                every operator call that produced no child (garbage or refused
                                answer, failed or over-budget call, an exception), the idx-th of
                                its shape's strategy: a resume re-generates the same ones, which
                                are kept once
  events(id, created, session, kind, problem, data)
                                shape_start, shape_done, session notes, errors
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from evaluator.api import BaselineSet, Measurement, Timing
from genome import Genome

from .db_records import SearchRecords, _dumps
from .db_schema import SCHEMA, check_campaign_tables

SCHEMA_VERSION = 1



class ReplayMismatch(RuntimeError):
    """A re-generated proposal differs from the recorded one: the search is not deterministic, or
    the code or inputs changed since the campaign was recorded. Resuming would corrupt it."""


def _timing(text: "str | None") -> "Timing | None":
    return Timing(**json.loads(text)) if text else None


class CampaignDB(SearchRecords):
    """A campaign's database: one SQLite connection per thread that uses it (see `conn`)."""

    FILENAME = "campaign.db"

    def __init__(self, path: "str | Path", readonly: bool = False):
        self.path = Path(path)
        self.readonly = readonly
        if readonly and not self.path.exists():
            raise FileNotFoundError(f"no campaign database at {self.path}")
        self._conns: dict[int, sqlite3.Connection] = {}
        self._conns_lock = threading.Lock()
        self._owner = threading.get_ident()
        first = self._connect()
        if readonly:
            check_campaign_tables(first, self.path)
        else:
            first.executescript(SCHEMA)
            columns = {row[1] for row in first.execute("PRAGMA table_info(evaluations)")}
            if "acc_error" not in columns:  # a database made before the accumulation bound
                first.execute("ALTER TABLE evaluations ADD COLUMN acc_error REAL")
            if "paired" not in columns:     # a database made before paired search measurements
                first.execute("ALTER TABLE evaluations ADD COLUMN paired TEXT")
            if "log" not in columns:        # a database made before failures kept their log excerpt
                first.execute("ALTER TABLE evaluations ADD COLUMN log TEXT")
        self._conns[self._owner] = first
        self.session: "int | None" = None

    def _connect(self) -> sqlite3.Connection:
        if self.readonly:
            conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30, isolation_level=None,
                                   check_same_thread=False)
        else:
            conn = sqlite3.connect(str(self.path), timeout=30, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across process crashes
        conn.row_factory = sqlite3.Row
        return conn

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection: each thread that uses the database gets its own (SQLite's WAL
        and the busy timeout order their transactions), so shapes searched side by side on worker
        threads commit as safely as the main thread."""
        ident = threading.get_ident()
        conn = self._conns.get(ident)
        if conn is None:
            with self._conns_lock:
                conn = self._conns[ident] = self._connect()
        return conn

    # -- plumbing --------------------------------------------------------------------------------
    def close(self) -> None:
        with self._conns_lock:
            conns, self._conns = list(self._conns.values()), {}
        for conn in conns:
            conn.close()

    def __enter__(self) -> "CampaignDB":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _tx(self) -> "_Transaction":
        return _Transaction(self.conn)

    def _touch(self) -> None:
        if self.session is not None:
            self.conn.execute("UPDATE sessions SET last_seen=? WHERE id=?", (time.time(), self.session))

    # -- meta -------------------------------------------------------------------------------------
    def set_meta(self, items: Mapping[str, Any]) -> None:
        with self._tx():
            for key, value in items.items():
                self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, _dumps(value)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return json.loads(row["value"]) if row else default

    def initialised(self) -> bool:
        return self.get_meta("config") is not None

    def initialise(self, config: Mapping[str, Any], shapes: Sequence[str], extra: Mapping[str, Any]) -> None:
        """Store the campaign (config, shapes, seed pools, ...) in one transaction."""
        with self._tx():
            items = {"schema_version": SCHEMA_VERSION, "config": dict(config), "created": time.time(), **extra}
            for key, value in items.items():
                self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, _dumps(value)))
            for i, name in enumerate(shapes):
                self.conn.execute("INSERT OR IGNORE INTO shapes(problem, idx) VALUES (?, ?)", (name, i))

    # -- sessions ---------------------------------------------------------------------------------
    def start_session(self, mode: str, evaluator: str = "") -> int:
        now = time.time()
        with self._tx():
            cur = self.conn.execute(
                "INSERT INTO sessions(started, last_seen, pid, host, mode, evaluator) VALUES (?, ?, ?, ?, ?, ?)",
                (now, now, os.getpid(), socket.gethostname(), mode, evaluator))
        self.session = int(cur.lastrowid)
        return self.session

    def set_session_evaluator(self, text: str) -> None:
        with self._tx():
            self.conn.execute("UPDATE sessions SET evaluator=? WHERE id=?", (text, self.session))
            self._touch()

    def heartbeat(self) -> None:
        with self._tx():
            self._touch()

    def wall_seconds(self) -> float:
        row = self.conn.execute("SELECT COALESCE(SUM(last_seen - started), 0) AS s FROM sessions").fetchone()
        return float(row["s"])

    def sessions(self) -> list[dict]:
        return [dict(r) for r in self.conn.execute("SELECT * FROM sessions ORDER BY id")]

    # -- shapes -----------------------------------------------------------------------------------
    def shape_rows(self) -> list[dict]:
        out = []
        for r in self.conn.execute("SELECT * FROM shapes ORDER BY idx"):
            d = dict(r)
            d["allocation"] = json.loads(d["allocation"]) if d["allocation"] else None
            out.append(d)
        return out

    def shape_row(self, problem: str) -> "dict | None":
        r = self.conn.execute("SELECT * FROM shapes WHERE problem=?", (problem,)).fetchone()
        if r is None:
            return None
        d = dict(r)
        d["allocation"] = json.loads(d["allocation"]) if d["allocation"] else None
        return d

    def start_shape(self, problem: str, allocation: Mapping[str, Any]) -> None:
        with self._tx():
            self.conn.execute("UPDATE shapes SET status='running', allocation=?, started=? WHERE problem=?",
                              (_dumps(allocation), time.time(), problem))
            self._event("shape_start", problem, {"allocation": dict(allocation)})

    def reopen_shape(self, problem: str) -> None:
        """A finished shape goes on (a budget grant): running again, its hall of fame to be re-verified."""
        with self._tx():
            self.conn.execute("UPDATE shapes SET status='running', reason=NULL, finished=NULL WHERE problem=?",
                              (problem,))
            self.conn.execute("DELETE FROM verified WHERE problem=?", (problem,))
            self._event("shape_reopened", problem, {})

    def finish_shape(self, problem: str, reason: str) -> None:
        with self._tx():
            self.conn.execute("UPDATE shapes SET status='done', reason=?, finished=? WHERE problem=?",
                              (reason, time.time(), problem))
            self._event("shape_done", problem, {"reason": reason})

    # -- genomes and proposals ---------------------------------------------------------------------
    def named_params(self) -> "dict[str, set[str]]":
        """Each family's parameters that some recorded genome names."""
        out: dict[str, set[str]] = {}
        for r in self.conn.execute("SELECT family, json FROM genomes"):
            out.setdefault(r["family"], set()).update(json.loads(r["json"]).get("params", {}))
        return out

    def genome(self, genome_id: str) -> "Genome | None":
        r = self.conn.execute("SELECT json FROM genomes WHERE id=?", (genome_id,)).fetchone()
        return Genome.from_json(r["json"]) if r else None

    def proposal(self, seq: int) -> "dict | None":
        r = self.conn.execute("SELECT * FROM proposals WHERE seq=?", (seq,)).fetchone()
        return _proposal(r) if r else None

    def proposals(self, problem: "str | None" = None) -> list[dict]:
        if problem is None:
            rows = self.conn.execute("SELECT * FROM proposals ORDER BY seq")
        else:
            rows = self.conn.execute("SELECT * FROM proposals WHERE problem=? ORDER BY seq", (problem,))
        return [_proposal(r) for r in rows]

    def _value(self, expr: str, table: str, problem: "str | None") -> Any:
        """One aggregate `expr` over `table`, of one problem's rows or of all."""
        sql = f"SELECT {expr} AS v FROM {table}" + (" WHERE problem=?" if problem is not None else "")
        return self.conn.execute(sql, (problem,) if problem is not None else ()).fetchone()["v"]

    def max_seq(self, problem: "str | None" = None) -> int:
        return int(self._value("COALESCE(MAX(seq), -1)", "proposals", problem))

    def record_proposals(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Insert new proposals (and their genomes) in one transaction."""
        if not rows:
            return
        now = time.time()
        with self._tx():
            for row in rows:
                genome: Genome = row["genome"]
                self.conn.execute("INSERT OR IGNORE INTO genomes(id, family, json) VALUES (?, ?, ?)",
                                  (genome.id, genome.family, genome.to_json(indent=None)))
                meta = dict(row.get("meta") or {})
                self.conn.execute(
                    "INSERT INTO proposals(seq, problem, round, island, genome_id, operator, arm, parent_ids, "
                    "prompt_id, response_id, note, meta, tokens, created) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (row["seq"], row["problem"], row["round"], row.get("island"), genome.id, row["operator"],
                     row.get("arm"), _dumps(list(row.get("parent_ids") or [])), meta.get("prompt_id"),
                     meta.get("response_id"), row.get("note") or "", _dumps(meta) if meta else None,
                     int(meta.get("tokens", 0) or 0), now))
            self._touch()

    def tokens_used(self, problem: "str | None" = None) -> int:
        return int(self._value("COALESCE(SUM(tokens), 0)", "proposals", problem))

    # -- evaluations -------------------------------------------------------------------------------
    def record_evaluation(self, m: Measurement, seconds: float = 0.0, seq: "int | None" = None,
                          shape_wall: "float | None" = None) -> None:
        """One evaluation, committed on its own (with the shape's wall time so far). A second row for
        the same (genome, problem) is an error."""
        with self._tx():
            if shape_wall is not None:
                self.conn.execute("UPDATE shapes SET wall_seconds=? WHERE problem=?", (shape_wall, m.problem))
            self.conn.execute(
                "INSERT INTO evaluations(genome_id, problem, status, device_us, device, server, call, rel_error, "
                "acc_error, reason, simulated, build_key, build_seconds, gpu_seconds, seconds, seq, session, created, "
                "paired, log) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (m.genome_id, m.problem, m.status, m.time_us, _dumps(m.device.to_dict()) if m.device else None,
                 _dumps(m.server.to_dict()) if m.server else None, _dumps(m.call.to_dict()) if m.call else None,
                 m.rel_error, m.acc_error, m.reason, int(bool(m.simulated)), m.build_key, float(m.build_seconds or 0.0),
                 float(m.gpu_seconds or 0.0), float(seconds), seq, self.session, time.time(),
                 _dumps(m.paired) if m.paired else None, m.log))
            self._touch()

    def measurements(self, problem: "str | None" = None) -> dict[tuple[str, str], Measurement]:
        """(genome id, problem) -> Measurement, in the order they were recorded."""
        sql = "SELECT * FROM evaluations" + (" WHERE problem=?" if problem else "") + " ORDER BY rowid"
        rows = self.conn.execute(sql, (problem,) if problem else ())
        return {(r["genome_id"], r["problem"]): _measurement(r) for r in rows}

    def measurement(self, genome_id: str, problem: str) -> "Measurement | None":
        r = self.conn.execute("SELECT * FROM evaluations WHERE genome_id=? AND problem=?",
                              (genome_id, problem)).fetchone()
        return _measurement(r) if r else None

    def evaluation_rows(self, problem: "str | None" = None) -> list[dict]:
        sql = "SELECT * FROM evaluations" + (" WHERE problem=?" if problem else "") + " ORDER BY rowid"
        return [dict(r) for r in self.conn.execute(sql, (problem,) if problem else ())]

    def evaluation_count(self, problem: "str | None" = None) -> int:
        return int(self._value("COUNT(*)", "evaluations", problem))

    def gpu_seconds(self, problem: "str | None" = None) -> float:
        return float(self._value("COALESCE(SUM(gpu_seconds), 0)", "evaluations", problem))

    def status_counts(self, problem: str) -> dict[str, int]:
        rows = self.conn.execute("SELECT status, COUNT(*) AS n FROM evaluations WHERE problem=? GROUP BY status",
                                 (problem,))
        return {r["status"]: int(r["n"]) for r in rows}

    def best(self, problem: str, limit: int = 1) -> list[tuple[Genome, Measurement]]:
        rows = self.conn.execute(
            "SELECT e.*, g.json AS gjson FROM evaluations e JOIN genomes g ON g.id = e.genome_id "
            "WHERE e.problem=? AND e.status='ok' AND e.device_us IS NOT NULL ORDER BY e.device_us, e.genome_id "
            "LIMIT ?", (problem, limit))
        return [(Genome.from_json(r["gjson"]), _measurement(r)) for r in rows]

    # -- baselines ---------------------------------------------------------------------------------
    def record_baselines(self, bs: BaselineSet) -> None:
        best = bs.best("device")
        with self._tx():
            self.conn.execute(
                "INSERT OR REPLACE INTO baselines(problem, best_name, best_us, json, simulated, created) "
                "VALUES (?,?,?,?,?,?)",
                (bs.problem, best[0] if best else None, best[1] if best else None, _dumps(bs.to_dict()),
                 int(bool(bs.simulated)), time.time()))
            self._touch()

    def baselines(self, problem: str) -> "BaselineSet | None":
        r = self.conn.execute("SELECT json FROM baselines WHERE problem=?", (problem,)).fetchone()
        return BaselineSet.from_dict(json.loads(r["json"])) if r else None

    # -- hall of fame re-verified with the baselines interleaved (GPU campaigns) -------------------
    def record_verified(self, problem: str, baselines: BaselineSet,
                        measurements: "Sequence[Measurement]") -> None:
        data = {"baselines": baselines.to_dict(), "measurements": [m.to_dict() for m in measurements]}
        with self._tx():
            self.conn.execute("INSERT OR REPLACE INTO verified(problem, json, created) VALUES (?,?,?)",
                              (problem, _dumps(data), time.time()))
            self._touch()

    def verified(self, problem: str) -> "tuple[BaselineSet, list[Measurement]] | None":
        r = self.conn.execute("SELECT json FROM verified WHERE problem=?", (problem,)).fetchone()
        if not r:
            return None
        data = json.loads(r["json"])
        return BaselineSet.from_dict(data["baselines"]), [Measurement.from_dict(m) for m in data["measurements"]]

    # -- confirmations: a second, independent measurement before a genome enters the hall of fame --
    def record_confirmation(self, m: Measurement) -> None:
        with self._tx():
            self.conn.execute("INSERT OR REPLACE INTO confirmations(genome_id, problem, json, created) VALUES (?,?,?,?)",
                              (m.genome_id, m.problem, _dumps(m.to_dict()), time.time()))
            self._touch()

    def confirmation(self, genome_id: str, problem: str) -> "Measurement | None":
        r = self.conn.execute("SELECT json FROM confirmations WHERE genome_id=? AND problem=?",
                              (genome_id, problem)).fetchone()
        return Measurement.from_dict(json.loads(r["json"])) if r else None

    def best_standing(self, problem: str) -> "tuple[Genome, Measurement, bool] | None":
        """The fastest time the campaign stands by, as (genome, measurement, confirmed). Where the
        shape has confirmations (a GPU campaign confirms every hall-of-fame entrant), only confirmed
        genomes count, at their confirming measurement, as the hall of fame holds them: a genome
        that timed well once and slower when measured again (the winner's curse) is quoted at its
        second time, a failed confirmation drops it, and a genome never confirmed (not among a
        round's entrants) is not quoted at its single search time. Without confirmations (the
        simulator), the search measurements."""
        confirmations = {r["genome_id"]: Measurement.from_dict(json.loads(r["json"])) for r in self.conn.execute(
            "SELECT genome_id, json FROM confirmations WHERE problem=?", (problem,))}
        best = None
        for genome, m in self.best(problem, limit=-1):
            if confirmations:
                confirmed = confirmations.get(genome.id)
                if confirmed is None or not confirmed.ok or confirmed.time_us is None:
                    continue
                m = confirmed
            if best is None or (m.time_us, genome.id) < (best[1].time_us, best[0].id):
                best = (genome, m, bool(confirmations))
        return best

    # -- events ------------------------------------------------------------------------------------
    def _event(self, kind: str, problem: "str | None", data: Any) -> None:
        self.conn.execute("INSERT INTO events(created, session, kind, problem, data) VALUES (?,?,?,?,?)",
                          (time.time(), self.session, kind, problem, _dumps(data)))
        self._touch()

    def event(self, kind: str, problem: "str | None" = None, data: Any = None) -> None:
        with self._tx():
            self._event(kind, problem, data)

    def events(self, kind: "str | None" = None) -> list[dict]:
        sql = "SELECT * FROM events" + (" WHERE kind=?" if kind else "") + " ORDER BY id"
        out = []
        for r in self.conn.execute(sql, (kind,) if kind else ()):
            d = dict(r)
            d["data"] = json.loads(d["data"]) if d["data"] else None
            out.append(d)
        return out


class _Transaction:
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.conn.execute("COMMIT")
        else:
            self.conn.execute("ROLLBACK")


def _proposal(r: sqlite3.Row) -> dict:
    d = dict(r)
    d["parent_ids"] = json.loads(d["parent_ids"]) if d["parent_ids"] else []
    d["meta"] = json.loads(d["meta"]) if d["meta"] else {}
    return d


def _measurement(r: sqlite3.Row) -> Measurement:
    return Measurement(
        genome_id=r["genome_id"], problem=r["problem"], status=r["status"], device=_timing(r["device"]),
        server=_timing(r["server"]), call=_timing(r["call"]), rel_error=r["rel_error"],
        acc_error=r["acc_error"] if "acc_error" in r.keys() else None,
        paired=json.loads(r["paired"]) if "paired" in r.keys() and r["paired"] else None,
        log=r["log"] if "log" in r.keys() else None,
        reason=r["reason"], simulated=bool(r["simulated"]), build_seconds=r["build_seconds"], gpu_seconds=r["gpu_seconds"],
        build_key=r["build_key"])

