"""Every base of every vendor mirror (session 49): for each shape of a bench, the algorithms its cuBLASLt baselines
recorded (the fastest baseline's first, evolution/vendor_seeds.vendor_picks), and for each pick and each family of
genome_files.FAMILIES that takes it, the mirror made from every hand-picked base that gives a valid one (the
campaign makes one: the base its simulator model prices fastest). Also the same mirror with the cluster dropped
(1x1), from every base. Writes OUT_DIR/FAMILY-ID8.json and notes.json beside OUT_DIR: per genome, at which shapes,
which pick, which base (its seed file), with or without the vendor's cluster, and whether a campaign (model of
DEVICE, default h200) would have made it: family_pick, the mirror of that family; campaign_seed, one of the two
mirrors `population.vendor_seeds: 2` times first).
usage: make_base_sweep.py BENCH_JSON OUT_DIR [PICKS_A_SHAPE [DEVICE]]"""
import dataclasses
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "h100-vendor-algos" / "scripts"))
from genome_files import campaign_seeds, spaces_and_bases, write_genomes  # noqa: E402

from evolution.seeding import model_order  # noqa: E402
from evolution.vendor_seeds import _mirror_params, mirror, vendor_picks  # noqa: E402
from genome import Genome  # noqa: E402

bench = json.load(open(sys.argv[1]))
out = Path(sys.argv[2])
per_shape = int(sys.argv[3]) if len(sys.argv) > 3 else 1
device = sys.argv[4] if len(sys.argv) > 4 else "h200"
spaces, handpicked = spaces_and_bases()
picked: dict = {}
for shape in bench["shapes"]:
    problem, seeds = campaign_seeds(shape, spaces, handpicked, 2, device, revision=1)   # as measured: session 48's
    seeded = {g.id for g, _, _ in seeds}
    bs = shape["baselines"]
    times = {n: v["median_us"] for n, v in bs["device"].items() if v and v.get("median_us")}
    price = model_order(problem, device=device)
    for rank, pk in enumerate(vendor_picks(bs.get("algorithms", {}), times)[:per_shape]):
        for cluster_kept in (True, False):
            p = pk if cluster_kept else dataclasses.replace(pk, cluster_m=1, cluster_n=1)
            for space in spaces:
                campaign = mirror(p, space, problem, handpicked, price=price, revision=1)
                for item in handpicked:
                    base = Genome.from_dict(item["genome"])
                    if base.family != space.family:
                        continue
                    params = _mirror_params(p, space, dict(base.param_dict))
                    if params is None:
                        break
                    try:
                        g = space.validate(space.repair(Genome.make(space.family, space.canonical(params)),
                                                        random.Random(0)), problem)
                    except ValueError:
                        continue
                    if any(g.get(k) != params[k] for k in ("tile_m", "tile_n", "cluster_m", "cluster_n")):
                        continue
                    why = {"shape": shape["problem"], "pick": rank, "what": pk.what, "cluster": cluster_kept,
                           "base": item.get("file", item.get("name", "?")),
                           "family_pick": campaign is not None and campaign.id == g.id,
                           "campaign_seed": g.id in seeded}
                    entry = picked.setdefault(g.id, (g, []))
                    entry[1].append(why)
    print(shape["problem"], len(picked))
write_genomes(picked, out, out.parent / "notes.json")
