"""Where the shipped seed model's favourite (the lowest predicted time at a shape) is more than 3% behind the
measured best, by shape class and by the two kernels' families. usage: python .../misses.py RECORDS.json"""
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shipped import favourites, load  # noqa: E402


def shape_class(p) -> str:
    if p.m <= 64 or p.n <= 64:
        return "skinny (M or N <= 64)"
    if p.k % 64:
        return "K pitch not 128 B"
    if 2 * p.m * p.n * p.k < 2e10:
        return "small (< 20 GFLOP)"
    return "large"


def main(path: str) -> None:
    recs, fams, _, meas, pred = load(path)
    shapes, misses, behind, family_pairs = Counter(), Counter(), defaultdict(list), Counter()
    for idx, pick, best in favourites(recs, meas, pred, np.ones(len(recs), bool)):
        c = shape_class(recs[idx[0]].problem)
        shapes[c] += 1
        ratio = meas[pick] / meas[best]
        if ratio > 1.03:
            misses[c] += 1
            behind[c].append(ratio)
            family_pairs[(fams[pick], fams[best])] += 1
    print("| shape class | shapes | favourite > 3% behind the measured best | geomean of those (favourite / best) |")
    print("|---|---|---|---|")
    for c in shapes:
        g = float(np.exp(np.mean(np.log(behind[c])))) if behind[c] else 1.0
        print(f"| {c} | {shapes[c]} | {misses[c]} | {g:.3f} |")
    print()
    print("| model favourite family | measured best family | shapes |")
    print("|---|---|---|")
    for (a, b), n in family_pairs.most_common(12):
        print(f"| {a} | {b} | {n} |")


if __name__ == "__main__":
    main(sys.argv[1])
