"""`evogemm export DIR... --out PKG`: the winners of one or several campaigns as a standalone,
pip-installable package.

    PKG/
      pyproject.toml, README.md
      <name>/__init__.py, _op.py, _table.py, _abi.py, __main__.py   the loader (experiments/export_runtime/,
                                      and evaluator/kernel_abi.py as _abi.py): needs torch, not evogemm or nvcc
      <name>/dispatch.json            {"entries": [{m, n, k, kernel, library, knobs, arch, speedup}], "not_dispatched": [...]}
      <name>/provenance.json          campaigns, the GPU and software they ran on, the build toolchain, date
      <name>/kernels/<genome id>/     kernel.so, kernel.cu, genome.json, measurements.json (one per shape it serves)

A shape is dispatched when its kernel beat torch.matmul (the fallback) by more than --min-speedup
in the campaign's own measurement on a GPU. Simulated figures never dispatch a kernel unless
--include-simulated says so; every kernel is verified again on the GPU that first loads it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from evaluator.compile import BuildResult, Compiler, ToolchainError
from evolution.db import CampaignDB
from templates import get_family, render

from .export_select import Choice, ExportError, choose, measurement_record, unfinished_shapes

RUNTIME_DIR = Path(__file__).resolve().parent / "export_runtime"
ABI_MODULE = Path(__file__).resolve().parents[1] / "evaluator" / "kernel_abi.py"

PYPROJECT = """[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "{version}"
description = "FP16 GEMM kernels evolved by evogemm for {n} shape(s); torch.matmul fallback elsewhere"
requires-python = ">=3.9"
dependencies = ["torch>=2.4"]

[tool.setuptools]
packages = ["{name}"]
include-package-data = true

[tool.setuptools.package-data]
"{name}" = ["*.json", "kernels/*/*"]
"""


def _cached(choice: Choice, compiler: Compiler) -> "Path | None":
    key = choice.measurement.build_key
    path = compiler.entry_dir(key) / "kernel.so" if key else None
    return path if path is not None and path.is_file() else None


def _libraries(choices: "list[Choice]", compiler: Compiler, build: bool,
               log: Callable[[str], None]) -> "dict[str, Path | ExportError]":
    """Shape -> the compiled library of its chosen kernel: from the build cache, else built now
    (all missing ones in parallel, in the compiler's pool), else why not."""
    out: "dict[str, Path | ExportError]" = {}
    missing = []
    for choice in choices:
        found = _cached(choice, compiler)
        if found is not None and choice.genome.patches:   # a patched kernel passes the build's import check again
            vetted = compiler.vet(choice.genome, BuildResult(choice.genome.id, choice.measurement.build_key or "",
                                                             ok=True, library=str(found)))
            if not vetted.ok:
                out[choice.shape] = ExportError(f"{choice.shape}: kernel {choice.genome.id}: {vetted.reason}")
                continue
        if found is not None:
            out[choice.shape] = found
        elif not build:
            out[choice.shape] = ExportError(f"{choice.shape}: kernel {choice.genome.id} is not in the build cache "
                                            f"{compiler.cache_dir} and --no-build was given")
        else:
            missing.append(choice)
    if missing:
        log(f"building {len(missing)} kernel(s) not in the cache, in parallel (an sm90 build takes ~45 s on a "
            "big machine, minutes on a small one)")
        try:
            results = compiler.build_many([c.genome for c in missing], progress=lambda done, total, r: log(
                f"  built {done}/{total}: {r.genome_id} {'ok' if r.ok else 'FAILED'} ({r.seconds:.0f} s)"))
        except ToolchainError as exc:
            raise ExportError(f"kernels not in the build cache cannot be built here: {exc}") from exc
        for choice, result in zip(missing, results):
            out[choice.shape] = Path(result.library) if result.ok and result.library else ExportError(
                f"{choice.shape}: building kernel {choice.genome.id} failed: {result.reason}")
    return out


def _campaign_facts(folder: str) -> dict[str, Any]:
    db = CampaignDB(Path(folder) / "campaign.db", readonly=True)
    try:
        config = db.get_meta("config") or {}
        return {"folder": str(Path(folder).resolve()), "name": config.get("name"), "seed": config.get("seed"),
                "simulated": bool(db.get_meta("simulated")),
                "sessions": [{k: s.get(k) for k in ("mode", "evaluator", "started", "host") if k in s}
                             for s in db.sessions()]}
    finally:
        db.close()


def _copy_runtime(pkg: Path, name: str) -> None:
    pkg.mkdir(parents=True)
    for src in sorted(RUNTIME_DIR.glob("*.py")):
        text = src.read_text()
        if src.name == "package_init.py":  # not __init__.py here: evogemm never imports the runtime (it needs torch)
            (pkg / "__init__.py").write_text(text.replace("{package}", name))
        else:
            (pkg / src.name).write_text(text)
    shutil.copyfile(ABI_MODULE, pkg / "_abi.py")


def export(folders: Sequence[str], out: Path, name: str = "evogemm_kernels", min_speedup: float = 1.0,
           include_simulated: bool = False, build: bool = True, cache: "str | None" = None,
           force: bool = False, log: Callable[[str], None] = print,
           library_of: "Callable[[Choice], Path] | None" = None) -> dict[str, Any]:
    """Write the package; returns the dispatch table written (see the module docstring).
    `library_of` finds a kernel's compiled library (default: the build cache, else nvcc)."""
    if not name.isidentifier():
        raise ExportError(f"--name {name!r} is not a Python package name")
    out = Path(out)
    _check_out(out, folders, force)
    choices = choose(folders)
    unfinished = {folder: shapes for folder in folders if (shapes := unfinished_shapes(folder))}
    if not choices:
        if unfinished:
            raise ExportError("no shape has finished yet: " + "; ".join(
                f"{folder} stopped with {sum(s.values())} evaluation(s) recorded at {len(s)} shape(s) and no hall "
                f"of fame written (finish it with `evogemm resume {folder}`)" for folder, s in unfinished.items()))
        raise ExportError("the campaigns hold no measured kernel (did they run?)")
    for folder, shapes in unfinished.items():
        left_out = sorted(shape for shape in shapes if shape not in choices)  # not taken from another campaign
        if left_out:
            log(f"{folder}: {len(left_out)} shape(s) not finished, left out ({', '.join(left_out)}); "
                f"`evogemm resume {folder}` finishes them")
    compiler = Compiler.default(cache)
    tmp = out.with_name(f".{out.name}.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    pkg = tmp / name
    entries, skipped, missing = [], [], []
    try:
        _copy_runtime(pkg, name)
        libraries = {} if library_of else _libraries(list(choices.values()), compiler, build, log)
        for shape, choice in sorted(choices.items(), key=lambda kv: _shape_key(kv[0])):
            speedup = choice.speedup_vs_torch
            why = None
            if choice.simulated and not include_simulated:
                why = "measured only by the simulator (--include-simulated dispatches it anyway)"
            elif speedup is None:
                why = "no torch.matmul time to compare with"
            elif speedup <= min_speedup:
                why = f"{speedup:.3f}x torch.matmul, not above --min-speedup {min_speedup:g}"
            lib = library_of(choice) if library_of else libraries[shape]
            if isinstance(lib, ExportError):
                if build:
                    raise lib
                missing.append({"shape": shape, "kernel": choice.genome.id, "why": str(lib)})
                log(f"{shape}: left out: {lib}")
                continue
            family = get_family(choice.genome.family)
            kdir = pkg / "kernels" / choice.genome.id
            kdir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(lib, kdir / "kernel.so")
            (kdir / "kernel.cu").write_text(render(choice.genome).source)
            (kdir / "genome.json").write_text(choice.genome.to_json())
            (kdir / f"measurements-{shape}.json").write_text(json.dumps(measurement_record(choice), indent=1))
            m, n, k = _shape_key(shape)
            record = {"m": m, "n": n, "k": k, "shape": shape, "kernel": choice.genome.id,
                      "library": f"kernels/{choice.genome.id}/kernel.so",
                      "knobs": list(family.knob_vector(choice.genome)), "arch": family.arch,
                      "family": choice.genome.family, "speedup": speedup,
                      "speedup_vs_best_vendor": choice.speedup_vs_vendor, "time_us": choice.time_us,
                      "torch_us": choice.torch_us, "simulated": choice.simulated, "campaign": choice.campaign}
            if why:
                skipped.append({**record, "why": why})
                log(f"{shape}: kernel {choice.genome.id} exported, not dispatched: {why}")
            else:
                entries.append(record)
                log(f"{shape}: kernel {choice.genome.id} dispatched ({speedup:.3f}x torch.matmul"
                    + (", SIMULATED" if choice.simulated else "") + ")")
        if not entries and not skipped:
            raise ExportError("no kernel could be exported: " + "; ".join(m["why"] for m in missing))
        table = {"version": 1, "entries": entries, "not_dispatched": skipped, "not_exported": missing}
        (pkg / "dispatch.json").write_text(json.dumps(table, indent=1))
        tools = _toolchain(compiler)
        provenance = {
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "command": "evogemm " + " ".join(sys.argv[1:]),
            "campaigns": [str(Path(f).resolve()) for f in folders],
            "campaign_facts": [_campaign_facts(f) for f in folders],
            "toolchain": ({"nvcc": tools.nvcc_version, "cutlass": tools.cutlass_version} if tools else None),
            "min_speedup": min_speedup, "include_simulated": include_simulated,
        }
        (pkg / "provenance.json").write_text(json.dumps(provenance, indent=1, default=str))
        (tmp / "pyproject.toml").write_text(PYPROJECT.format(dist=name.replace("_", "-"), name=name, n=len(entries),
                                                             version=dt.date.today().strftime("%Y.%m.%d")))
        (tmp / "README.md").write_text(_readme(name, entries, skipped))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return table


def _check_out(out: Path, folders: Sequence[str], force: bool) -> None:
    """--out may not be, hold or lie inside a campaign being exported (replacing it would delete the
    campaign), and --force replaces only an earlier export (or an empty folder), never any folder."""
    target = out.resolve()
    for folder in folders:
        src = Path(folder).resolve()
        if target == src or src.is_relative_to(target) or target.is_relative_to(src):
            raise ExportError(f"--out {out} is, holds or lies inside the campaign {folder}; choose another --out")
    if not out.exists():
        return
    if not force:
        raise ExportError(f"{out} exists; choose another --out or pass --force to replace it")
    if not out.is_dir():
        raise ExportError(f"{out} is a file, not an earlier export; choose another --out")
    empty = not any(out.iterdir())
    earlier_export = (out / "pyproject.toml").is_file() and any(out.glob("*/provenance.json"))
    if not (empty or earlier_export):
        raise ExportError(f"{out} is not an earlier export (no pyproject.toml and provenance.json): --force "
                          f"replaces only those; choose another --out")


def _toolchain(compiler: Compiler):
    """The nvcc and CUTLASS this machine builds with (the cache's kernels were built with them:
    both are part of every build key), or None where there is no nvcc."""
    try:
        return compiler.tools
    except ToolchainError:
        return None


def _shape_key(shape: str) -> tuple[int, int, int]:
    m, n, k = (int(x) for x in shape.split("x"))
    return m, n, k


def _readme(name: str, entries: list[dict], skipped: list[dict]) -> str:
    lines = [f"# {name}: evolved FP16 GEMM kernels (exported by evogemm)", "",
             "```", "pip install .", f"python -m {name}          # verify on this GPU, list what it serves", "```", "",
             "```python", f"import torch, {name}", f"c = {name}.hgemm(a, w)   # a (M, K), w (N, K) fp16 CUDA: a @ w.T",
             f"{name}.patch_linear()      # opt in: nn.Linear uses the kernels for these shapes", "```", "",
             "| shape | kernel | family | time (us) | torch.matmul (us) | speedup | measured |",
             "|---|---|---|---|---|---|---|"]
    for e in entries:
        lines.append(f"| {e['shape']} | {e['kernel']} | {e['family']} | {e['time_us']:.2f} | {e['torch_us']:.2f} | "
                     f"{e['speedup']:.3f}x | {'simulated' if e['simulated'] else 'GPU'} |")
    if skipped:
        lines += ["", "Exported but not dispatched (torch.matmul serves these shapes):", ""]
        lines += [f"- {e['shape']}: {e['why']}" for e in skipped]
    return "\n".join(lines) + "\n"


def cmd_export(args: argparse.Namespace) -> int:
    from experiments.cli import CliError
    try:
        table = export(args.campaigns, Path(args.out), name=args.name, min_speedup=args.min_speedup,
                       include_simulated=args.include_simulated, build=not args.no_build, cache=args.cache,
                       force=args.force, log=lambda s: print(s, flush=True))
    except ExportError as exc:
        raise CliError(str(exc)) from exc
    print(f"wrote {args.out}: {len(table['entries'])} dispatched shape(s), {len(table['not_dispatched'])} exported "
          f"for the record, {len(table['not_exported'])} left out; install it with `pip install {args.out}`")
    if any(e["simulated"] for e in table["entries"] + table["not_dispatched"]):
        print("note: some figures come from the analytic simulator, not a GPU")
    if not _has_gpu():
        print("note: no GPU here: the kernels cannot be verified on this machine; the package verifies each one "
              f"the first time it loads on a GPU (`python -m {args.name}`)")
    return 0


def _has_gpu() -> bool:
    try:
        import torch
        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def register(sub: argparse._SubParsersAction) -> None:
    from experiments.cli import add_command
    p = add_command(sub, "export", "write the campaigns' best kernels as a standalone pip-installable package "
                                   "with a PyTorch op (hgemm) that falls back to torch.matmul")
    p.add_argument("campaigns", nargs="+", help="campaign folders (from `evogemm run --out`)")
    p.add_argument("--out", required=True, help="package folder to write")
    p.add_argument("--name", default="evogemm_kernels", help="Python package name (default evogemm_kernels)")
    p.add_argument("--min-speedup", type=float, default=1.0,
                   help="dispatch a shape only when its kernel beat torch.matmul by more than this (default 1.0)")
    p.add_argument("--include-simulated", action="store_true",
                   help="also dispatch kernels whose figures come from the simulator")
    p.add_argument("--no-build", action="store_true",
                   help="do not run nvcc: shapes whose kernel is not in the build cache are left out (listed)")
    p.add_argument("--cache", help="kernel build cache (default $EVOGEMM_CACHE or ~/.cache/evogemm/kernels)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.set_defaults(func=cmd_export)
