"""The `evogemm` command line."""

from __future__ import annotations

import argparse
import importlib
import os
import sqlite3
import json
import math
import sys
import time
from pathlib import Path
from typing import Sequence

from genome import Genome, InvalidGenome, Problem
from genome.genome import GenomeIdMismatch
from templates import default_family, family_registry, get_family, get_space


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def _load_genome(path: str) -> Genome:
    p = Path(path)
    if not p.exists():
        raise CliError(f"no such genome file: {path}")
    try:
        return Genome.load(p)
    except GenomeIdMismatch as exc:
        try:  # an edited genome: what is wrong with its content matters more than its stale id
            get_space(exc.genome.family).validate(exc.genome)
        except ValueError as invalid:  # InvalidGenome, or an unknown family
            raise CliError(f"{path}: {invalid} (its 'id' is stale too: the file was edited after it was "
                           "written; remove the 'id' key)") from exc
        raise CliError(f"{path}: {exc}") from exc
    except (ValueError, TypeError) as exc:
        raise CliError(f"{path}: {exc}") from exc


# -- space ----------------------------------------------------------------------------------------

def cmd_space(args: argparse.Namespace) -> int:
    try:
        family = get_family(args.family)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    space = family.space
    print(space.describe())
    facts = family.describe()
    print(f"\ntemplate: {facts['template']}\nbuilt for: {facts['arch']} (compute capability "
          f"{facts['min_compute_capability']}), nvcc {' '.join(facts['nvcc_flags'])}\n"
          f"simulator model: {facts['simulator_model'] or 'none (the simulator reports its genomes unsupported)'}"
          f"\nseed genomes: {facts['seeds']}")
    compile_raw = math.prod(len(p.choices) for p in space.params if p.kind == "compile")
    if compile_raw > 1_000_000:  # the count checks every combination: say why nothing shows for a while
        print(f"\ncounting the valid builds among {compile_raw:,} compile-time combinations...", file=sys.stderr,
              flush=True)
    # One pass: the count, and the runtime settings, which depend only on a few compile-time choices (the
    # scheduler): counted on one representative build per distinct compile-time signature of the runtime rules.
    compile_valid = 0
    representatives: dict[str, dict] = {}
    for base in space.enumerate_valid("compile"):
        compile_valid += 1
        representatives.setdefault(str(base.get("scheduler")), base)
    runtime_valid = max(space.valid_size("runtime", base) for base in representatives.values())
    print()
    print(f"size: {space.raw_size():,} raw parameter combinations; {compile_valid:,} valid compile-time "
          f"configurations (distinct builds); up to {runtime_valid:,} distinct runtime knob settings per build")
    if args.json:
        print(json.dumps({"family": space.family, "raw_size": space.raw_size(), "valid_builds": compile_valid,
                          "params": {p.name: {"choices": list(p.choices), "kind": p.kind} for p in space.params},
                          "rules": {r.name: r.description for r in space.rules}}, indent=1))
    return 0


# -- render / compile ------------------------------------------------------------------------------

def cmd_render(args: argparse.Namespace) -> int:
    from templates import render
    genome = _load_genome(args.genome)
    try:
        kernel = render(genome)
    except InvalidGenome as exc:
        raise CliError(str(exc)) from exc
    if args.output:
        Path(args.output).write_text(kernel.source)
        print(f"wrote {args.output} ({len(kernel.source)} bytes); runtime knobs {list(kernel.knobs)}")
    else:
        sys.stdout.write(kernel.source)
    return 0


def cmd_compile(args: argparse.Namespace) -> int:
    from evaluator.compile import Compiler, ToolchainError
    genome = _load_genome(args.genome)
    space = get_space(genome.family)
    problem = Problem.parse(args.shape) if args.shape else None
    try:
        genome = space.validate(genome, problem)
    except InvalidGenome as exc:
        raise CliError(str(exc)) from exc
    compiler = Compiler.default(args.cache, timeout_s=args.timeout)
    try:
        tools = compiler.tools
    except ToolchainError as exc:
        raise CliError(str(exc)) from exc
    print(f"genome {genome.id}: {genome.short()}")
    print(f"nvcc: {tools.nvcc} ({tools.nvcc_version}); CUTLASS {tools.cutlass_version}")
    start = time.monotonic()
    result = compiler.build(genome)
    wall = time.monotonic() - start
    if result.cached:
        state = "cache hit"
        detail = f"(built earlier in {result.seconds:.1f} s; looked up in {wall:.2f} s)"
    else:
        state = "built"
        detail = f"in {result.seconds:.1f} s"
    if result.ok:
        print(f"{state}: {result.library} {detail}")
        print(f"build key {result.build_key}; registers {result.registers}; runtime knobs {list(result.knobs)}")
        print(f"log: {result.log}")
        return 0
    print(f"FAILED ({state}) {detail}: {result.reason}")
    if result.log:
        print(f"log: {result.log}")
    return 1


# -- entry point ----------------------------------------------------------------------------------

def package_version() -> str:
    """The installed package's version; from a source tree that is not installed, pyproject.toml's."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("evogemm")
    except PackageNotFoundError:
        pass
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        text = pyproject.read_text()
    except OSError:
        return "unknown"
    try:
        import tomllib
        return str(tomllib.loads(text)["project"]["version"])
    except ImportError:  # Python 3.10: no tomllib
        import re
        found = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
        return found.group(1) if found else "unknown"
    except (KeyError, ValueError):
        return "unknown"


def add_command(sub: argparse._SubParsersAction, name: str, text: str) -> argparse.ArgumentParser:
    """A sub-command whose one-line `text` is both its entry in `evogemm --help` and its own --help."""
    return sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evogemm",
        description="Evolve FP16 GEMM (HGEMM) CUDA kernels per problem shape, and measure them honestly.")
    parser.add_argument("--version", action="version", version=f"evogemm {package_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = add_command(sub, "space", "show a template family's search space, its size and its rules")
    p.add_argument("family", nargs="?", default=default_family(),
                   help=f"template family (known: {', '.join(family_registry().names())})")
    p.add_argument("--json", action="store_true", help="also print the space as JSON")
    p.set_defaults(func=cmd_space)

    p = add_command(sub, "render", "print (or write) the CUDA source of a genome")
    p.add_argument("genome", help="genome JSON file")
    p.add_argument("-o", "--output", help="write the source here instead of stdout")
    p.set_defaults(func=cmd_render)

    p = add_command(sub, "compile", "render and build one kernel into the cache")
    p.add_argument("genome", help="genome JSON file")
    p.add_argument("--shape", help="also check the genome against this problem (MxNxK)")
    p.add_argument("--cache", help="kernel cache directory (default $EVOGEMM_CACHE or ~/.cache/evogemm/kernels)")
    p.add_argument("--timeout", type=float, default=600, help="per-build timeout in seconds (default 600)")
    p.set_defaults(func=cmd_compile)

    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(sub)
    return parser


# Modules that add their own sub-commands through `register(subparsers)`.
COMMAND_MODULES: tuple[str, ...] = ("experiments.bench", "experiments.campaign_cli", "experiments.prebuild",
                                     "experiments.dataset", "experiments.report_html", "experiments.export",
                                     "experiments.ablation_arms_cli")


def expected_errors() -> tuple[type[BaseException], ...]:
    """Errors that are the user's situation, not a bug: printed as one line, exit status 2."""
    from evaluator.compile import ToolchainError
    from evaluator.factory import NoGpuError
    from evaluator.worker_pool import WorkerStartError
    from experiments.campaign_folder import CampaignRefused
    # ImportError: a backend or plug-in whose package is not installed (e.g. Ray), said as such
    return (CliError, ValueError, ToolchainError, NoGpuError, WorkerStartError, CampaignRefused, sqlite3.DatabaseError,
            OSError, ImportError)


def main(argv: "Sequence[str] | None" = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    expected = expected_errors()
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # the reader went away (`evogemm space | head`): nothing is wrong
        sys.stderr.close()
        return 0
    except expected as exc:
        if os.environ.get("EVOGEMM_DEBUG") and not isinstance(exc, CliError):
            raise
        hint = "" if isinstance(exc, CliError) else " (EVOGEMM_DEBUG=1 shows the traceback)"
        print(f"evogemm {args.command}: error: {exc}{hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"evogemm {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    # Run through the importable module, so that sub-commands raising experiments.cli.CliError
    # are caught here (under -m this file is __main__, a second copy of the module).
    from experiments.cli import main as _main
    sys.exit(_main())
