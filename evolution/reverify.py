"""Re-measure a shape's hall of fame once more, in one run interleaved with the vendor baselines
(MEASURE.md: candidate and baselines in the same process, on the same buffers). Campaign reports
quote these figures, not the search's."""

from __future__ import annotations

import inspect
from typing import Callable

from evaluator.api import BaselineSet, Evaluator
from evaluator.paired import START_TOLERANCE

from .db import CampaignDB
from .shape_state import ShapeState


def vendor_drift(start: "BaselineSet | None", verified: "BaselineSet | None") -> "float | None":
    """The best vendor time when the shape started / at its re-verification (None without either):
    far from 1, the GPU's clock or power state moved between them, and the search's speedups,
    scaled by the first, are off by that factor."""
    first = start.best("device") if start else None
    last = verified.best("device") if verified else None
    return first[1] / last[1] if first and last and last[1] > 0 else None


def steady_start(drift: "float | None") -> bool:
    """A drift (`vendor_drift`) within START_TOLERANCE either way, or none to judge."""
    return drift is None or 1.0 / START_TOLERANCE <= drift <= START_TOLERANCE


def verify_hall_of_fame(state: ShapeState, evaluator: Evaluator, db: CampaignDB, log: Callable[[str], None]) -> None:
    """Skipped when already recorded; the caller skips it on the simulator."""
    if not len(state.hof) or db.verified(state.name) is not None:
        return
    if "with_baselines" not in inspect.signature(evaluator.evaluate).parameters:
        log(f"{state.name}: the evaluator cannot measure baselines interleaved; hall of fame not re-verified")
        return
    genomes = [ind.genome for ind in state.hof]
    log(f"{state.name}: re-verifying the hall of fame ({len(genomes)} kernels) interleaved with the vendor baselines")
    measurements, baselines = evaluator.evaluate(genomes, state.problem, with_baselines=True)
    for m in measurements:
        m.problem = state.name
    db.record_verified(state.name, baselines, measurements)
    if not steady_start(vendor_drift(state.baselines, baselines)):
        start, now = state.baselines.best("device"), baselines.best("device")
        log(f"{state.name}: the best vendor baseline took {now[1]:.2f} us ({now[0]}) at the re-verification and "
            f"{start[1]:.2f} us ({start[0]}) when the shape started: the GPU's clock or power state moved between "
            "them, so this shape's search-time speedups are off by that factor (the re-verified ones stand)")
