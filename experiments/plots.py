"""The report's figures, drawn with matplotlib's Agg canvas (no pyplot, no global state).

Each function takes plain data (the dataclasses below) and a PNG path, draws one figure with axis
labels, a title and a legend, writes it and returns the path. Data that came from the analytic
simulator says so in the title and in a red note on the figure. experiments/report_inputs.py
builds the data from campaign databases, bench JSON and ablation folders.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

NOMINAL_HBM_TBPS = 4.8    # H200 datasheet HBM3e bandwidth (the roof used when nothing was measured)
PEAK_TFLOPS = 989.0       # dense fp16 tensor peak of the H100/H200 (datasheet)
SIMULATED_NOTE = "SIMULATED: analytic model estimates, no GPU measurement"
_NICE_RATIOS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0,
                5.0, 10.0, 20.0, 50.0, 100.0)
_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*", "<", ">")


@dataclass(frozen=True)
class Ratio:
    """A speedup (baseline time / kernel time) and, where the measurement spread is known, its range."""

    value: float
    low: "float | None" = None
    high: "float | None" = None


@dataclass
class SpeedupData:
    """Per shape, one speedup per series (a baseline, or a paired figure); None where there is none.
    `noise`: per shape, the range of an A/A ratio (a kernel timed against its twin), drawn as a band."""

    title: str
    shapes: list[str]
    series: dict[str, list["Ratio | None"]]
    noise: "list[tuple[float, float] | None] | None" = None
    simulated: bool = False


@dataclass
class Curve:
    label: str
    x: list[float]
    y: list[float]
    low: "list[float] | None" = None    # a band (min over seeds, say) under the line
    high: "list[float] | None" = None
    emphasis: bool = False              # a summary line (drawn thick and black)


@dataclass
class ConvergenceData:
    title: str
    curves: list[Curve]
    xlabel: str = "evaluations"
    ylabel: str = "best-so-far speedup vs best vendor"
    simulated: bool = False


@dataclass
class WeightSegment:
    """The operator policy of one shape: after each round (at `x` evaluations of the campaign) the
    probability of each arm; the last round's weights hold until `end`."""

    label: str
    x: list[float]
    weights: dict[str, list[float]]
    end: float
    start: "float | None" = None   # where the shape's evaluations start (before its first policy update)


@dataclass
class WeightsData:
    title: str
    segments: list[WeightSegment]
    xlabel: str = "evaluations (campaign, shapes in the order they ran)"
    simulated: bool = False


@dataclass(frozen=True)
class RoofPoint:
    label: str
    intensity: float   # FLOP per byte
    tflops: float


@dataclass
class RooflineData:
    title: str
    series: dict[str, list[RoofPoint]]
    hbm_tbps: float = NOMINAL_HBM_TBPS
    hbm_label: str = "nominal, datasheet"
    peak_tflops: float = PEAK_TFLOPS
    simulated: bool = False
    pair: "tuple[str, str] | None" = None   # two series whose points of the same label are joined
    extra: list[str] = field(default_factory=list)


# -- helpers ----------------------------------------------------------------------------------------

def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _title(fig: Any, ax: Any, text: str, simulated: bool) -> None:
    """The title; for simulated data with " (simulated)" and a red note under it."""
    if not simulated:
        ax.set_title(text)
        return
    fig.suptitle(text + ("" if "simulated" in text.lower() else " (simulated)"))
    ax.set_title(SIMULATED_NOTE, fontsize=8, color="crimson")


def _finish(fig: Any, path: "str | Path") -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def _ratio_axis(ax: Any, values: Sequence[float]) -> None:
    """A log y axis of ratios with readable ticks (0.8x, 1x, 1.25x, ...) around the data and 1.0."""
    finite = [v for v in values if v and v > 0 and math.isfinite(v)] + [1.0]
    lo, hi = min(finite) / 1.12, max(finite) * 1.12
    ax.set_yscale("log")
    ax.set_ylim(lo, hi)
    ticks = [t for t in _NICE_RATIOS if lo <= t <= hi]
    while len(ticks) > 9:
        keep = set(ticks[::2]) | {1.0}
        ticks = [t for t in ticks if t in keep]
    if len(ticks) < 4:  # a narrow range: evenly spaced round ticks
        for step in (0.01, 0.02, 0.05, 0.1):
            ticks = [round(step * i, 6) for i in range(math.ceil(lo / step), math.floor(hi / step) + 1)]
            if len(ticks) <= 9:
                break
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}x"))
    ax.axhline(1.0, color="black", linewidth=1.0, linestyle="--", zorder=1, label="1.0 (parity)")
    ax.grid(True, axis="y", alpha=0.3)


def _shape_axis(ax: Any, shapes: Sequence[str]) -> None:
    n = len(shapes)
    crowded = n > 6 or sum(len(s) for s in shapes) > 60   # six long names overlap as well as many short
    ax.set_xticks(range(n))
    ax.set_xticklabels(shapes, rotation=55 if crowded else 0, ha="right" if crowded else "center",
                       fontsize=8 if n > 12 else 9)
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_xlabel("shape (MxNxK)")


def _legend(ax: Any, n_entries: int, outside: bool = False) -> None:
    if outside or n_entries > 8:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7 if n_entries > 12 else 8,
                  ncol=1 if n_entries <= 20 else 2, frameon=False)
    else:
        ax.legend(loc="best", fontsize=8, framealpha=0.85)


# -- the four figures ---------------------------------------------------------------------------------

def speedup_plot(data: SpeedupData, path: "str | Path") -> Path:
    """Per shape, the speedup of the best kernel against each series (log y, a line at 1.0), with
    error bars where the measurement range is known and the A/A noise as a grey band."""
    n, names = len(data.shapes), list(data.series)
    if not n or not names:
        raise ValueError("speedup plot: no shapes or no series")
    fig = _figure(max(9.0, 0.42 * n + 4.0), 5.6)
    ax = fig.add_subplot()
    width = 0.72
    step = width / max(len(names), 1)
    values: list[float] = []
    if data.noise and any(data.noise):
        first = True
        for i, band in enumerate(data.noise):
            if band is None:
                continue
            low, high = band
            ax.fill_between([i - width / 2, i + width / 2], [low, low], [high, high], color="0.6", alpha=0.35,
                            linewidth=0, zorder=0, label="A/A noise: a kernel vs its twin (range)" if first else None)
            values += [low, high]
            first = False
    for j, name in enumerate(names):
        xs, ys, lo_err, hi_err = [], [], [], []
        for i, r in enumerate(data.series[name]):
            if r is None or not r.value or r.value <= 0:
                continue
            xs.append(i - width / 2 + step * (j + 0.5))
            ys.append(r.value)
            has = r.low is not None and r.high is not None
            lo_err.append(max(r.value - r.low, 0.0) if has else 0.0)
            hi_err.append(max(r.high - r.value, 0.0) if has else 0.0)
            values += [r.value] + ([r.low, r.high] if has else [])
        if not xs:
            continue
        ax.errorbar(xs, ys, yerr=[lo_err, hi_err] if any(lo_err) or any(hi_err) else None,
                    fmt=_MARKERS[j % len(_MARKERS)], markersize=5, capsize=2, elinewidth=1, linestyle="none",
                    color=f"C{j % 10}", label=name, zorder=3)
    _ratio_axis(ax, values)
    _shape_axis(ax, data.shapes)
    for i in range(1, n):
        ax.axvline(i - 0.5, color="0.85", linewidth=0.6, zorder=0)
    ax.set_ylabel("speedup = baseline time / best kernel time (log)")
    _title(fig, ax, data.title, data.simulated)
    _legend(ax, len(names) + 2, outside=len(names) > 4 or n > 12)
    return _finish(fig, path)


def convergence_plot(data: ConvergenceData, path: "str | Path") -> Path:
    """Best-so-far speedup against evaluations, one line per curve, with its band where given."""
    curves = [c for c in data.curves if c.x and any(v is not None and v > 0 for v in c.y)]
    if not curves:
        raise ValueError("convergence plot: no curve has a value")
    many = len(curves) > 8
    fig = _figure(12.0 if many else 9.5, 5.6)
    ax = fig.add_subplot()
    values: list[float] = []
    plain = [c for c in curves if not c.emphasis]
    for i, c in enumerate(curves):
        ys = [v if v is not None and v > 0 else math.nan for v in c.y]
        if c.emphasis:
            colour, style, width = "black", "-", 2.6
        else:  # ten colours, then the same with another dash: 30 lines stay distinguishable
            k = plain.index(c)
            colour, style, width = f"C{k % 10}", ("-", "--", ":")[(k // 10) % 3], 1.6 if not many else 1.2
        ax.plot(c.x, ys, color=colour, linestyle=style, linewidth=width, label=c.label, drawstyle="steps-post",
                zorder=4 if c.emphasis else 2)
        values += [v for v in ys if not math.isnan(v)]
        if c.low is not None and c.high is not None:
            lows = [v if v is not None and v > 0 else math.nan for v in c.low]
            highs = [v if v is not None and v > 0 else math.nan for v in c.high]
            ax.fill_between(c.x, lows, highs, color=colour, alpha=0.18, linewidth=0, step="post")
            values += [v for v in lows + highs if not math.isnan(v)]
    _ratio_axis(ax, values)
    ax.set_xlim(0, max(max(c.x) for c in curves))
    ax.set_xlabel(data.xlabel)
    ax.set_ylabel(data.ylabel + " (log)")
    _title(fig, ax, data.title, data.simulated)
    ax.grid(True, axis="x", alpha=0.3)
    _legend(ax, len(curves) + 1)
    return _finish(fig, path)


def weights_plot(data: WeightsData, path: "str | Path") -> Path:
    """The selection policy's probability of each arm over the campaign, stacked, one segment per
    shape (boundaries dashed; shape names on the top axis)."""
    segments = [s for s in data.segments if s.x and s.weights]
    if not segments:
        raise ValueError("operator weights plot: the policy log is empty")
    arms = sorted({a for s in segments for a in s.weights})
    colours = {a: c for a, c in zip(arms, _colours(len(arms)))}
    fig = _figure(max(10.0, min(20.0, 0.35 * len(segments) + 8.0)), 5.4)
    ax = fig.add_subplot()
    labelled: set[str] = set()
    starts = []
    gap_label = "before the shape's first policy update"
    for seg in segments:
        if seg.start is not None and seg.start < seg.x[0]:
            ax.axvspan(seg.start, seg.x[0], facecolor="0.9", linewidth=0, label=gap_label)
            gap_label = None
        xs = list(seg.x) + [max(seg.end, seg.x[-1])]
        bottom = [0.0] * len(xs)
        starts.append(seg.start if seg.start is not None else seg.x[0])
        for arm in arms:
            w = list(seg.weights.get(arm, [0.0] * len(seg.x)))
            w = w + [w[-1]]
            top = [b + v for b, v in zip(bottom, w)]
            ax.fill_between(xs, bottom, top, step="post", color=colours[arm], linewidth=0,
                            label=arm if arm not in labelled else None)
            labelled.add(arm)
            bottom = top
    ends = [max(s.end, s.x[-1]) for s in segments]
    for x in starts[1:]:
        ax.axvline(x, color="black", linewidth=0.8, linestyle="--")
    ax.set_xlim(min(starts), max(ends))
    ax.set_ylim(0, 1)
    ax.set_xlabel(data.xlabel)
    ax.set_ylabel("probability of choosing the arm")
    top = ax.secondary_xaxis("top")
    mids = [(a + b) / 2 for a, b in zip(starts, ends)]
    top.set_xticks(mids)
    top.set_xticklabels([s.label for s in segments], rotation=60 if len(segments) > 4 else 0,
                        fontsize=7 if len(segments) > 10 else 8, ha="left" if len(segments) > 4 else "center")
    top.tick_params(length=0)
    _title(fig, ax, data.title, data.simulated)
    _legend(ax, len(arms) + 1, outside=True)
    return _finish(fig, path)


def roofline_plot(data: RooflineData, path: "str | Path") -> Path:
    """TFLOP/s against arithmetic intensity (log-log) under the compute roof and the memory roof."""
    points = [p for pts in data.series.values() for p in pts if p.tflops > 0 and p.intensity > 0]
    if not points:
        raise ValueError("roofline plot: no point")
    fig = _figure(9.5, 6.0)
    ax = fig.add_subplot()
    ridge = data.peak_tflops / data.hbm_tbps
    lo = min(min(p.intensity for p in points), ridge) / 2.5
    hi = max(max(p.intensity for p in points), ridge) * 2.5
    n = 200
    xs = [lo * (hi / lo) ** (i / (n - 1)) for i in range(n)]
    ax.plot(xs, [min(data.peak_tflops, x * data.hbm_tbps) for x in xs], color="black", linewidth=1.6,
            label=f"roofline: {data.peak_tflops:g} TFLOP/s, HBM {data.hbm_tbps:g} TB/s ({data.hbm_label})")
    ax.axvline(ridge, color="0.6", linewidth=0.8, linestyle=":")
    ax.text(ridge * 1.06, data.peak_tflops * 1.22, f"ridge {ridge:.0f} FLOP/B", fontsize=8, color="0.35",
            va="center")
    if data.pair and all(k in data.series for k in data.pair):
        other = {p.label: p for p in data.series[data.pair[1]]}
        for p in data.series[data.pair[0]]:
            q = other.get(p.label)
            if q is not None:
                ax.plot([p.intensity, q.intensity], [p.tflops, q.tflops], color="0.7", linewidth=0.8, zorder=1)
    for j, (name, pts) in enumerate(data.series.items()):
        pts = [p for p in pts if p.tflops > 0 and p.intensity > 0]
        if pts:  # the first series filled and on top, the others hollow: a point hides none behind it
            ax.scatter([p.intensity for p in pts], [p.tflops for p in pts], marker=_MARKERS[j % len(_MARKERS)],
                       s=28 if j == 0 else 46, label=name, zorder=4 if j == 0 else 3,
                       facecolors=f"C{j % 10}" if j == 0 else "none", edgecolors=f"C{j % 10}", linewidths=1.3)
    if len({p.label for p in points}) <= 10:
        first = next(iter(data.series.values()))
        for p in first:
            ax.annotate(p.label, (p.intensity, p.tflops), textcoords="offset points", xytext=(4, -10), fontsize=7,
                        color="0.3")
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator
    for axis in (ax.xaxis, ax.yaxis):  # plain numbers: mathtext labels (10^k) cost most of the drawing time
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        axis.set_minor_locator(NullLocator())
    ax.set_xlim(lo, hi)
    low_y = min(min(p.tflops for p in points), lo * data.hbm_tbps)
    ax.set_ylim(low_y / 2, data.peak_tflops * 1.6)
    ax.set_xlabel("arithmetic intensity, FLOP per byte (2MNK / 2(MK+KN+MN))")
    ax.set_ylabel("TFLOP/s (2MNK / time)")
    _title(fig, ax, data.title, data.simulated)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8, framealpha=0.9)
    return _finish(fig, path)


def _colours(n: int) -> list[Any]:
    from matplotlib import colormaps
    if n <= 10:
        return [f"C{i}" for i in range(n)]
    cmap = colormaps["tab20"] if n <= 20 else colormaps["turbo"]
    return [cmap(i / max(n - 1, 1)) if n > 20 else cmap(i) for i in range(n)]
