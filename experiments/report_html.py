"""`evogemm report DIR|FILE [...] [--out OUTDIR]`: report.md, a self-contained report.html and
PNG figures for any mix of campaign folders, bench results and ablation folders.

    evogemm report runs/quickstart                       # -> runs/quickstart/report/
    evogemm report bench-out/bench.json runs/ablation --out rep

Figures (each where the input has the data; experiments/plots.py draws them): the best kernel's
speedup per shape against each baseline with its measured range and the A/A noise; convergence
(best-so-far speedup against evaluations, per shape, or per strategy for an ablation); operator
weights over the campaign from the policy log; a roofline. report.html embeds the PNGs as base64
data URIs, so it is one file to send; report.md links the PNG files beside it. A campaign run
writes its folder's report/ once at its end (`write_campaign_plots`) and links the figures from
its report.md; a failure there is logged as a warning and never fails the campaign.
"""

from __future__ import annotations

import argparse
import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from .report import atomic_write
from .report_inputs import NotAReportInput, Section, Table, input_kind, load_section

REPORT_DIR = "report"          # a campaign's (or a single folder's) report folder
MARKDOWN_FILE = "report.md"
HTML_FILE = "report.html"

# (Section attribute, file stem, caption)
FIGURES = (
    ("speedup", "speedup", "Speedup of the best kernel over each baseline, per shape (log scale, dashed line at "
                           "1.0). Error bars, where timings were measured: the range of the per-round ratios when "
                           "both were timed in the same interleaved rounds, else each side's range over its repeats "
                           "(10th-90th percentile from 10 repeats on). Grey band: the A/A noise, a kernel timed "
                           "against its twin in the same rounds."),
    ("convergence", "convergence", "Best-so-far speedup over the best vendor baseline against evaluations."),
    ("weights", "operator_weights", "The selection policy's probability of each operator arm after each round, "
                                    "stacked, over the whole campaign (dashed lines: the next shape starts)."),
    ("roofline", "roofline", "TFLOP/s against arithmetic intensity (bytes = 2(MK+KN+MN), A, W and C moved once) "
                             "under the tensor peak and the HBM roof; a grey line joins a shape's kernel to its "
                             "vendor point."),
)


@dataclass
class ReportFiles:
    folder: Path
    markdown: Path
    html: Path
    plots: list[Path] = field(default_factory=list)


def write_report_folder(sections: Sequence[Section], out: "str | Path") -> ReportFiles:
    """Draw every figure the sections have into `out`, then write report.md and report.html."""
    from . import plots
    draw: dict[str, Callable[[Any, Path], Path]] = {"speedup": plots.speedup_plot,
                                                    "convergence": plots.convergence_plot,
                                                    "weights": plots.weights_plot,
                                                    "roofline": plots.roofline_plot}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    figures: list[list[tuple[str, Path]]] = []
    for i, section in enumerate(sections):
        prefix = "" if len(sections) == 1 else f"{i + 1:02d}-{_slug(section.title)}-"
        mine = []
        for attr, stem, caption in FIGURES:
            data = getattr(section, attr)
            if data is not None:
                mine.append((caption, draw[attr](data, out / f"{prefix}{stem}.png")))
        figures.append(mine)
    files = ReportFiles(out, out / MARKDOWN_FILE, out / HTML_FILE, [p for f in figures for _, p in f])
    atomic_write(files.markdown, render_markdown(sections, figures))
    atomic_write(files.html, render_html(sections, figures))
    return files


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:40] or "input"


# -- markdown and html -----------------------------------------------------------------------------

_SIM_BANNER = ("Simulated. These figures come from the analytic simulator (no GPU): every time and speedup is a "
               "model estimate, not a measurement.")


def render_markdown(sections: Sequence[Section], figures: Sequence[Sequence[tuple[str, Path]]]) -> str:
    lines = ["# evogemm report", "", f"{len(sections)} input(s): " + ", ".join(f"`{s.source}`" for s in sections),
             f"The same report with the figures embedded: [{HTML_FILE}]({HTML_FILE}).", ""]
    for section, figs in zip(sections, figures):
        lines += [f"## {section.title}{' (simulated)' if section.simulated else ''}", "", f"Source: `{section.source}`",
                  ""]
        if section.simulated:
            lines += [f"> **{_SIM_BANNER}**", ""]
        lines += [f"- {line}" for line in section.lines] + [""]
        for caption, path in figs:
            lines += [f"![{path.stem}]({path.name})", "", caption, ""]
        if section.table:
            lines += _markdown_table(section.table) + [""]
    return "\n".join(lines)


def _markdown_table(table: Table) -> list[str]:
    def cell(text: str) -> str:
        return str(text).replace("|", "\\|")
    return (["| " + " | ".join(cell(h) for h in table.headers) + " |", "|" + "---|" * len(table.headers)]
            + ["| " + " | ".join(cell(c) for c in row) + " |" for row in table.rows])


_CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1400px; padding: 0 1em; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
.sim { background: #fdecea; border-left: 4px solid #c62828; padding: 0.6em 1em; font-weight: 600; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { color: #555; font-size: 0.92em; margin-top: 0.3em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; display: block; overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.55em; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
tr:nth-child(even) td { background: #fafafa; } code { background: #f3f3f3; padding: 0 0.2em; }
.source { color: #666; }
"""


def _inline(text: str) -> str:
    """Escape for HTML, with `code` and **bold** spans."""
    text = re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(str(text)))
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)


def render_html(sections: Sequence[Section], figures: Sequence[Sequence[tuple[str, Path]]]) -> str:
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             "<title>evogemm report</title>", f"<style>{_CSS}</style></head><body>", "<h1>evogemm report</h1>",
             f'<p class="source">{len(sections)} input(s): '
             + ", ".join(f"<code>{html.escape(s.source)}</code>" for s in sections) + "</p>"]
    for section, figs in zip(sections, figures):
        sim = " (simulated)" if section.simulated else ""
        parts += [f"<section><h2>{html.escape(section.title + sim)}</h2>",
                  f'<p class="source">Source: <code>{html.escape(section.source)}</code></p>']
        if section.simulated:
            parts.append(f'<p class="sim">{html.escape(_SIM_BANNER)}</p>')
        if section.lines:
            parts.append("<ul>" + "".join(f"<li>{_inline(line)}</li>" for line in section.lines) + "</ul>")
        for caption, path in figs:
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            parts.append(f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(path.stem)}">'
                         f"<figcaption>{html.escape(caption)}</figcaption></figure>")
        if section.table:
            parts.append(_html_table(section.table))
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _html_table(table: Table) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in table.headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in table.rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# -- the end of a campaign run ------------------------------------------------------------------------

def write_campaign_plots(folder: "str | Path", db: Any, log: Callable[[str], Any]) -> list[str]:
    """Write `folder`/report/ (figures, report.md, report.html) from the campaign's open database.
    Returns the HTML page and the PNGs, relative to `folder`, for the campaign's report.md to link;
    [] when it failed: the failure is logged as a warning and never raised."""
    from .report_inputs import campaign_section
    folder = Path(folder)
    try:
        files = write_report_folder([campaign_section(db, str(folder))], folder / REPORT_DIR)
    except Exception as exc:  # a figure must never fail a campaign whose results are all recorded
        log(f"warning: the report figures were not written ({type(exc).__name__}: {exc}); "
            f"`evogemm report {folder}` tries again")
        return []
    return [str(p.relative_to(folder)) for p in (files.html, *files.plots)]


# -- CLI -----------------------------------------------------------------------------------------------

def default_output(inputs: Sequence[str]) -> Path:
    """DIR/report/ for a single folder (a campaign, an ablation, a bench output folder); otherwise the
    caller must say where (CliError)."""
    from .cli import CliError
    if len(inputs) == 1 and Path(inputs[0]).is_dir():
        return Path(inputs[0]) / REPORT_DIR
    what = f"{len(inputs)} inputs" if len(inputs) > 1 else f"a file input ({inputs[0]})"
    raise CliError(f"give --out OUTDIR: with {what} there is no default report folder (only a single folder "
                   "input gets DIR/report/)")


def cmd_report(args: argparse.Namespace) -> int:
    from .cli import CliError
    try:
        kinds = [input_kind(p) for p in args.inputs]
    except NotAReportInput as exc:
        raise CliError(str(exc)) from exc
    out = Path(args.out) if args.out else default_output(args.inputs)
    try:
        sections = [load_section(p) for p in args.inputs]
    except NotAReportInput as exc:
        raise CliError(str(exc)) from exc
    except (KeyError, TypeError) as exc:
        raise CliError(f"an input is not in the expected format: missing or wrong field {exc}") from exc
    files = write_report_folder(sections, out)
    for path, kind, section in zip(args.inputs, kinds, sections):
        print(f"{kind} {path}: {section.title}" + (" (SIMULATED)" if section.simulated else ""))
    print(f"wrote {files.markdown}, {files.html} and {len(files.plots)} figure(s): "
          + ", ".join(p.name for p in files.plots))
    return 0


def register(sub: Any) -> None:
    from .cli import add_command
    p = add_command(sub, "report", "write report.md, a self-contained report.html and PNG figures for campaign "
                                   "folders, bench results and ablation folders")
    p.add_argument("inputs", nargs="+", metavar="DIR",
                   help="a campaign folder (campaign.db), a bench result JSON (or the folder `evogemm bench --out` "
                        "wrote), an ablation folder (ablation.json); any mix")
    p.add_argument("--out", metavar="OUTDIR",
                   help="report folder (default DIR/report/ for a single folder; required otherwise)")
    p.set_defaults(func=cmd_report)
