"""`evogemm dataset DIR --out F.jsonl`: a campaign's LLM calls as a dataset for offline fine-tuning.

One JSON line per recorded LLM call: the prompt (messages) and the response, the model, tokens,
and what came of it. A call whose answer became a child carries the parent and child genomes,
their measured device times on the shape, the reward log(parent time / child time) and the
child's status; an answer refused before any build (garbage, a move outside the space) or a
failed call carries its status and reason. Nothing is measured or called again: it only reads
campaign.db.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any, Iterator

from evolution.db import CampaignDB


def dataset_rows(folder: "str | Path") -> Iterator[dict[str, Any]]:
    db = CampaignDB(Path(folder) / CampaignDB.FILENAME, readonly=True)
    try:
        conn = db.conn
        by_call: dict[str, dict] = {}
        for p in conn.execute("SELECT * FROM proposals WHERE meta LIKE '%llm_call%' ORDER BY seq"):
            meta = json.loads(p["meta"] or "{}")
            if meta.get("llm_call"):
                by_call.setdefault(meta["llm_call"], dict(p))
        times = {(r["genome_id"], r["problem"]): (r["status"], r["device_us"], r["reason"])
                 for r in conn.execute("SELECT genome_id, problem, status, device_us, reason FROM evaluations")}
        genomes = {r["id"]: json.loads(r["json"]) for r in conn.execute("SELECT id, json FROM genomes")}
        refusals: dict[str, dict] = {}  # call key -> the operator failure that call ended in
        for f in conn.execute("SELECT * FROM operator_failures ORDER BY created"):
            for key in json.loads(f["llm_calls"] or "[]"):
                refusals[key] = dict(f)
        for call in conn.execute("SELECT * FROM llm_calls ORDER BY created, key"):
            row: dict[str, Any] = {"key": call["key"], "model": call["model"], "messages": json.loads(call["messages"]),
                                   "response": call["text"], "tokens": call["tokens"], "call_status": call["status"]}
            if call["status"] != "ok":
                row.update(outcome="call_failed", reason=call["error"])
                yield row
                continue
            proposal = by_call.get(call["key"])
            if proposal is None:
                failure = refusals.get(call["key"])
                if failure is not None:
                    row.update(outcome="refused", problem=failure["problem"], arm=failure["arm"],
                               kind=failure["kind"], reason=failure["reason"])
                else:
                    row.update(outcome="refused", reason="the answer made no new child (see the campaign log)")
                yield row
                continue
            problem, child = proposal["problem"], proposal["genome_id"]
            parents = json.loads(proposal["parent_ids"] or "[]")
            status, child_us, reason = times.get((child, problem), (None, None, None))
            parent_us = [times.get((pid, problem), (None, None, None))[1] for pid in parents]
            best_parent = min((t for t in parent_us if t), default=None)
            reward = math.log(best_parent / child_us) if best_parent and child_us else None
            row.update(outcome="child", problem=problem, operator=proposal["operator"], arm=proposal["arm"],
                       parent_genomes=[genomes.get(pid) for pid in parents], child_genome=genomes.get(child),
                       parent_us=parent_us, child_us=child_us, child_status=status, child_reason=reason,
                       reward=reward, note=proposal["note"])
            yield row
    finally:
        db.close()


def cmd_dataset(args: argparse.Namespace) -> int:
    from experiments.cli import CliError
    folder = Path(args.campaign)
    if not (folder / CampaignDB.FILENAME).exists():
        raise CliError(f"{folder} is not a campaign folder (no {CampaignDB.FILENAME})")
    out = Path(args.out)
    n = 0
    with open(out, "w") as f:
        for row in dataset_rows(folder):
            f.write(json.dumps(row, sort_keys=True) + "\n")
            n += 1
    print(f"wrote {n} LLM call(s) to {out}")
    return 0


def register(sub: Any) -> None:
    from experiments.cli import add_command
    p = add_command(sub, "dataset", "export a campaign's LLM calls (prompt, response, parent and child, times, "
                                    "reward) as JSON lines")
    p.add_argument("campaign", help="campaign folder")
    p.add_argument("--out", required=True, help="output file (.jsonl)")
    p.set_defaults(func=cmd_dataset)
