"""A per-family bias correction of the shipped seed model (each family's median log error on one half of the
shapes, alone or split skinny / not skinny), scored on the other half. usage: python .../family_bias.py RECORDS.json"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shipped import favourites, load  # noqa: E402
from evaluator import sim_fit  # noqa: E402


def main(path: str) -> None:
    recs, fams, groups, meas, pred = load(path)
    skinny = np.array([r.problem.m <= 64 or r.problem.n <= 64 for r in recs])

    def score(p, mask) -> str:
        hits, spearman, behind = 0, 0.0, []
        for idx, pick, best in favourites(recs, meas, p, mask):
            hits += meas[pick] <= 1.03 * meas[best]
            behind.append(meas[pick] / meas[best])
            spearman += sim_fit.spearman(p[idx], meas[idx])
        n = len(behind)
        return (f"{hits}/{n} within 3%, Spearman {spearman / n:.3f}, "
                f"favourite/best geomean {np.exp(np.mean(np.log(behind))):.3f}")

    for fit, test in (("A", "B"), ("B", "A")):
        for scope, classes in (("all", (np.ones(len(recs), bool),)), ("skinny-split", (skinny, ~skinny))):
            p = pred.copy()
            for f in set(fams):
                for cls in classes:
                    m = (fams == f) & (groups == fit) & cls
                    c = np.median(np.log(meas[m] / pred[m])) if m.sum() >= 5 else 0.0
                    p[(fams == f) & cls] *= np.exp(c)
            print(f"fit {fit} test {test} [{scope}]")
            print("   shipped  all:", score(pred, groups == test), "| skinny:", score(pred, (groups == test) & skinny))
            print("   corrected all:", score(p, groups == test), "| skinny:", score(p, (groups == test) & skinny))


if __name__ == "__main__":
    main(sys.argv[1])
