"""Which kernel `evogemm export` ships for each shape, read from one or several campaign folders.

Per shape, the candidates are the campaign's re-verified hall of fame (the `verified` table: the
hall re-measured in one run interleaved with the vendor baselines), or, where a campaign has no
re-verification (a simulated campaign, or one stopped before it), its hall of fame with the
confirming re-measurement and the baselines timed at the shape's start. Each candidate is compared
with torch.matmul (baseline `torch_tn`: the layout hgemm falls back to) measured in the same run,
and with the best vendor baseline. Across campaigns, the candidate with the highest speedup over
torch.matmul wins; measured ones before simulated ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from evaluator.api import BaselineSet, Measurement
from evolution.db import CampaignDB
from genome import Genome, Problem

FALLBACK_BASELINE = "torch_tn"  # torch.matmul(a, w.t()): what hgemm does where no kernel serves


class ExportError(ValueError):
    """A campaign folder or an option that export cannot use; the message says which and why."""


@dataclass
class Choice:
    """The kernel chosen for one shape, with what it was measured against."""

    shape: str
    genome: Genome
    measurement: Measurement
    baselines: "BaselineSet | None"
    campaign: str
    source: str                       # "verified" | "hall_of_fame"
    simulated: bool
    others: list[dict] = field(default_factory=list)  # the other campaigns' candidates, for the record

    @property
    def time_us(self) -> "float | None":
        return self.measurement.time_us

    def baseline_us(self, name: str) -> "float | None":
        if self.baselines is None or name not in self.baselines.device:
            return None
        return self.baselines.device[name].median_us

    @property
    def torch_us(self) -> "float | None":
        return self.baseline_us(FALLBACK_BASELINE)

    @property
    def best_vendor(self) -> "tuple[str, float] | None":
        return self.baselines.best("device") if self.baselines else None

    @property
    def speedup_vs_torch(self) -> "float | None":
        t, k = self.torch_us, self.time_us
        return t / k if t and k else None

    @property
    def speedup_vs_vendor(self) -> "float | None":
        best, k = self.best_vendor, self.time_us
        return best[1] / k if best and k else None

    def rank(self) -> tuple:
        return (not self.simulated, self.speedup_vs_torch or 0.0)


def _open(folder: Path) -> CampaignDB:
    db_path = folder / "campaign.db"
    if not db_path.is_file():
        raise ExportError(f"{folder}: not a campaign folder (no campaign.db); give the folder `evogemm run --out` wrote")
    return CampaignDB(db_path, readonly=True)


def _hall(folder: Path, db: CampaignDB, shape: str) -> "list[tuple[Genome, Measurement]]":
    path = folder / "hall_of_fame" / f"{shape}.json"
    if not path.is_file():
        return []
    try:
        items = json.loads(path.read_text())
        if not isinstance(items, list):
            raise ValueError("it must hold a JSON list of entries")
    except (OSError, ValueError) as exc:
        raise ExportError(f"{path}: cannot read this hall of fame ({exc}); `evogemm resume {folder}` rewrites it "
                          "when the campaign goes on, or remove the file to export without that shape") from exc
    out = []
    for item in items:
        genome = Genome.from_dict(item["genome"])
        m = db.confirmation(genome.id, shape) or Measurement.from_dict(item["measurement"])
        if m.ok and m.time_us:
            out.append((genome, m))
    return out


def campaign_choices(folder: "str | Path") -> list[Choice]:
    """The best kernel of each shape of one campaign (shapes without a measured kernel are left out)."""
    folder = Path(folder)
    db = _open(folder)
    try:
        simulated = bool(db.get_meta("simulated"))
        out = []
        for row in db.shape_rows():
            shape = row["problem"]
            verified = db.verified(shape)
            if verified is not None:
                baselines, measurements = verified
                ok = [m for m in measurements if m.ok and m.time_us]
                pairs = [(db.genome(m.genome_id), m) for m in ok]
                source = "verified"
            else:
                baselines, pairs, source = db.baselines(shape), _hall(folder, db, shape), "hall_of_fame"
            pairs = [(g, m) for g, m in pairs if g is not None]
            if not pairs:
                continue
            genome, m = min(pairs, key=lambda gm: gm[1].time_us)
            out.append(Choice(shape=shape, genome=genome, measurement=m, baselines=baselines, campaign=str(folder),
                              source=source, simulated=simulated or bool(m.simulated)))
        return out
    finally:
        db.close()


def unfinished_shapes(folder: "str | Path") -> dict[str, int]:
    """Shapes of a campaign whose run has not finished (a campaign stopped mid-shape: no hall of fame written yet)
    but that recorded evaluations: shape name -> evaluations recorded."""
    folder = Path(folder)
    db = _open(folder)
    try:
        return {row["problem"]: n for row in db.shape_rows()
                if row["status"] != "done" and db.verified(row["problem"]) is None
                and not (folder / "hall_of_fame" / f"{row['problem']}.json").is_file()
                and (n := db.evaluation_count(row["problem"]))}
    finally:
        db.close()


def choose(folders: Sequence["str | Path"]) -> dict[str, Choice]:
    """Per shape, the best candidate over all the campaigns given (see the module docstring)."""
    if not folders:
        raise ExportError("give at least one campaign folder")
    by_shape: dict[str, list[Choice]] = {}
    for folder in folders:
        for choice in campaign_choices(folder):
            Problem.parse(choice.shape)  # a shape name the loader can key on
            by_shape.setdefault(choice.shape, []).append(choice)
    best: dict[str, Choice] = {}
    for shape, choices in by_shape.items():
        choices.sort(key=Choice.rank, reverse=True)
        winner = choices[0]
        winner.others = [{"campaign": c.campaign, "genome": c.genome.id, "time_us": c.time_us,
                          "speedup_vs_torch": c.speedup_vs_torch, "simulated": c.simulated} for c in choices[1:]]
        best[shape] = winner
    return best


def measurement_record(choice: Choice) -> dict[str, Any]:
    """What the package says about a kernel's measurements: device time with its spread, server
    mode, call latency, each baseline in the same modes, the speedups, and where they came from."""
    m, bs = choice.measurement, choice.baselines

    def modes(table: "dict | None") -> dict:
        return {name: t.to_dict() if hasattr(t, "to_dict") else t for name, t in (table or {}).items()}

    return {
        "shape": choice.shape, "campaign": choice.campaign, "source": choice.source, "simulated": choice.simulated,
        "kernel": {"time_us": m.time_us, "device": m.device.to_dict() if m.device else None,
                   "server": m.server.to_dict() if m.server else None, "call": m.call.to_dict() if m.call else None,
                   "paired": m.paired, "rel_error": m.rel_error, "acc_error": m.acc_error,
                   "build_key": m.build_key},
        "baselines": ({"device": modes(bs.device), "server": modes(bs.server), "call": modes(bs.call),
                       "rel_error": dict(bs.rel_error)} if bs else None),
        "speedup_vs_torch": choice.speedup_vs_torch,
        "best_vendor": list(choice.best_vendor) if choice.best_vendor else None,
        "speedup_vs_best_vendor": choice.speedup_vs_vendor,
        "other_candidates": choice.others,
    }
