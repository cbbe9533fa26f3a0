"""The campaign database's records of how the search went (a mixin of evolution/db.py's
CampaignDB, over the same connection and transactions): LLM calls, recorded before their answer
is used; operator calls that produced no child; the selection policy after each round."""

from __future__ import annotations

import json
import time
from typing import Any, Mapping, Sequence


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


class SearchRecords:
    """CampaignDB methods for the llm_calls, operator_failures and policy_log tables (they use
    the database's `conn`, `_tx`, `_touch` and `session`)."""

    # -- LLM calls: recorded before their answer is used (evolution/llm_gateway.py) --------------
    def record_llm_call(self, key: str, model: str, messages: Any, status: str, text: "str | None" = None,
                        error: "str | None" = None, tokens: int = 0, response: Any = None) -> None:
        with self._tx():
            self.conn.execute(
                "INSERT OR REPLACE INTO llm_calls(key, model, messages, status, text, error, tokens, response, created) "
                "VALUES (?,?,?,?,?,?,?,?,?)",
                (key, model, _dumps(list(messages)), status, text, error, int(tokens),
                 _dumps(response) if response is not None else None, time.time()))
            self._touch()

    def llm_call(self, key: str) -> "dict | None":
        r = self.conn.execute("SELECT * FROM llm_calls WHERE key=?", (key,)).fetchone()
        return dict(r) if r else None

    def llm_tokens_used(self) -> int:
        return int(self.conn.execute("SELECT COALESCE(SUM(tokens), 0) FROM llm_calls").fetchone()[0])

    # -- operator failures: calls that produced no child, credited to their arm ------------------
    def record_operator_failures(self, problem: str, start: int, rows: Sequence[Mapping[str, Any]]) -> None:
        """The shape's operator failures number start, start+1, ...; those already stored (a resume
        re-generates them) are kept as they are."""
        if not rows:
            return
        now = time.time()
        with self._tx():
            for i, row in enumerate(rows, start):
                self.conn.execute(
                    "INSERT OR IGNORE INTO operator_failures(problem, idx, arm, kind, error, reason, llm_calls, session, "
                    "created) VALUES (?,?,?,?,?,?,?,?,?)",
                    (problem, i, row["arm"], row.get("kind") or "error", row.get("error"), row.get("reason"),
                     _dumps(list(row.get("llm_calls") or [])), self.session, now))
            self._touch()

    def arm_counts(self) -> dict[str, dict[str, int]]:
        """Per arm over the campaign: the children it proposed and its operator failures."""
        out: dict[str, dict[str, int]] = {}
        for arm, n in self.conn.execute("SELECT COALESCE(arm, operator), COUNT(*) FROM proposals GROUP BY 1"):
            out.setdefault(arm, {"children": 0, "failures": 0})["children"] = int(n)
        for arm, n in self.conn.execute("SELECT arm, COUNT(*) FROM operator_failures GROUP BY arm"):
            out.setdefault(arm, {"children": 0, "failures": 0})["failures"] = int(n)
        return out

    def operator_failures(self, problem: "str | None" = None) -> list[dict]:
        sql = "SELECT * FROM operator_failures" + (" WHERE problem=?" if problem else "") + " ORDER BY problem, idx"
        out = []
        for r in self.conn.execute(sql, (problem,) if problem else ()):
            d = dict(r)
            d["llm_calls"] = json.loads(d["llm_calls"]) if d["llm_calls"] else []
            out.append(d)
        return out

    # -- policy log --------------------------------------------------------------------------------
    def log_policy(self, problem: str, round_: int, seq: int, policy: str, probabilities: Mapping[str, float],
                   stats: Any, state: Any) -> None:
        with self._tx():
            self.conn.execute(
                "INSERT OR IGNORE INTO policy_log(problem, round, seq, policy, probabilities, stats, state, created) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (problem, round_, seq, policy, _dumps(dict(probabilities)), _dumps(stats), _dumps(state),
                 time.time()))

    def policy_log(self, problem: "str | None" = None) -> list[dict]:
        sql = "SELECT * FROM policy_log" + (" WHERE problem=?" if problem else "") + " ORDER BY seq, round"
        out = []
        for r in self.conn.execute(sql, (problem,) if problem else ()):
            d = dict(r)
            for key in ("probabilities", "stats", "state"):
                d[key] = json.loads(d[key]) if d[key] else None
            out.append(d)
        return out
