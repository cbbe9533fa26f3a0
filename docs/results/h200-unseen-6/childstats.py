"""Children of the later rounds (round > 0) of each campaign, by arm: how many were measured, how many beat
their parent, the geomean of parent time / child time, and the child's time over the shape's best.
Usage: python docs/results/h200-unseen-6/childstats.py CAMPAIGN_DIR..."""
import json, math, sqlite3, sys
from collections import defaultdict

for folder in sys.argv[1:]:
    c = sqlite3.connect(f"file:{folder}/campaign.db?mode=ro", uri=True)
    best = dict(c.execute("SELECT problem, MIN(device_us) FROM evaluations WHERE status='ok' GROUP BY problem"))
    t = {(pr, g): us for pr, g, us in c.execute("SELECT problem, genome_id, device_us FROM evaluations WHERE status='ok'")}
    st = defaultdict(lambda: {"n": 0, "ok": 0, "fail": 0, "beat": 0, "rel": [], "ratio": []})
    for pr, arm, status, us, par in c.execute(
            "SELECT p.problem, p.arm, e.status, e.device_us, p.parent_ids FROM proposals p LEFT JOIN evaluations e "
            "ON e.genome_id = p.genome_id AND e.problem = p.problem WHERE p.round > 0"):
        s = st[arm]; s["n"] += 1
        if status == "ok":
            s["ok"] += 1; s["rel"].append(us / best[pr])
            parents = [t.get((pr, p)) for p in (json.loads(par) if par else [])]
            parents = [x for x in parents if x]
            if parents:
                s["ratio"].append(min(parents) / us); s["beat"] += us < min(parents)
        elif status:
            s["fail"] += 1
    print(f"\n{folder}: {c.execute('SELECT COUNT(*) FROM evaluations').fetchone()[0]} evaluations\n")
    print("| arm | children | measured | failed | beat their parent | parent / child (geomean) | child / shape's best (median) | within 2% of the shape's best |")
    print("|---|---|---|---|---|---|---|---|")
    for arm, s in sorted(st.items()):
        r, q = sorted(s["rel"]), s["ratio"]
        gm = math.exp(sum(map(math.log, q)) / len(q)) if q else float("nan")
        print(f"| {arm} | {s['n']} | {s['ok']} | {s['fail']} | {s['beat']} ({s['beat'] / max(1, len(q)):.0%}) | {gm:.3f} | "
              f"{r[len(r) // 2]:.3f} | {sum(x < 1.02 for x in r)} |")
