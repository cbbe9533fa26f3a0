"""How the analytic model ranks what the campaigns measured at these nine shapes (none of them in its
calibration data): Spearman per shape over every measured kernel, and the measured time of the model's
favourite over the best. Usage: python docs/results/h200-unseen-6/modelrank.py CAMPAIGN_DIR..."""
import math, sqlite3, sys
from evaluator.sim_fit import spearman
from evaluator.simulator import SimulatedEvaluator
from genome import Genome, Problem

sim = SimulatedEvaluator()
for folder in sys.argv[1:]:
    c = sqlite3.connect(f"file:{folder}/campaign.db?mode=ro", uri=True)
    by: dict = {}
    for pr, us, js in c.execute("SELECT e.problem, e.device_us, g.json FROM evaluations e JOIN genomes g "
                                "ON g.id = e.genome_id WHERE e.status = 'ok'"):
        by.setdefault(pr, []).append((us, Genome.from_json(js)))
    print(f"\n{folder}\n\n| shape | kernels | Spearman | model's favourite / best (measured) |\n|---|---|---|---|")
    rhos, picks = [], []
    for pr, items in by.items():
        P = Problem.parse(pr)
        pts = [(us, sim.predict_us(g, P)) for us, g in items]
        pts = [(a, b) for a, b in pts if math.isfinite(b)]
        rho = spearman([a for a, _ in pts], [b for _, b in pts])
        pick = min(pts, key=lambda x: x[1])[0] / min(a for a, _ in pts)
        rhos.append(rho); picks.append(pick)
        print(f"| {pr} | {len(pts)} | {rho:.2f} | {pick:.3f} |")
    print(f"| mean / median | | {sum(rhos) / len(rhos):.3f} | {sorted(picks)[len(picks) // 2]:.3f} |")
