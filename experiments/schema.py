"""The campaign YAML: a pydantic v2 schema, validated completely before anything runs.

A campaign names the shapes (explicitly or through a suite file), the budget, the population,
the operators and how they are chosen (operator policy, parent selection), the search strategy,
LLM providers, the evaluator and earlier campaigns to seed from. Every model forbids unknown
keys. `load_campaign(path)` returns a `CampaignConfig` or raises `CampaignError` whose message has
one readable line per problem:

    population.size: -3 is not allowed: must be >= 2
    population.sise: unknown key; allowed: size, islands, offspring, ...
    shapes[1]: '12x' is not allowed: cannot read shape '12x'; write it as MxNxK, e.g. 4096x4096x1024
    strategy.name: 'os.path:join' is not allowed: search strategy plug-in 'os.path:join' is a function, ...
    campaign.yaml:7:3: YAML syntax error: mapping values are not allowed here

Plug-ins (template families, operators, selection policy, parent selection, search strategy,
evaluator backend, LLM provider kinds) are named as built-ins or by import path
`package.module:Name` and checked against the registries of `evolution.plugins.make_plugins()`
(one set per validation), kind included. The correctness gate (evaluator.timing tolerance and
seeds) may be made stricter, never looser.

Relative paths (suite, warm_start, seed_from) are resolved against the campaign file's folder,
then the repository root above it (the folder with pyproject.toml); a path that starts with ../
is then searched for without it in every folder above the campaign file (so
`../shared/suites/public.yaml` works from any checkout below a `shared/` folder); last, the
current directory.
`output_dir` is relative to the current directory (default `runs/<name>`).

Minimal example::

    name: quickstart
    seed: 1
    shapes: ["1024x1024x1024", [128, 4096, 4096]]
    budget: {evaluations_per_shape: 64}

The parts: schema_yaml (reading files, error lines), schema_paths (paths, shapes, suites),
schema_plugins (registries, the gate floor), schema_models (the sections); this module holds the
whole campaign and the entry points.
"""

from __future__ import annotations

import copy
import math
import re
import sqlite3
from pathlib import Path
from typing import Any, Mapping

import yaml
from pydantic import Field, PrivateAttr, ValidationError, ValidationInfo, field_validator, model_validator

from evolution.budget import unending_budget
from evolution.seeding import bench_result_file, read_seed_pool
from genome import Problem
from templates import default_family

from .schema_models import (DEFAULT_OPERATORS, Budget, EvaluatorConfig, LlmConfig, OperatorSpec, ParentSelection,
                            Population, Provider, Selection, StrategySpec, Strict, SuiteRef, default_operator_data,
                            default_operators)
from .schema_paths import (BUNDLED_SUITES, ShapeItem, base_dir_of, bundled_suite, is_stored, load_suite, parse_shape,
                           resolve_path)
from .schema_plugins import guarded, new_plugins, plugins_of
from .schema_yaml import CampaignError, at, read_campaign_file, yaml_lines
from .schema_yaml import format_errors as _format_errors

__all__ = [
    "CampaignConfig", "CampaignError", "parse_campaign", "load_campaign", "apply_overrides", "dump_campaign",
    "format_errors", "load_suite", "resolve_path", "parse_shape", "finite", "Budget", "Population", "OperatorSpec",
    "ParentSelection", "Selection", "StrategySpec", "Provider", "LlmConfig", "EvaluatorConfig", "SuiteRef",
    "ShapeItem", "Strict", "DEFAULT_OPERATORS", "default_operators",
]

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class CampaignConfig(Strict):
    name: str
    description: str = ""
    seed: int = Field(0, ge=0)
    output_dir: "str | None" = None
    shapes: "list[ShapeItem] | None" = None
    suite: "SuiteRef | list[SuiteRef] | None" = None
    families: list[str] = Field(default_factory=lambda: [default_family()])
    budget: Budget
    population: Population = Field(default_factory=Population)
    # sub-models with plug-in names default to plain data, validated with the campaign's registries
    operators: list[OperatorSpec] = Field(default_factory=default_operator_data)  # type: ignore[arg-type]
    selection: Selection = Field(default_factory=dict)  # type: ignore[arg-type]
    strategy: StrategySpec = Field(default_factory=dict)  # type: ignore[arg-type]
    llm: LlmConfig = Field(default_factory=dict)  # type: ignore[arg-type]
    evaluator: EvaluatorConfig = Field(default_factory=dict)  # type: ignore[arg-type]
    seed_from: list[str] = Field(default_factory=list)

    _problems: list[Problem] = PrivateAttr(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not _NAME_RE.match(name):
            raise ValueError("must start with a letter or digit and use only letters, digits, '_', '.', '-'")
        return name

    @field_validator("shapes")
    @classmethod
    def _shapes(cls, shapes: "list[str] | None") -> "list[str] | None":
        if shapes is None:
            return None
        if not shapes:
            raise ValueError("the list is empty; give at least one shape")
        return list(dict.fromkeys(shapes))  # drop repeats, keep order

    @field_validator("families")
    @classmethod
    def _families(cls, families: list[str], info: ValidationInfo) -> list[str]:
        """Each family resolves (a plug-in: imports, is a TemplateFamily, its space loads) and is
        added to the validation's family registry under its own name."""
        if not families:
            raise ValueError("name at least one template family")
        registry = plugins_of(info).families
        for i, fam in enumerate(families):
            try:
                guarded(f"template family {fam!r}", lambda: registry.add(fam))
            except ValueError as exc:
                raise ValueError(at(f"families[{i}]", str(exc))) from None
        return families

    @field_validator("seed_from")
    @classmethod
    def _seed_from(cls, dirs: list[str], info: ValidationInfo) -> list[str]:
        if is_stored(info):  # a campaign's own stored config: its pools were copied at creation
            return dirs
        out = []
        for raw in dirs:
            path = resolve_path(raw, base_dir_of(info))
            campaign = path.is_dir() and ((path / "hall_of_fame").is_dir() or (path / "campaign.db").exists())
            if not campaign and bench_result_file(path) is None:
                raise ValueError(f"{raw}: {path} is not a campaign folder (no hall_of_fame/ or campaign.db) "
                                 "or an evogemm bench result (a bench.json, or a folder holding one)")
            if campaign and not (path / "hall_of_fame").is_dir():   # its pool is read from the database
                try:
                    read_seed_pool(path)
                except sqlite3.DatabaseError as exc:
                    raise ValueError(f"{raw}: {exc}") from None
            out.append(str(path))
        return out

    @model_validator(mode="after")
    def _whole(self, info: ValidationInfo) -> "CampaignConfig":
        if (self.shapes is None) == (self.suite is None):
            raise ValueError("give exactly one of 'shapes' (a list of MxNxK) or 'suite' (a suite file, or a list of them)")
        if self.shapes is not None:
            self._problems = [Problem.parse(s) for s in self.shapes]
        else:
            assert self.suite is not None
            refs = self.suite if isinstance(self.suite, list) else [self.suite]
            if not refs:
                raise ValueError(at("suite", "the list is empty; give at least one suite file"))
            problems: list[Problem] = []
            for i, ref in enumerate(refs):
                where = "suite" if not isinstance(self.suite, list) else f"suite[{i}]"
                try:
                    path = resolve_path(ref.path, base_dir_of(info))
                except ValueError as exc:
                    path = bundled_suite(ref.path)   # a bundled suite by name, as `bench --suite` takes
                    if path is None:
                        names = ", ".join(sorted(p.stem for p in BUNDLED_SUITES.glob("*.yaml"))) or "none"
                        raise ValueError(at(f"{where}.path", f"{exc} (bundled suites, by name: {names})")) from exc
                try:
                    problems += load_suite(path, ref.groups)
                except ValueError as exc:
                    raise ValueError(at(f"{where}.groups" if "group" in str(exc) else f"{where}.path",
                                        str(exc))) from exc
                ref.path = str(path)
            self._problems = list(dict.fromkeys(problems))  # a shape in two suites runs once
        arms = [op.arm_name for op in self.operators]
        dup = sorted({a for a in arms if arms.count(a) > 1})
        if dup:
            raise ValueError(at("operators", f"operator arms must be unique; repeated: {', '.join(dup)} "
                                             "(give each entry its own `arm:` label)"))
        if not self.operators and self.strategy.name == "evolution":
            raise ValueError(at("operators", "the evolution strategy needs at least one operator"))
        simulated = True if self.evaluator.backend == "simulator" else None   # auto, gpu, ray: known at the start
        never = unending_budget(self.budget, simulated, any(op.model is not None for op in self.operators))
        if never is not None:
            raise ValueError(at("budget", never))
        providers = {p.name for p in self.llm.providers} | {p.model for p in self.llm.providers}
        for i, op in enumerate(self.operators):
            if op.model is not None and op.model not in providers:
                allowed = ", ".join(sorted({p.name for p in self.llm.providers})) or "(no llm.providers defined)"
                raise ValueError(at(f"operators[{i}].model", f"names no llm provider; allowed: {allowed}"))
        return self

    # -- derived --------------------------------------------------------------------------------
    @property
    def problems(self) -> list[Problem]:
        return list(self._problems)

    def resolved(self) -> dict[str, Any]:
        """The config as a self-contained dict: explicit shapes and absolute paths (for the copy
        in the campaign folder and the database)."""
        data = self.model_dump(mode="json")
        data["shapes"] = [p.name for p in self._problems]
        data["suite"] = None
        return data


# -- entry points ---------------------------------------------------------------------------------

def format_errors(exc: ValidationError, data: Any = None, lines: "Mapping[str, int] | None" = None) -> list[str]:
    """One line per error of a CampaignConfig validation (see schema_yaml.format_errors)."""
    return _format_errors(exc, CampaignConfig, data, lines)


def _as_created(stored: Mapping[str, Any]) -> dict:
    """A recorded campaign's settings with the defaults it was created under: one recorded before
    `population.fit_knobs` existed (session 25) took its seeds' knobs as they were, and one recorded before
    `population.wave_seeds` existed (session 37) timed no one-wave seeds, and one recorded before
    `population.wave_cooperative` existed (session 39) no cooperative ones, and one recorded before
    `population.vendor_seeds` existed (session 48) no vendor mirrors; each resumes so."""
    population = stored.get("population")
    if population is not None and not isinstance(population, Mapping):
        return dict(stored)          # not a mapping: validation says so
    population = dict(population or {})
    population.setdefault("fit_knobs", False)
    population.setdefault("wave_seeds", 0)
    population.setdefault("wave_cooperative", False)
    population.setdefault("vendor_seeds", 0)
    return {**stored, "population": population}


def parse_campaign(data: Any, base_dir: "str | Path | None" = None, source: "str | None" = None,
                   text: "str | None" = None, stored: bool = False) -> CampaignConfig:
    """Validate a campaign given as a dict; raise CampaignError with readable lines. `stored`:
    the config a campaign folder recorded (paths to warm-start and seed_from are not re-checked)."""
    if not isinstance(data, Mapping):
        raise CampaignError([f"a campaign is a mapping of keys (name, budget, shapes, ...), got "
                             f"{type(data).__name__}"], source)
    context = {"base_dir": str(base_dir) if base_dir else None, "stored": stored, "plugins": new_plugins()}
    try:
        return CampaignConfig.model_validate(_as_created(data) if stored else dict(data), context=context)
    except ValidationError as exc:
        lines = yaml_lines(text) if text else None
        raise CampaignError(format_errors(exc, data, lines), source) from None


def load_campaign(path: "str | Path", overrides: "Mapping[str, Any] | None" = None) -> CampaignConfig:
    """Read and validate a campaign YAML file. `overrides` maps dotted keys to values
    (e.g. {'seed': 3, 'evaluator.backend': 'simulator'}) applied before validation. A file that
    is missing, unreadable, binary, not UTF-8 or not YAML raises CampaignError naming it."""
    path = Path(path)
    text, data = read_campaign_file(path)
    if data is None:
        raise CampaignError(["the file is empty"], str(path))
    if isinstance(data, Mapping) and overrides:
        data = apply_overrides(data, overrides)
    return parse_campaign(data, base_dir=path.resolve().parent, source=str(path), text=text)


def apply_overrides(data: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(data))
    for dotted, value in overrides.items():
        cur = out
        parts = dotted.split(".")
        for part in parts[:-1]:
            nxt = cur.get(part)
            if not isinstance(nxt, dict):
                nxt = {}
                cur[part] = nxt
            cur = nxt
        cur[parts[-1]] = value
    return out


def dump_campaign(config: CampaignConfig, source: "str | None" = None) -> str:
    """YAML text of the resolved config (what the campaign folder keeps as campaign.yaml)."""
    header = "# evogemm campaign, resolved (explicit shapes, absolute paths, effective seed)\n"
    if source:
        header += f"# from {source}\n"
    return header + yaml.safe_dump(config.resolved(), sort_keys=False, default_flow_style=None, width=110)


def finite(x: float) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)
