"""The A/A figures of benches run with the session-51 pairing, and what the older protocol would have quoted
from the same samples: `python analyse.py BENCH.json...` prints, per shape over 1 ms, the focused run's A/A
(median, the median's 95% interval, the range, rounds), then from its samples round by round: the range of the
first 5 rounds paired with the reference before each sample only (the protocol until session 50) and with the
reference on both sides (this session's). `python analyse.py --earlier` summarises the 5-round focused A/A
figures over 1 ms of every bench committed under docs/results: their ranges, and how far their medians sat
from 1."""
from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from evaluator.api import Timing  # noqa: E402
from evaluator.paired import paired_ratio  # noqa: E402


def pct(r) -> str:
    return "-" if r is None else f"{100 * (r.high - r.low) / r.median:.2f}%"


def main(paths: "list[str]") -> None:
    print("| bench | shape | kernel us | A/A median | 95% interval | width | range (rounds) | "
          "first 5, before only | first 5, both sides |")
    print("|---|---|---|---|---|---|---|---|---|")
    for path in paths:
        data = json.loads(Path(path).read_text())
        for s in data["shapes"]:
            f = s.get("focused") or {}
            aa = f.get("aa")
            if not aa or (f.get("kernel_us") or 0) < 1000:
                continue
            width = (aa["ci_high"] - aa["ci_low"]) / aa["median"]
            old = new = None
            smp = f.get("samples")
            if smp:
                k, t = Timing(**smp["kernel"]), Timing(**smp["twin"])

                def first(x: Timing, keep_after: bool) -> Timing:
                    return replace(x, samples_us=x.samples_us[:5], ref_samples_us=x.ref_samples_us[:5],
                                   ref_after_us=x.ref_after_us[:5] if keep_after else None)
                old = paired_ratio(first(k, False), first(t, False))
                new = paired_ratio(first(k, True), first(t, True))
            print(f"| {Path(path).parent.name} | {s['problem']} | {f['kernel_us']:.0f} | {aa['median']:.4f} | "
                  f"{aa['ci_low']:.4f}-{aa['ci_high']:.4f} | {100 * width:.1f}% | "
                  f"{aa['low']:.4f}-{aa['high']:.4f} ({aa['rounds']}) | {pct(old)} | {pct(new)} |")


def earlier() -> None:
    import statistics
    root = Path(__file__).resolve().parents[1]
    rows = []
    for path in sorted(root.glob("**/bench.json")):
        data = json.loads(path.read_text())
        h200 = "H200" in data.get("meta", {}).get("device", "")
        for s in data.get("shapes", []):
            f = s.get("focused") or {}
            aa = f.get("aa")
            if aa and (f.get("kernel_us") or 0) >= 1000 and aa.get("rounds") == 5:
                rows.append((h200, (aa["high"] - aa["low"]) / aa["median"], aa["median"] - 1.0))
    for h200, name in ((True, "H200"), (False, "other GPUs")):
        sel = [r for r in rows if r[0] == h200]
        if not sel:
            continue
        ranges, devs = [r[1] for r in sel], [abs(r[2]) for r in sel]
        print(f"{name}: {len(sel)} focused A/A figures of 5 rounds at shapes over 1 ms; range median "
              f"{100 * statistics.median(ranges):.2f}%, largest {100 * max(ranges):.2f}%, over 2% in "
              f"{sum(x > 0.02 for x in ranges)}; |median - 1| median {100 * statistics.median(devs):.2f}%, "
              f"largest {100 * max(devs):.2f}%, standard deviation of the medians "
              f"{100 * statistics.pstdev([r[2] for r in sel]):.2f}%")


if __name__ == "__main__":
    earlier() if sys.argv[1:] == ["--earlier"] else main(sys.argv[1:])
