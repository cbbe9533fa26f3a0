"""What the session-48 mirror scripts share: the campaign families they mirror into, and writing picked genomes as
files (FAMILY-ID8.json) with a notes file that says, per genome, at which shapes and why it was picked."""
import json
from pathlib import Path

from evolution.seeding import load_handpicked
from templates import family_registry

FAMILIES = ["sm90_cutlass", "sm90_lean", "sm90_swapab", "sm90_splitk"]


def spaces_and_bases():
    """The families' search spaces and their hand-picked seeds (the mirrors' bases)."""
    registry = family_registry()
    return [registry.resolve(f).space for f in FAMILIES], load_handpicked(FAMILIES)


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
