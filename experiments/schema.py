"""The campaign YAML: a pydantic v2 schema, validated completely before anything runs.

A campaign names the shapes (explicitly or through a suite file), the budget, the population,
the operators and how they are chosen, the search strategy, LLM providers, the evaluator and
earlier campaigns to seed from. Every model forbids unknown keys. `load_campaign(path)` returns a
`CampaignConfig` or raises `CampaignError` whose message has one readable line per problem:

    population.size: -3 is not allowed: must be >= 2
    population.sise: unknown key; allowed: size, islands, offspring, ...
    shapes[1]: '12x' is not allowed: cannot read shape '12x'; write it as MxNxK, e.g. 4096x4096x1024
    campaign.yaml:7:3: YAML syntax error: mapping values are not allowed here

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
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Annotated, Any, Iterable, Mapping

import yaml
from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, ValidationError, ValidationInfo, field_validator,
                      model_validator)

from genome import Problem, classic_operators, family_registry, load_object
from genome.registry import check_params

POLICIES = ("uniform", "ucb", "thompson", "softmax_pg")
STRATEGIES = ("evolution", "optuna_tpe", "random")
BACKENDS = ("auto", "gpu", "simulator")
PROVIDER_KINDS = ("openai", "transformers", "replay")
REWARDS = ("log_ratio", "improvement", "success")
LLM_OPERATORS = ("llm_param", "llm_patch", "llm_fix", "llm_crossover")

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CampaignError(ValueError):
    """A campaign file that cannot run: `errors` holds one readable line per problem."""

    def __init__(self, errors: "list[str]", source: "str | None" = None):
        self.errors = list(errors)
        self.source = source
        head = f"{source}: " if source else ""
        if len(self.errors) == 1:
            super().__init__(head + self.errors[0])
        else:
            super().__init__(f"{head}{len(self.errors)} problems\n" + "\n".join("  " + e for e in self.errors))

    def __reduce__(self) -> tuple:  # survive pickling (process pools)
        return (type(self), (self.errors, self.source))


def _is_import_path(name: str) -> bool:
    return ":" in name and all(part for part in name.split(":", 1))


# -- path resolution ------------------------------------------------------------------------------

def _repo_root(start: Path) -> "Path | None":
    for folder in [start, *start.parents]:
        if (folder / "pyproject.toml").exists():
            return folder
    return None


def _builtin_or_plugin(name: str, builtins: "Iterable[str]", kind: str) -> str:
    """A built-in name, or an import path that imports; else the error says what is allowed."""
    if name in builtins:
        return name
    if _is_import_path(name):
        load_object(name)
        return name
    raise ValueError(f"allowed: {', '.join(builtins)}, or an import path package.module:{kind}")


def resolve_path(raw: str, base_dir: "Path | None", must_exist: bool = True) -> Path:
    """Find `raw`: absolute; else relative to the campaign's folder, then the repository root above
    it; else the path without its leading ../ searched in every folder above the campaign file;
    last, relative to the current directory."""
    path = Path(os.path.expanduser(raw))
    if path.is_absolute():
        if must_exist and not path.exists():
            raise ValueError(f"{raw} does not exist")
        return path
    tried: list[Path] = []
    bases: list[Path] = []
    if base_dir is not None:
        bases.append(base_dir)
        root = _repo_root(base_dir)
        if root is not None and root != base_dir:
            bases.append(root)
    for base in bases:
        candidate = (base / path).resolve()
        tried.append(candidate)
        if candidate.exists():
            return candidate
    stripped = Path(*[p for p in path.parts if p not in ("..", ".")])
    if stripped != path and base_dir is not None:
        for folder in [base_dir, *base_dir.parents]:
            candidate = folder / stripped
            if candidate.exists():
                return candidate.resolve()
        tried.append(Path(f"<every folder above {base_dir}>") / stripped)
    candidate = (Path.cwd() / path).resolve()
    tried.append(candidate)
    if candidate.exists():
        return candidate
    if must_exist:
        raise ValueError(f"{raw} not found (tried {', '.join(str(t) for t in tried)})")
    return tried[0]


def _stored(info: ValidationInfo) -> bool:
    return bool((info.context or {}).get("stored"))


def _base_dir(info: ValidationInfo) -> "Path | None":
    ctx = info.context or {}
    base = ctx.get("base_dir")
    return Path(base) if base else None


# -- models --------------------------------------------------------------------------------------

class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


class Budget(Strict):
    """Any limit may be null (unlimited), but at least one must be set. Evaluation counts are exact;
    time and token limits are checked before each round is proposed (a started round finishes)."""

    evaluations_per_shape: "int | None" = Field(None, ge=1)
    total_evaluations: "int | None" = Field(None, ge=1)
    gpu_seconds: "float | None" = Field(None, gt=0)
    wall_seconds: "float | None" = Field(None, gt=0)
    llm_tokens: "int | None" = Field(None, ge=1)

    @model_validator(mode="after")
    def _one_set(self) -> "Budget":
        if all(getattr(self, k) is None for k in type(self).model_fields):
            raise ValueError("no limit is set: set at least one of " + ", ".join(type(self).model_fields)
                             + " (null means unlimited)")
        return self


class Population(Strict):
    size: int = Field(16, ge=2, description="individuals per island")
    islands: int = Field(2, ge=1)
    offspring: "int | None" = Field(None, ge=1, description="children per island per round (default size // 2)")
    migration_interval: int = Field(4, ge=1, description="rounds between migrations")
    migration_size: int = Field(2, ge=0)
    elite: int = Field(2, ge=0, description="best individuals of an island that always survive")
    tournament: int = Field(2, ge=1, description="tournament size for the non-elite survivors")
    hall_of_fame: int = Field(8, ge=1, description="kept per shape")
    seed_fraction: float = Field(0.5, ge=0.0, le=1.0,
                                 description="at most this share of the first population comes from seeds")
    handpicked: bool = Field(True, description="include the hand-picked genomes of experiments/genomes/ that fit")
    nearest_shapes: int = Field(3, ge=0, description="solved shapes whose hall of fame seeds a new shape")
    max_stall_rounds: int = Field(10, ge=1, description="stop a shape after this many rounds without a new genome")

    @model_validator(mode="after")
    def _sizes(self) -> "Population":
        if self.elite >= self.size:
            raise ValueError(f"elite ({self.elite}) must be smaller than size ({self.size})")
        if self.migration_size >= self.size:
            raise ValueError(f"migration_size ({self.migration_size}) must be smaller than size ({self.size})")
        return self

    @property
    def offspring_per_island(self) -> int:
        return self.offspring or max(1, self.size // 2)


class OperatorSpec(Strict):
    name: str
    prior: float = Field(1.0, gt=0, description="prior weight of this arm for the selection policy")
    params: dict[str, Any] = Field(default_factory=dict)
    model: "str | None" = Field(None, description="LLM provider (name or model) for LLM operators")
    arm: "str | None" = Field(None, description="arm label; default name, or name@model")

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        if _is_import_path(name):
            try:
                factory = load_object(name)
            except ValueError as exc:
                raise ValueError(str(exc)) from exc
            if not callable(factory):
                raise ValueError(f"{name} is not callable")
            return name
        builtins = classic_operators()
        if name in builtins:
            return name
        if name.startswith("llm_") or name in LLM_OPERATORS:
            raise ValueError(f"LLM operator {name!r} is not available yet (llm_mutators has no operators); "
                             f"available: {', '.join(sorted(builtins))}, or an import path package.module:Factory")
        raise ValueError(f"unknown operator; allowed: {', '.join(sorted(builtins))}, or an import path "
                         "package.module:Factory")

    @field_validator("params")
    @classmethod
    def _constructible(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        name = info.data.get("name")
        if name is None:  # the name itself was refused; that error says enough
            return params
        factory = classic_operators().get(name) or load_object(name)
        try:
            op = factory(**params)
        except TypeError as exc:
            raise ValueError(f"do not fit operator {name}: {exc}") from exc
        except ValueError as exc:
            raise ValueError(str(exc)) from exc
        if not hasattr(op, "arity") or not hasattr(op, "name") or not callable(op):
            raise ValueError(f"{name} does not build an operator (needs .name, .arity and __call__)")
        return params

    @property
    def arm_name(self) -> str:
        if self.arm:
            return self.arm
        return f"{self.name}@{self.model}" if self.model else self.name


def default_operators() -> list[OperatorSpec]:
    return [
        OperatorSpec(name="param_mutate"),
        OperatorSpec(name="param_mutate", arm="param_mutate_wide", params={"n_changes": 3}),
        OperatorSpec(name="param_mutate", arm="runtime_mutate", params={"kinds": ["runtime"]}),
        OperatorSpec(name="param_crossover"),
        OperatorSpec(name="random_sample", prior=0.5),
    ]


class ParentSelection(Strict):
    fitness_weight: float = Field(1.0, ge=0)
    novelty_weight: float = Field(0.3, ge=0)
    temperature: float = Field(0.5, gt=0)


class Selection(Strict):
    policy: str = "thompson"
    params: dict[str, Any] = Field(default_factory=dict)
    failure_reward: float = Field(-1.0, le=0, description="reward of a child that fails (any status but ok)")
    reward: str = Field("success", description="success: 1 when the child is faster than its (faster) parent, else "
                                               "0; log_ratio: log(parent time / child time); improvement: log_ratio, "
                                               "but 0 when the child is not faster. Failures: failure_reward. See "
                                               "docs/results/ablation-simulator.md for why success is the default")
    warm_start: "str | None" = Field(None, description="policy.json or a previous campaign folder")
    warm_start_weight: float = Field(0.5, ge=0, le=1)
    parents: ParentSelection = Field(default_factory=ParentSelection)

    @field_validator("policy")
    @classmethod
    def _policy(cls, name: str) -> str:
        return _builtin_or_plugin(name, POLICIES, "Policy")

    @field_validator("reward")
    @classmethod
    def _reward(cls, name: str) -> str:
        if name not in REWARDS:
            raise ValueError(f"allowed: {', '.join(REWARDS)}")
        return name

    @field_validator("params")
    @classmethod
    def _policy_params(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        name = info.data.get("policy")
        if name is None:
            return params
        from evolution.bandit import make_policy
        try:
            make_policy(name, ["a", "b"], **params)
        except (TypeError, ValueError) as exc:
            raise ValueError(str(exc)) from exc
        return params

    @field_validator("warm_start")
    @classmethod
    def _warm(cls, raw: "str | None", info: ValidationInfo) -> "str | None":
        if raw is None or _stored(info):
            return raw
        path = resolve_path(raw, _base_dir(info))
        if path.is_dir():
            if not (path / "policy.json").exists() and not (path / "campaign.db").exists():
                raise ValueError(f"{path} is not a campaign folder (no policy.json or campaign.db)")
        return str(path)


class StrategySpec(Strict):
    name: str = "evolution"
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        return _builtin_or_plugin(name, STRATEGIES, "Strategy")

    @field_validator("params")
    @classmethod
    def _strategy_params(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        name = info.data.get("name")
        if name is None or name == "evolution":
            if params:
                raise ValueError("the evolution strategy takes its settings from population/selection/operators; "
                                 "strategy.params must be empty")
            return params
        if name in STRATEGIES:
            from evolution import strategies
            factory: Any = strategies.RandomSearch if name == "random" else strategies.OptunaTPE
        else:
            factory = load_object(name)
        check_params(factory, params, ("space", "problem", "seed"), f"strategy {name}")
        return params


class Provider(Strict):
    name: str
    kind: str
    model: str
    base_url: "str | None" = None
    api_key_env: "str | None" = None

    @field_validator("kind")
    @classmethod
    def _kind(cls, kind: str) -> str:
        if kind not in PROVIDER_KINDS:
            raise ValueError(f"allowed: {', '.join(PROVIDER_KINDS)}")
        return kind

    @field_validator("api_key_env")
    @classmethod
    def _env(cls, name: "str | None") -> "str | None":
        if name is not None and not _ENV_RE.match(name):
            raise ValueError("must be the name of an environment variable (letters, digits, _), not the key itself")
        return name

    @field_validator("base_url")
    @classmethod
    def _url(cls, url: "str | None") -> "str | None":
        if url is not None and not re.match(r"^https?://", url):
            raise ValueError("must start with http:// or https://")
        return url


class LlmConfig(Strict):
    providers: list[Provider] = Field(default_factory=list)

    @field_validator("providers")
    @classmethod
    def _unique(cls, providers: list[Provider]) -> list[Provider]:
        names = [p.name for p in providers]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"provider names must be unique; repeated: {', '.join(dup)}")
        return providers


class EvaluatorConfig(Strict):
    backend: str = "auto"
    batch_size: "int | None" = Field(None, ge=1, description="genomes per evaluate() call (default: the round)")
    noise: float = Field(0.0, ge=0, description="simulator: relative timing noise")
    timing: dict[str, Any] = Field(default_factory=dict, description="timing options, passed through")
    options: dict[str, Any] = Field(default_factory=dict, description="other evaluator constructor options")

    @field_validator("timing")
    @classmethod
    def _timing(cls, timing: dict[str, Any]) -> dict[str, Any]:
        from evaluator.gpu_worker import check_timing
        check_timing(timing)  # unknown keys and bad values are errors; low values only warn in reports
        return timing

    @field_validator("backend")
    @classmethod
    def _backend(cls, name: str) -> str:
        return _builtin_or_plugin(name, BACKENDS, "Evaluator")


class SuiteRef(Strict):
    path: str
    groups: "list[str] | None" = None

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        return {"path": data} if isinstance(data, str) else data


def _shape(value: Any) -> Problem:
    if isinstance(value, bool) or value is None:
        raise ValueError("a shape is 'MxNxK' or [M, N, K]")
    if isinstance(value, (list, tuple)) and not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError("a shape is [M, N, K] with integer M, N, K")
    if not isinstance(value, (str, list, tuple)):
        raise ValueError("a shape is 'MxNxK' or [M, N, K]")
    try:
        return Problem.parse(value)
    except (ValueError, TypeError) as exc:
        raise ValueError(str(exc)) from exc


ShapeItem = Annotated[Any, BeforeValidator(lambda v: _shape(v).name)]


def load_suite(path: Path, groups: "Iterable[str] | None" = None) -> list[Problem]:
    """Shapes of a suite file (`shapes:` a list, or a mapping group -> list), in file order."""
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ValueError(f"suite {path}: {_yaml_message(exc)}") from exc
    if not isinstance(data, Mapping) or "shapes" not in data:
        raise ValueError(f"suite {path} has no 'shapes' key")
    shapes = data["shapes"]
    if isinstance(shapes, Mapping):
        wanted = list(groups) if groups else list(shapes)
        unknown = [g for g in wanted if g not in shapes]
        if unknown:
            raise ValueError(f"suite {path} has no group {', '.join(unknown)}; groups: {', '.join(shapes)}")
        raw = [s for g in wanted for s in (shapes[g] or [])]
    else:
        if groups:
            raise ValueError(f"suite {path} has no groups (its shapes are one list)")
        raw = list(shapes or [])
    out: list[Problem] = []
    for i, item in enumerate(raw):
        try:
            problem = _shape(item)
        except ValueError as exc:
            raise ValueError(f"suite {path} shape #{i + 1} {item!r}: {exc}") from exc
        if problem not in out:
            out.append(problem)
    return out


class CampaignConfig(Strict):
    name: str
    description: str = ""
    seed: int = Field(0, ge=0)
    output_dir: "str | None" = None
    shapes: "list[ShapeItem] | None" = None
    suite: "SuiteRef | None" = None
    families: list[str] = Field(default_factory=lambda: ["sm90_cutlass"])
    budget: Budget
    population: Population = Field(default_factory=Population)
    operators: list[OperatorSpec] = Field(default_factory=default_operators)
    selection: Selection = Field(default_factory=Selection)
    strategy: StrategySpec = Field(default_factory=StrategySpec)
    llm: LlmConfig = Field(default_factory=LlmConfig)
    evaluator: EvaluatorConfig = Field(default_factory=EvaluatorConfig)
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
    def _families(cls, families: list[str]) -> list[str]:
        if not families:
            raise ValueError("name at least one template family")
        known = family_registry()
        for fam in families:
            if fam not in known and not _is_import_path(fam):
                raise ValueError(f"unknown template family {fam!r}; allowed: {', '.join(known.names())}, "
                                 "or an import path package.module:make_space")
        return families

    @field_validator("seed_from")
    @classmethod
    def _seed_from(cls, dirs: list[str], info: ValidationInfo) -> list[str]:
        if _stored(info):  # a campaign's own stored config: its pools were copied at creation
            return dirs
        out = []
        for raw in dirs:
            path = resolve_path(raw, _base_dir(info))
            if not path.is_dir() or not ((path / "hall_of_fame").is_dir() or (path / "campaign.db").exists()):
                raise ValueError(f"{raw}: {path} is not a campaign folder (no hall_of_fame/ or campaign.db)")
            out.append(str(path))
        return out

    @model_validator(mode="after")
    def _whole(self, info: ValidationInfo) -> "CampaignConfig":
        if (self.shapes is None) == (self.suite is None):
            raise ValueError("give exactly one of 'shapes' (a list of MxNxK) or 'suite' (a suite file)")
        if self.shapes is not None:
            self._problems = [Problem.parse(s) for s in self.shapes]
        else:
            assert self.suite is not None
            try:
                path = resolve_path(self.suite.path, _base_dir(info))
            except ValueError as exc:
                raise ValueError(f"__loc__suite.path__{exc}") from exc
            try:
                self._problems = load_suite(path, self.suite.groups)
            except ValueError as exc:
                where = "suite.groups" if "group" in str(exc) else "suite.path"
                raise ValueError(f"__loc__{where}__{exc}") from exc
            self.suite.path = str(path)
        arms = [op.arm_name for op in self.operators]
        dup = sorted({a for a in arms if arms.count(a) > 1})
        if dup:
            raise ValueError(f"__loc__operators__operator arms must be unique; repeated: {', '.join(dup)} "
                             "(give each entry its own `arm:` label)")
        if not self.operators and self.strategy.name == "evolution":
            raise ValueError("__loc__operators__the evolution strategy needs at least one operator")
        providers = {p.name for p in self.llm.providers} | {p.model for p in self.llm.providers}
        for i, op in enumerate(self.operators):
            if op.model is not None and op.model not in providers:
                allowed = ", ".join(sorted({p.name for p in self.llm.providers})) or "(no llm.providers defined)"
                raise ValueError(f"__loc__operators[{i}].model__names no llm provider; "
                                 f"allowed: {allowed}")
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


# -- loading and error messages -------------------------------------------------------------------

class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML silently keeps the last)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, Any] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping", node.start_mark, f"found the key {key!r} twice", key_node.start_mark)
        seen[key] = True
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _yaml_message(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    detail = f"{context}: {problem}" if context and "twice" in str(problem) else problem
    return f"{where}YAML syntax error: {detail}"


def _fmt_loc(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _fmt_value(value: Any) -> str:
    try:
        text = json.dumps(value) if not isinstance(value, str) else repr(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _model_at(loc: "tuple[Any, ...]") -> "type[BaseModel] | None":
    """The model class at a location path (to list the keys allowed there)."""
    import typing
    model: Any = CampaignConfig
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return None
        ann = model.model_fields[part].annotation
        model = _unwrap(ann, typing)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _unwrap(ann: Any, typing: Any) -> Any:
    for _ in range(4):
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            return ann
        if not args:
            return ann
        models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        ann = models[0] if models else args[-1]
    return ann


_CONSTRAINT_TEXT = {
    "greater_than_equal": lambda c: f"must be >= {c['ge']}",
    "greater_than": lambda c: f"must be > {c['gt']}",
    "less_than_equal": lambda c: f"must be <= {c['le']}",
    "less_than": lambda c: f"must be < {c['lt']}",
    "int_parsing": lambda c: "must be an integer",
    "int_type": lambda c: "must be an integer",
    "int_from_float": lambda c: "must be an integer",
    "float_parsing": lambda c: "must be a number",
    "float_type": lambda c: "must be a number",
    "bool_parsing": lambda c: "must be true or false",
    "bool_type": lambda c: "must be true or false",
    "string_type": lambda c: "must be a string",
    "list_type": lambda c: "must be a list",
    "dict_type": lambda c: "must be a mapping (key: value)",
    "model_type": lambda c: "must be a mapping (key: value)",
    "model_attributes_type": lambda c: "must be a mapping (key: value)",
}


def format_errors(exc: ValidationError, data: Any = None, lines: "Mapping[str, int] | None" = None) -> list[str]:
    """One line per pydantic error: `path: value is not allowed: why`, `path: unknown key; allowed: ...`."""
    out: list[str] = []
    for err in exc.errors():
        loc = tuple(err.get("loc", ()))
        etype = err.get("type", "")
        msg = str(err.get("msg", ""))
        ctx = err.get("ctx") or {}
        value = err.get("input")
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if msg.startswith("Assertion failed, "):
            msg = msg[len("Assertion failed, "):]
        # model-level validators that point at one key
        m = re.match(r"^__loc__(.*?)__(.*)$", msg, re.S)
        if m:
            loc = _parse_loc(m.group(1))
            msg = m.group(2)
            value = _lookup(data, loc, None)
        path = _fmt_loc(loc)
        where = ""
        if lines is not None:
            line = _line_for(lines, loc)
            if line:
                where = f" (line {line})"
        if etype == "extra_forbidden":
            model = _model_at(loc[:-1])
            allowed = ", ".join(model.model_fields) if model else "(see the schema)"
            out.append(f"{path}: unknown key; allowed: {allowed}{where}")
        elif etype == "missing":
            out.append(f"{path}: required key is missing{where}")
        elif etype == "literal_error":
            out.append(f"{path}: {_fmt_value(value)} is not allowed: allowed: {ctx.get('expected')}{where}")
        elif etype in _CONSTRAINT_TEXT:
            out.append(f"{path}: {_fmt_value(value)} is not allowed: {_CONSTRAINT_TEXT[etype](ctx)}{where}")
        elif _model_at(loc) is not None and etype in ("value_error", "assertion_error"):
            out.append(f"{path}: {msg}{where}")
        else:
            if msg.startswith("Input should be "):
                msg = "must be " + msg[len("Input should be "):]
            out.append(f"{path}: {_fmt_value(value)} is not allowed: {msg}{where}")
    return out


def _parse_loc(text: str) -> tuple[Any, ...]:
    out: list[Any] = []
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", text):
        out.append(int(part[1:-1]) if part.startswith("[") else part)
    return tuple(out)


def _lookup(data: Any, loc: tuple[Any, ...], default: Any) -> Any:
    cur = data
    for part in loc:
        try:
            cur = cur[part]
        except (KeyError, IndexError, TypeError):
            return default
    return cur


def _yaml_lines(text: str) -> dict[str, int]:
    """Map location paths ('population.size', 'shapes[1]') to 1-based line numbers."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    out: dict[str, int] = {}

    def walk(node: Any, loc: tuple[Any, ...]) -> None:
        out[_fmt_loc(loc)] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = k.value
                out[_fmt_loc(loc + (key,))] = k.start_mark.line + 1
                walk(v, loc + (key,))
                out[_fmt_loc(loc + (key,))] = k.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                walk(v, loc + (i,))

    if root is not None:
        walk(root, ())
    return out


def _line_for(lines: Mapping[str, int], loc: tuple[Any, ...]) -> "int | None":
    for cut in range(len(loc), 0, -1):
        line = lines.get(_fmt_loc(loc[:cut]))
        if line:
            return line
    return None


def parse_campaign(data: Any, base_dir: "str | Path | None" = None, source: "str | None" = None,
                   text: "str | None" = None, stored: bool = False) -> CampaignConfig:
    """Validate a campaign given as a dict; raise CampaignError with readable lines. `stored`:
    the config a campaign folder recorded (paths to warm-start and seed_from are not re-checked)."""
    if not isinstance(data, Mapping):
        raise CampaignError([f"a campaign is a mapping of keys (name, budget, shapes, ...), got "
                             f"{type(data).__name__}"], source)
    try:
        return CampaignConfig.model_validate(dict(data), context={"base_dir": str(base_dir) if base_dir else None,
                                                                  "stored": stored})
    except ValidationError as exc:
        lines = _yaml_lines(text) if text else None
        raise CampaignError(format_errors(exc, data, lines), source) from None


def load_campaign(path: "str | Path", overrides: "Mapping[str, Any] | None" = None) -> CampaignConfig:
    """Read and validate a campaign YAML file. `overrides` maps dotted keys to values
    (e.g. {'seed': 3, 'evaluator.backend': 'simulator'}) applied before validation."""
    path = Path(path)
    if not path.exists():
        raise CampaignError([f"no such campaign file: {path}"])
    text = path.read_text()
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        raise CampaignError([f"YAML syntax error: {problem}"], where) from None
    if data is None:
        raise CampaignError(["the file is empty"], str(path))
    if isinstance(data, Mapping) and overrides:
        data = apply_overrides(data, overrides)
    return parse_campaign(data, base_dir=path.resolve().parent, source=str(path), text=text)


def apply_overrides(data: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(data))  # deep copy of plain data
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
