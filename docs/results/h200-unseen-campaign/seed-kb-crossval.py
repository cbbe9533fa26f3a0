"""Leave-one-shape-out check, on real H200 measurements, of a larger seed_from ("knowledge base").

For each public shape P taken as unseen: two simulated single-shape campaigns with the public
campaign's settings, whose seed_from is (a) the campaign's own list or (b) that list plus 14 more H200
bench results, every file with P's measurements removed. The figure is the best speedup against the
best vendor, as measured on the H200 at P (median over the result files that timed it), among the
first population's genomes (the seeds); "known" counts the seeds with such a measurement.

    python docs/results/h200-unseen-campaign/seed-kb-crossval.py $(shapes of the public suite) > out.log
"""
import json, shutil, subprocess, sys, statistics, sqlite3, tempfile
from pathlib import Path
REPO = Path(__file__).resolve().parents[3]
R = REPO / "docs" / "results"
WORK = Path(tempfile.mkdtemp(prefix="seed-kb-"))
COMMITTED = ["h200-public-2/public-small.json", "h200-public-2/public-large.json", "h200-public-2026-11-29.json",
             "h200-cpasync/bench.json", "h200-public-families/campaign-A", "h200-public-families/campaign-B"]
EXTRA = ["h200-families/public.json", "h200-families/skinny-variants.json", "h200-families/lean.json",
         "h200-families/large-focused.json", "h200-families/unaligned.json", "h200-k-pitch/diag.json",
         "h200-k-pitch/splitk.json", "h200-k-pitch/unaligned.json", "h200-public-suite.json",
         "h200-public-grid-30static.json", "h200-public-llm-30static.json", "h200-bench-7shapes-14static.json",
         "h200-public-2/unaligned-vectorised-unpad.json", "h200-unaligned-first.json"]
TRUTH = sorted(set(COMMITTED[:4] + EXTRA + ["h200-public-2026-11-30.json", "h200-public-3/bench-A.json", "h200-public-3/bench-B.json",
                                            "h200-public-families/bench-A.json", "h200-public-families/bench-B.json"]))
shapes = [l for l in sys.argv[1:]]
truth = {}
for f in TRUTH:
    d = json.load(open(R / f))
    for s in d["shapes"]:
        if s["problem"] not in shapes: continue
        bv = min(t["median_us"] for t in s["baselines"]["device"].values())
        for k in s.get("kernels") or []:
            m = k["measurement"]
            if m["status"] == "ok" and m.get("device"):
                truth.setdefault(s["problem"], {}).setdefault(k["genome"]["id"], []).append(bv / m["device"]["median_us"])
def filtered(src, held, dst):
    src = R / src
    if src.is_dir():
        shutil.copytree(src, dst)
        hof = dst / "hall_of_fame" / f"{held}.json"
        if hof.exists(): hof.unlink()
        return dst
    d = json.load(open(src))
    d["shapes"] = [s for s in d["shapes"] if s.get("problem") != held]
    dst.write_text(json.dumps(d)); return dst
import re
base = open(REPO / "experiments" / "campaigns" / "h200-public-families.yaml").read()
# the campaign as this check ran it (before the screen was adopted): no screen, 14 evaluations a shape
base = re.sub(r"\n  screen: \d+.*(\n {20,}#.*)*", "", base)
base = re.sub(r"evaluations_per_shape: \d+.*", "evaluations_per_shape: 14", base)
head, rest = base.split("seed_from:\n", 1)
tail = rest[rest.index("families:"):]
rows = []
for held in shapes:
    out = {}
    for label, files, generalist in (("committed", COMMITTED, False), ("kb", COMMITTED + EXTRA, False),
                                     ("generalist", COMMITTED, True)):
        w = WORK / f"{held}-{label}"; shutil.rmtree(w, ignore_errors=True); w.mkdir(parents=True)
        paths = [filtered(f, held, w / f"src{i}" if (R / f).is_dir() else w / f"src{i}.json") for i, f in enumerate(files)]
        y = head.replace("suite: ../suites/public.yaml", f"shapes: [{held}]") + "seed_from:\n" + "".join(f"  - {p}\n" for p in paths) + tail
        y = y.replace("  seed_fraction: 1.0\n", "  seed_fraction: 1.0\n" + ("  seed_generalist: true\n" if generalist else ""))
        (w / "c.yaml").write_text(y)
        r = subprocess.run([sys.executable, "-m", "experiments.cli", "run", str(w / "c.yaml"), "--backend", "simulator",
                            "--out", str(w / "run"), "--no-live"], capture_output=True, text=True, cwd=REPO)
        if r.returncode: print(held, label, r.stderr[-500:]); continue
        c = sqlite3.connect(w / "run" / "campaign.db")
        ids = [g for (g,) in c.execute("select genome_id from proposals where round=0")]
        known = [statistics.median(truth.get(held, {})[g]) for g in ids if g in truth.get(held, {})]
        out[label] = (len(ids), len(known), max(known) if known else None)
    rows.append((held, out))
    print(held, out, flush=True)
json.dump(rows, open(WORK / "rows.json", "w"))
g = statistics.geometric_mean
for other in ("kb", "generalist"):
    pairs = [(o["committed"][2], o[other][2]) for _, o in rows
             if o.get("committed", (0, 0, None))[2] and o.get(other, (0, 0, None))[2]]
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    print(f"geomean of the best known seed: committed {g(a):.4f}, {other} {g(b):.4f}; {other} better by >1% at "
          f"{sum(y > x * 1.01 for x, y in pairs)}, worse at {sum(y < x / 1.01 for x, y in pairs)} of {len(pairs)} shapes")
