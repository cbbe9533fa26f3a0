"""What the mirror scripts share: the campaign families they mirror into, the mirrors a campaign makes from a bench's
recorded baselines, and writing picked genomes as files (FAMILY-ID8.json) with a notes file that says, per genome,
at which shapes and why it was picked."""
import json
from pathlib import Path

from evolution.seeding import load_handpicked, model_order
from evolution.vendor_seeds import vendor_seeds
from genome import Problem
from templates import family_registry

FAMILIES = ["sm90_cutlass", "sm90_lean", "sm90_swapab", "sm90_splitk"]


def spaces_and_bases():
    """The families' search spaces and their hand-picked seeds (the mirrors' bases)."""
    registry = family_registry()
    return [registry.resolve(f).space for f in FAMILIES], load_handpicked(FAMILIES)


def campaign_seeds(shape: dict, spaces, bases, count: int, device: str, revision: int):
    """(problem, the mirrors a campaign times first at a bench's shape record): `population.vendor_seeds: count`,
    from the algorithms and times its vendor baselines recorded, each mirror's base the one DEVICE's simulator model
    prices fastest, mirrors of `revision` (evolution/vendor_seeds.py)."""
    bs, problem = shape["baselines"], Problem.parse(shape["problem"])
    times = {n: v["median_us"] for n, v in bs["device"].items() if v and v.get("median_us")}
    return problem, vendor_seeds(problem, spaces, bs.get("algorithms", {}), times, bases, count, set(),
                                 price=model_order(problem, device=device), revision=revision)


def pick(picked: dict, genome, why: str) -> None:
    """Remember `genome` (once) with one more reason."""
    picked.setdefault(genome.id, (genome, []))[1].append(why)


def write_genomes(picked: dict, out: Path, notes: Path) -> None:
    """Each picked genome as out/FAMILY-ID8.json, and `notes`: {FAMILY-ID8: its reasons}."""
    out.mkdir(parents=True, exist_ok=True)
    reasons = {}
    for gid, (genome, why) in picked.items():
        (out / f"{genome.family}-{gid[:8]}.json").write_text(json.dumps(genome.to_dict(), indent=1) + "\n")
        reasons[f"{genome.family}-{gid[:8]}"] = why
    notes.write_text(json.dumps(reasons, indent=1) + "\n")
    print(len(picked), "genomes")
