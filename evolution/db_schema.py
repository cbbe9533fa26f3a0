"""The SQL tables of a campaign database (evolution/db.py says what each holds)."""

import sqlite3

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, started REAL NOT NULL, last_seen REAL NOT NULL,
    pid INTEGER, host TEXT, mode TEXT, evaluator TEXT);
CREATE TABLE IF NOT EXISTS shapes (
    problem TEXT PRIMARY KEY, idx INTEGER NOT NULL, status TEXT NOT NULL DEFAULT 'pending',
    allocation TEXT, reason TEXT, started REAL, finished REAL, wall_seconds REAL NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS genomes (id TEXT PRIMARY KEY, family TEXT NOT NULL, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS proposals (
    seq INTEGER PRIMARY KEY, problem TEXT NOT NULL, round INTEGER NOT NULL, island INTEGER,
    genome_id TEXT NOT NULL REFERENCES genomes(id), operator TEXT NOT NULL, arm TEXT,
    parent_ids TEXT NOT NULL DEFAULT '[]', prompt_id TEXT, response_id TEXT, note TEXT,
    meta TEXT, tokens INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL);
CREATE INDEX IF NOT EXISTS proposals_problem ON proposals(problem, seq);
CREATE TABLE IF NOT EXISTS evaluations (
    genome_id TEXT NOT NULL REFERENCES genomes(id), problem TEXT NOT NULL, status TEXT NOT NULL,
    device_us REAL, device TEXT, server TEXT, call TEXT, rel_error REAL, acc_error REAL, reason TEXT,
    simulated INTEGER NOT NULL, build_key TEXT, build_seconds REAL NOT NULL DEFAULT 0,
    gpu_seconds REAL NOT NULL DEFAULT 0, seconds REAL NOT NULL DEFAULT 0, seq INTEGER,
    session INTEGER, created REAL NOT NULL, paired TEXT, log TEXT, PRIMARY KEY (genome_id, problem));
CREATE INDEX IF NOT EXISTS evaluations_problem ON evaluations(problem, device_us);
CREATE TABLE IF NOT EXISTS baselines (
    problem TEXT PRIMARY KEY, best_name TEXT, best_us REAL, json TEXT NOT NULL, simulated INTEGER NOT NULL,
    created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS policy_log (
    problem TEXT NOT NULL, round INTEGER NOT NULL, seq INTEGER, policy TEXT, probabilities TEXT NOT NULL,
    stats TEXT, state TEXT, created REAL NOT NULL, PRIMARY KEY (problem, round));
CREATE TABLE IF NOT EXISTS verified (
    problem TEXT PRIMARY KEY, json TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS confirmations (
    genome_id TEXT NOT NULL, problem TEXT NOT NULL, json TEXT NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (genome_id, problem));
CREATE TABLE IF NOT EXISTS llm_calls (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, messages TEXT NOT NULL, status TEXT NOT NULL,
    text TEXT, error TEXT, tokens INTEGER NOT NULL DEFAULT 0, response TEXT, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS operator_failures (
    problem TEXT NOT NULL, idx INTEGER NOT NULL, arm TEXT NOT NULL, kind TEXT NOT NULL, error TEXT, reason TEXT,
    llm_calls TEXT, session INTEGER, created REAL NOT NULL, PRIMARY KEY (problem, idx));
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL, session INTEGER, kind TEXT NOT NULL,
    problem TEXT, data TEXT);
"""


def check_campaign_tables(conn: "sqlite3.Connection", path: object) -> None:
    """A database opened to be read must be a campaign's (closes `conn` and raises sqlite3.DatabaseError,
    naming `path` and what is wrong, if it is not)."""
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise sqlite3.DatabaseError(f"{path}: not a readable campaign database ({exc})") from exc
    if "meta" not in tables:
        conn.close()
        raise sqlite3.DatabaseError(f"{path}: empty or not an evogemm campaign database (no meta "
                                    "table: did the campaign's creation die?)")
