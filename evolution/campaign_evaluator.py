"""The evaluator a campaign runs on: made from its `evaluator:` settings, on the backend it recorded
at its first start (a resume never switches between simulated and measured times), refused when no
limit of its budget could stop it on that backend, and recorded in the database."""

from __future__ import annotations

from typing import Any, Callable

from evaluator.api import Evaluator

from .budget import refuse_unending
from .db import CampaignDB
from .plugins import Plugins
from .rng import derive_seed


def make_campaign_evaluator(config: Any, db: CampaignDB, plugins: Plugins, seed: int,
                            log: Callable[[str], None]) -> "tuple[Evaluator, bool, str]":
    """(evaluator, simulated, its description), with the backend and description stored in `db`."""
    from evaluator.factory import make_evaluator, takes_option
    cfg = config.evaluator
    recorded = db.get_meta("resolved_backend")
    backend = recorded or cfg.backend
    registry = plugins.evaluators
    options: dict[str, Any] = dict(cfg.options)
    for key, value in (("seed", derive_seed(seed, "evaluator") % (1 << 31)), ("noise", cfg.noise),
                       ("timing", dict(cfg.timing))):
        if key not in options and takes_option(backend, key, registry) and (key != "timing" or value):
            options[key] = value
    ev = make_evaluator(backend, families=plugins.families, registry=registry, **options)
    simulated = bool(getattr(ev, "simulated", False))
    refuse_unending(config, simulated, before=ev.close)
    resolved = backend if backend not in ("auto",) else ("simulator" if simulated else "gpu")
    description = ev.describe()
    if recorded is None:
        db.set_meta({"resolved_backend": resolved, "simulated": simulated, "evaluator_description": description})
    db.set_session_evaluator(description)
    log(f"evaluator: {description}" + ("  [SIMULATED: no GPU; every time is a model estimate]" if simulated else ""))
    return ev, simulated, description
