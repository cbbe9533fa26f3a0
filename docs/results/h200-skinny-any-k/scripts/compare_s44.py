"""Session 44: the any-K loads change, old template against new, from two benches of one device call.

usage: python compare_s44.py NEW/bench.json OLD/bench.json > compare-s44.md

Per shape: the best vendor baseline in each bench, the best skinny_mma kernel under each template, the median over
the skinny genomes of (old time / new time) for the same genome, and the best kernel of any family against the best
vendor in each bench. The aligned shapes are the control: their kernel's code did not change."""

from __future__ import annotations

import json
import statistics
import sys


def load(path: str) -> dict:
    out = {}
    for s in json.load(open(path))["shapes"]:
        base = s["baselines"]["device"]
        vendor = min(v["median_us"] for v in base.values())
        kernels = {}
        for k in s["kernels"]:
            m = k["measurement"]
            if m["status"] == "ok" and m.get("device"):
                kernels[k["genome"]["id"]] = (k["genome"]["family"], m["device"]["median_us"])
        out[s["problem"]] = (vendor, kernels)
    return out


def main(new_path: str, old_path: str) -> None:
    new, old = load(new_path), load(old_path)
    print("| shape | vendor new (us) | vendor old | best skinny new | best skinny old | old/new, same genome (median, n) | "
          "best kernel / vendor, new | old |")
    print("|---|---|---|---|---|---|---|---|")
    for shape, (vn, kn) in new.items():
        vo, ko = old[shape]
        sk_new = {g: t for g, (f, t) in kn.items() if f == "skinny_mma"}
        sk_old = {g: t for g, (f, t) in ko.items() if f == "skinny_mma"}
        both = [sk_old[g] / sk_new[g] for g in sk_new if g in sk_old]
        med = f"{statistics.median(both):.3f} ({len(both)})" if both else "-"
        bn = min(sk_new.values(), default=float("nan"))
        bo = min(sk_old.values(), default=float("nan"))
        an = vn / min(t for _, t in kn.values()) if kn else float("nan")
        ao = vo / min(t for _, t in ko.values()) if ko else float("nan")
        print(f"| {shape} | {vn:.1f} | {vo:.1f} | {bn:.1f} | {bo:.1f} | {med} | {an:.3f} | {ao:.3f} |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
