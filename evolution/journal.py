"""The campaign's journal: every proposal numbered and recorded before it is evaluated, every
measurement committed as soon as it is known, and, on resume, both served back from the database.

Resume is event sourcing: the engine runs the same loop from the start; each re-generated proposal
must equal the recorded one at its sequence number (else `ReplayMismatch`), and measurements
already in the database are served from it, so only what has none is evaluated.
"""

from __future__ import annotations

import threading
import time
from typing import Sequence

from evaluator.api import Evaluator, Measurement
from genome import Genome, Offspring

from .db import CampaignDB, ReplayMismatch
from .shape_state import ShapeState


class Journal:
    """Numbers and records proposals. `by_shape=False` (shapes in turn): a resume re-generates the
    proposals in the recorded global order, and each must equal the record at its sequence number.
    `by_shape=True` (shapes searched side by side, whose proposals interleave in whatever order the
    threads ran): each shape's n-th proposal must equal that shape's n-th recorded one; a replayed
    proposal keeps its recorded number and a new one takes the next free number."""

    def __init__(self, db: CampaignDB, by_shape: bool = False):
        self.db = db
        self.by_shape = by_shape
        self.seq = db.max_seq() + 1 if by_shape else 0  # the next new proposal's global sequence number
        self._lock = threading.Lock()
        self._recorded: dict[str, list[dict]] = {}  # by_shape: each shape's recorded proposals, in order

    def _recorded_at(self, state: ShapeState) -> "tuple[int, dict | None]":
        """The sequence number for the shape's next proposal and the recorded proposal there (or None)."""
        if not self.by_shape:
            with self._lock:
                seq = self.seq
                self.seq += 1
            return seq, self.db.proposal(seq)
        rows = self._recorded.get(state.name)
        if rows is None:
            rows = self._recorded[state.name] = self.db.proposals(state.name)
        if state.proposals < len(rows):
            return int(rows[state.proposals]["seq"]), rows[state.proposals]
        with self._lock:
            seq = self.seq
            self.seq += 1
        return seq, None

    def recorded_left(self, state: ShapeState) -> bool:
        """by_shape: the shape has recorded proposals not re-generated yet."""
        rows = self._recorded.get(state.name)
        if rows is None:
            rows = self._recorded[state.name] = self.db.proposals(state.name)
        return state.proposals < len(rows)

    def record(self, state: ShapeState, offspring: Sequence[Offspring]) -> list[tuple[int, Offspring]]:
        """Give each proposal its sequence number; insert it, or check it against the record."""
        rows = []
        out = []
        for off in offspring:
            seq, recorded = self._recorded_at(state)
            meta = dict(off.meta or {})
            arm = meta.get("arm")
            parents = list(off.parent_ids)
            if recorded is not None:
                mismatch = [f"{key}: recorded {recorded[key]!r}, re-generated {mine!r}"
                            for key, mine in (("problem", state.name), ("genome_id", off.genome.id),
                                              ("operator", off.operator), ("arm", arm), ("parent_ids", parents))
                            if recorded[key] != mine]
                if mismatch:
                    raise ReplayMismatch(
                        f"proposal #{seq} ({state.name}, round {state.rounds}) does not match the database: "
                        + "; ".join(mismatch) + ". The search is not reproducible from this database "
                        "(changed code, operators, or inputs?); resume cannot continue it faithfully.")
            else:
                rows.append({"seq": seq, "problem": state.name, "round": state.rounds, "island": meta.get("island"),
                             "genome": off.genome, "operator": off.operator, "arm": arm, "parent_ids": parents,
                             "note": off.note, "meta": {k: v for k, v in meta.items() if k not in ("island", "arm")}})
            state.proposals += 1
            if getattr(state.strategy, "llm_tokens", None) is None:  # else the strategy counts every request
                state.tokens += int(meta.get("tokens", 0) or 0)
            out.append((seq, off))
        self.db.record_proposals(rows)
        return out

    @staticmethod
    def new_genomes(state: ShapeState, batch: Sequence[tuple[int, Offspring]]) -> list[tuple[int, Genome]]:
        """The batch's genomes not measured on this shape yet, once each, with their first seq."""
        seen: set[str] = set()
        out = []
        for seq, off in batch:
            gid = off.genome.id
            if gid in state.measured or gid in seen:
                continue
            seen.add(gid)
            out.append((seq, off.genome))
        return out

    def evaluate(self, state: ShapeState, new: Sequence[tuple[int, Genome]], evaluator: "Evaluator | None",
                 batch_size: "int | None") -> dict[str, Measurement]:
        """Measurements of `new`: from the database where recorded, else from the evaluator, each
        committed as soon as its chunk returns. `evaluator` may be None only when all are recorded."""
        out: dict[str, Measurement] = {}
        todo: list[tuple[int, Genome]] = []
        for seq, genome in new:
            stored = self.db.measurement(genome.id, state.name)
            if stored is not None:
                out[genome.id] = stored
                state.replayed += 1
            else:
                todo.append((seq, genome))
        if todo and evaluator is None:
            raise RuntimeError("no evaluator to measure new genomes")
        size = batch_size or max(1, len(todo))
        for start in range(0, len(todo), size):
            chunk = todo[start:start + size]
            genomes = [g for _, g in chunk]
            t0 = time.monotonic()
            measurements = evaluator.evaluate(genomes, state.problem)  # type: ignore[union-attr]
            seconds = (time.monotonic() - t0) / max(1, len(chunk))
            if len(measurements) != len(genomes):
                raise RuntimeError(f"evaluator returned {len(measurements)} measurements for {len(genomes)} genomes")
            for (seq, genome), m in zip(chunk, measurements):
                if m.genome_id != genome.id:
                    raise RuntimeError(f"evaluator answered for genome {m.genome_id}, asked {genome.id}")
                m.problem = state.name
                self.db.record_evaluation(m, seconds=seconds, seq=seq, shape_wall=state.wall_seconds())
                out[genome.id] = m
        return out

    def load_recorded(self, state: ShapeState) -> None:
        """Remember which genomes the database already measured on this shape (read once, on the
        main thread, so the proposal thread can filter prefetches without touching SQLite)."""
        state.recorded = {gid for gid, problem in self.db.measurements(state.name) if problem == state.name}

    @staticmethod
    def unmeasured(state: ShapeState, offspring: Sequence[Offspring]) -> list[Genome]:
        """The proposals' genomes that will need a measurement (what a prefetch should build)."""
        out, seen = [], set()
        for off in offspring:
            gid = off.genome.id
            if gid not in seen and gid not in state.measured and gid not in state.recorded:
                seen.add(gid)
                out.append(off.genome)
        return out
