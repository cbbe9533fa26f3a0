"""What the engine shows while it runs (a mixin of evolution/engine.py's Engine): each round's
policy state, strategy events and log line, the session's throughput and GPU utilisation, the
progress snapshot, and the lock that keeps log lines, progress and callbacks whole when several
shapes run side by side."""

from __future__ import annotations

import time
from typing import Any

from .shape_state import ShapeState


class EngineViews:
    """Engine methods for logs, progress and utilisation."""

    def _report_round(self, state: ShapeState, n_new: int, reused: int, failures: int) -> None:
        """A round told: the policy's state into the database, the strategy's events and the round's
        line into the log."""
        policy = getattr(state.strategy, "policy", None)
        probs: dict[str, float] = {}
        if policy is not None:
            probs = dict(policy.probabilities())
            self.db.log_policy(state.name, state.rounds - 1, self.journal.seq, self.config.selection.policy, probs,
                               policy.stats(), policy.state_dict())
        events = getattr(state.strategy, "events", None)
        for line in list(events or []):
            self.log(f"{state.name}: {line}")
        if events:
            events.clear()
        self._log_round(state, n_new, reused, failures, probs)

    def _log_round(self, state: ShapeState, n_new: int, reused: int, failures: int, probs: dict) -> None:
        best = state.best
        top = ", ".join(f"{a} {p:.2f}" for a, p in sorted(probs.items(), key=lambda t: -t[1])[:3])
        busy = self.utilisation()
        self.log(f"{state.name} round {state.rounds - 1}: {n_new} new, {reused} reused, {failures} failed; "
                 f"{state.evaluations}/{state.allocation.get('evaluations') or '-'} evaluations; best "
                 + (f"{best.time_us:.2f} us ({state.speedup:.3f}x vs best vendor)" if best and state.speedup
                    else f"{best.time_us:.2f} us" if best else "none")
                 + (f"; p: {top}" if top else "")
                 + (f"; GPU busy {100 * busy['gpu_busy_fraction']:.0f}% of {busy['wall_seconds']:.0f} s"
                    f" ({busy['gpu_seconds_during_builds']:.1f} s of it while nvcc builds ran)"
                    if busy and "gpu_busy_fraction" in busy else ""))
        if busy:
            self.db.set_meta({"utilisation": busy})

    def utilisation(self) -> "dict[str, Any] | None":
        """This session's throughput: builds (count, nvcc-seconds, per minute, queue depth) whenever
        the evaluator reports them, and GPU busy time against wall time since the engine started
        (overall, and per GPU actor on Ray) when it times on GPUs. None for an evaluator that
        reports nothing (e.g. the plain simulator)."""
        stats = getattr(self._evaluator, "stats", None)
        if stats is None:
            return None
        s = stats()
        wall = max(1e-9, time.monotonic() - self._started)
        out: dict[str, Any] = {"wall_seconds": round(wall, 3), "builds": int(s.get("builds", 0)),
                               "build_seconds": round(float(s.get("build_seconds", 0.0)), 3)}
        for key in ("builds_per_minute", "build_queue_depth", "runner_queue_depth", "gpu_actors", "actor_failures"):
            if key in s:
                out[key] = s[key]
        if not self.simulated:
            busy = float(s.get("gpu_busy_seconds", 0.0))
            gpus = max(1, int(s.get("gpu_actors", 1) or 1))
            out.update(gpu_busy_seconds=round(busy, 3), gpu_busy_fraction=round(min(1.0, busy / (wall * gpus)), 4),
                       gpu_seconds_during_builds=round(float(s.get("gpu_seconds_during_builds", 0.0)), 3))
            if "gpu_busy_by_actor" in s:
                out["gpu_busy_by_actor"] = s["gpu_busy_by_actor"]
        return out

    # -- progress ---------------------------------------------------------------------------------
    def snapshot(self) -> list[dict[str, Any]]:
        out = []
        for problem in self.problems:
            st = self.states.get(problem.name)
            policy = getattr(st.strategy, "policy", None) if st else None
            best = st.best if st else None
            bv = st.baselines.best("device") if st and st.baselines else None
            out.append({
                "shape": problem.name,
                "status": st.status if st else "pending",
                "evaluations": st.evaluations if st else 0,
                "budget": st.allocation.get("evaluations") if st else None,
                "best_us": best.time_us if best else None,
                "vendor": bv[0] if bv else None,
                "vendor_us": bv[1] if bv else None,
                "speedup": st.speedup if st else None,
                "probabilities": dict(policy.probabilities()) if policy is not None else {},
                "failures": sum(st.failures.values()) if st else 0,
                "reason": st.done_reason if st else None,
                "replayed": st.replayed if st else 0,
            })
        return out

    def _refresh(self) -> None:
        if self.progress is not None:
            with self._ui_lock:
                self.progress.update(self.snapshot(), simulated=self.simulated, evaluator=self.evaluator_description)

    def _locked_log(self, line: str) -> None:
        with self._ui_lock:
            self._log(line)
