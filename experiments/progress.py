"""Live progress (rich) and the campaign log file.

`LiveProgress` shows one row per shape: status, evaluations done / budget, best time, best vendor
and speedup, and the three most likely operators. On a terminal it is a `rich.live.Live` table;
elsewhere (CI, pipes) it prints one line when a shape finishes. `CampaignLog` appends timestamped
lines to campaign.log (and optionally echoes them).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence, TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from .report import is_skipped, skip_reason


class CampaignLog:
    """Append-only text log; one instance per campaign session (no global logging config)."""

    def __init__(self, path: "str | Path", echo: "TextIO | None" = None):
        self.path = Path(path)
        self._fh = self.path.open("a", buffering=1)
        self.echo = echo

    def __call__(self, line: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        self._fh.write(f"{stamp} {line}\n")
        if self.echo is not None:
            print(line, file=self.echo, flush=True)

    def close(self) -> None:
        self._fh.close()


def _fmt_us(us: "float | None") -> str:
    if us is None:
        return "-"
    return f"{us / 1000:.2f} ms" if us >= 10000 else f"{us:.2f} us"


def progress_table(rows: Sequence[Mapping[str, Any]], simulated: "bool | None", title: str = "") -> Table:
    label = " [SIMULATED]" if simulated else ""
    table = Table(title=f"{title}{label}", expand=False, show_lines=False)
    for col in ("shape", "status", "evals", "best", "best vendor", "speedup", "fail", "operators (p)"):
        table.add_column(col, justify="right" if col in ("evals", "best", "speedup", "fail") else "left")
    for r in rows:
        budget = r.get("budget")
        evals = f"{r['evaluations']}/{budget}" if budget is not None else str(r["evaluations"])
        vendor = f"{r['vendor']} {_fmt_us(r['vendor_us'])}" if r.get("vendor") else "-"
        sp = r.get("speedup")
        speed = f"{sp:.3f}x" if sp else "-"
        if sp:
            speed = f"[green]{speed}[/green]" if sp >= 1 else f"[yellow]{speed}[/yellow]"
        probs = r.get("probabilities") or {}
        top = " ".join(f"{a}:{p:.2f}" for a, p in sorted(probs.items(), key=lambda t: -t[1])[:3])
        status = r["status"]
        if is_skipped(r):
            status = "[yellow]skipped[/yellow]"
        elif status == "running":
            status = "[bold cyan]running[/bold cyan]"
        table.add_row(r["shape"], status, evals, _fmt_us(r.get("best_us")), vendor, speed, str(r.get("failures", 0)),
                      top)
    return table


class SilentProgress:
    """A progress view that shows nothing (campaigns run as a step of another command)."""

    def update(self, rows: Any, simulated: Any = None, evaluator: Any = None) -> None:
        pass


class LiveProgress:
    """Receives engine snapshots; renders them live on a terminal, else one line per finished shape."""

    def __init__(self, console: "Console | None" = None, title: str = "evogemm", live: "bool | None" = None):
        self.console = console or Console(file=sys.stdout)
        self.title = title
        self.live_enabled = self.console.is_terminal if live is None else live
        self._live: "Live | None" = None
        self._done: set[str] = set()
        self._announced = False
        self.last: list[dict[str, Any]] = []

    def __enter__(self) -> "LiveProgress":
        if self.live_enabled:
            self._live = Live(console=self.console, refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None

    def update(self, rows: Sequence[Mapping[str, Any]], simulated: "bool | None" = None,
               evaluator: "str | None" = None) -> None:
        self.last = [dict(r) for r in rows]
        if evaluator and not self._announced:
            self._announced = True
            if simulated:
                self.console.print(f"[bold yellow]evaluator: {evaluator} -- SIMULATED: no GPU, every time is a model "
                                   "estimate[/bold yellow]", highlight=False, soft_wrap=True)
            else:
                self.console.print(f"evaluator: {evaluator}", highlight=False, soft_wrap=True)
        for r in rows:  # a skipped shape gets its own line, live table or not
            if r["shape"] not in self._done and is_skipped(r):
                self._done.add(r["shape"])
                self.console.print(f"[bold yellow]{r['shape']}: SKIPPED: {skip_reason(r.get('reason'))}"
                                   "[/bold yellow]", highlight=False, soft_wrap=True)
        if self._live is not None:
            self._live.update(progress_table(rows, simulated, self.title))
            return
        for r in rows:
            if r["status"] == "done" and r["shape"] not in self._done:
                self._done.add(r["shape"])
                sp = r.get("speedup")
                tag = " (simulated)" if simulated else ""
                self.console.print(
                    f"{r['shape']:>18}: {r['evaluations']} evaluations, best {_fmt_us(r.get('best_us'))}"
                    + (f" = {sp:.3f}x best vendor ({r['vendor']} {_fmt_us(r['vendor_us'])}){tag}" if sp else "")
                    + (f"  [{r['reason']}]" if r.get("reason") else ""), highlight=False, soft_wrap=True)
