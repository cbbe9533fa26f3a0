"""Shapes searched side by side (`population.shapes_in_flight: W`), one per evaluator lane (a GPU
actor on Ray; on the single-process GPU backend the shapes take turns on the one GPU).

Shape i opens once every shape up to i - W is done, and starts from those shapes only (seeds from
their halls of fame, the policy of the last of them, a budget share of what they left): its inputs
do not depend on how fast the shapes beside it run, so the search is the same whether the shapes
run side by side or, on an evaluator with one lane, in turn. Shapes are opened on the main thread in
shape order and searched on lane threads; the first failure stops the others at their next round
(unfinished shapes stay open for `resume`) and is raised.
"""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any


class CampaignStopped(RuntimeError):
    """A shape thread stopped because another one failed (the shape is left open for resume)."""


def run_windowed(engine: Any, window: int, lanes: int) -> None:
    """Run every shape of `engine` once, at most min(window, lanes) at a time."""
    lanes = max(1, min(window, lanes))
    n = len(engine.problems)
    done: set[int] = set()
    running: dict["Future[None]", tuple[int, int]] = {}
    free = list(range(lanes))
    nxt = 0
    error: "BaseException | None" = None
    engine.log(f"shapes in flight: up to {window} ({lanes} at once on this evaluator)")
    with ThreadPoolExecutor(max_workers=lanes, thread_name_prefix="evogemm-shape") as pool:
        try:
            while nxt < n or running:
                while nxt < n and free and all(j in done for j in range(nxt - window + 1)):
                    state = engine._open_shape(nxt, engine.problems[nxt], engine._inputs(nxt))
                    if state is None:  # skipped: done at once
                        done.add(nxt)
                    else:
                        lane = free.pop(0)
                        running[pool.submit(engine._search_shape, state, lane)] = (nxt, lane)
                    nxt += 1
                if not running:
                    continue
                finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for future in sorted(finished, key=lambda f: running[f][0]):
                    idx, lane = running.pop(future)
                    future.result()
                    done.add(idx)
                    free.append(lane)
                free.sort()
        except BaseException as exc:
            error = exc
            engine.stopping.set()
            if running:
                engine.log(f"stopping ({type(exc).__name__}): the {len(running)} shape(s) in flight stop after their "
                           "current round (what they measured is kept; `resume` goes on from there)")
        if error is not None:
            for future in list(running):
                try:
                    future.result()
                except BaseException:  # noqa: BLE001 - CampaignStopped, or a second failure: the first is raised
                    pass
    if error is not None:
        raise error
