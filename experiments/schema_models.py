"""The sections of a campaign, as pydantic v2 models (the whole campaign: experiments.schema).

Every model forbids unknown keys. Plug-in names are checked against the campaign's registries
(experiments.schema_plugins); sub-models default to `{}` so that their defaults, too, are
validated with the campaign's registries.
"""

from __future__ import annotations

import copy
import inspect
import re
from types import UnionType
from typing import Any, ClassVar, Literal, Mapping, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from genome import check_params, is_import_path

from .schema_paths import base_dir_of, is_stored, resolve_path
from .schema_plugins import check_timing, guarded, plugins_of, resolve
from .schema_yaml import at

_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _wants_a_number(annotation: Any) -> bool:
    """Whether a field of this type takes an int or a float and not a bool (pydantic would take true as 1)."""
    kinds = set(get_args(annotation)) if get_origin(annotation) in (Union, UnionType) else {annotation}
    return bool(kinds & {int, float}) and bool not in kinds


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name) if info.field_name else None
        if isinstance(value, bool) and field is not None and _wants_a_number(field.annotation):
            raise ValueError(f"{str(value).lower()} is not a number")
        return value


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
    handpicked: bool = Field(True, description="include the hand-picked seed genomes of the families that fit")
    family_prune_ratio: "float | None" = Field(
        None, gt=1.0, description="leave out of a shape every family whose fastest hand-picked seed the "
        "simulator prices over this many times the fastest family's (its island would spend evaluations on "
        "kernels of another league); null: every family that supports the shape searches it")
    seed_order: Literal["model", "file"] = Field(
        "model", description="order of the hand-picked seeds: by the family's simulator model for the shape "
                             "(fastest first), or as the files are named")
    fit_knobs: bool = Field(
        True, description="take every seed with its family's shape knobs (split-K factors, stream-K "
        "decomposition: runtime parameters, the same binary) set to what the family's simulator model prices "
        "fastest for the shape, where that is at least 5% faster than the seed's own values")
    nearest_shapes: int = Field(3, ge=0, description="solved shapes whose hall of fame seeds a new shape")
    seed_generalist: bool = Field(
        False, description="each family's first seed from other shapes is its generalist: the genome of the "
        "seed_from results that came within a few percent of the fastest kernel at the most shapes, nearer "
        "shapes counting more (evolution/seeding.py); the nearest shapes' best follow it")
    screen: int = Field(
        0, ge=0, le=4096, description="seeds timed in the first round beyond the population (evolution "
        "strategy): the first population holds up to size x islands + screen genomes, the extra ones only "
        "from seeds (a kernel built before costs a timing, not a build), and survivor selection then keeps "
        "`size` per island; they count as evaluations, so add them to evaluations_per_shape")
    wave_seeds: int = Field(
        2, ge=0, le=16, description="one-wave seeds also timed in a shape's first round (evolution strategy): "
        "sm90_lean kernels with one CTA per 128 x N tile and no cluster, the tile N whose grid fills the most "
        "SMs in one wave first (evolution/wave_seeds.py: wave_fit_seeds), where the campaign searches sm90_lean "
        "(and see wave_cooperative); "
        "they count as evaluations (0: none). On the H200 two of them took the first round's best at twelve "
        "unseen shapes from 0.933x to 0.948x the vendor, and campaigns' halls at seven unseen shapes from "
        "0.912x to 0.950x (three shapes, docs/results/h200-first-round-picks) and 0.948x to 0.967x (four, two "
        "with a valid one-wave tile; docs/results/h200-unseen-8)")
    wave_cooperative: bool = Field(
        True, description="where sm90_lean gives fewer one-wave seeds than wave_seeds asks (no tile N one "
        "warpgroup holds fills a wave, as at 1792^3 and 2048^3, or the shape's families leave sm90_lean out), the "
        "rest are sm90_cutlass cooperative 128 x N or 256 x N tiles with the persistent scheduler, in clusters of "
        "two where a tile count is even, the grid that fills the most SMs in one wave first "
        "(evolution/wave_seeds.py: cooperative_wave_seeds), where the campaign searches sm90_cutlass. "
        "Such tiles were the best the H200 benches recorded at 128x28672x4096, 256x12288x4096, 1024x4096x12288, "
        "2000^3, 768x2048x8192 and 384x3072x8192, and 2-6% behind the best at short-K shapes (3072x1280x1024)")
    vendor_seeds: int = Field(
        2, ge=0, le=16, description="vendor-mirror seeds also timed in a shape's first round (evolution strategy, GPU "
        "campaigns): genomes of the campaign's families with the CTA tile, tile K, cluster and split-K of the "
        "algorithm the fastest cuBLASLt baseline ran at the shape, as it reported it (evolution/vendor_seeds.py), "
        "the family whose tile comes nearest first, their other parameters from the hand-picked seed that gives the "
        "mirror the family's model prices fastest; they count as evaluations (0: none). A simulated campaign has no "
        "vendor algorithm to mirror and times none. On an H100 two of them reached 0.930x the vendor at ten hard "
        "shapes against 0.950x for the best kernels recorded there (docs/results/h100-vendor-algos). A mirror with a "
        "cluster and a wave or more of work tiles is followed by its twin without the cluster, within the count: it "
        "takes the place of the next family's mirror (docs/results/mirror-bases)")
    max_stall_rounds: int = Field(10, ge=1, description="stop a shape after this many rounds without a new genome")
    shapes_in_flight: int = Field(
        1, ge=1, le=256, description="shapes searched at once: shape i starts once every shape up to i - "
        "shapes_in_flight is done and is seeded only from those, so the search is the same on any backend; "
        "they run side by side where the evaluator has the lanes (the simulator, the gpu backend: they take turns "
        "on its one GPU; Ray: spread over the GPU actors), else in turn")

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


def _takes(factory: Any, keyword: str) -> bool:
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == keyword or p.kind is p.VAR_KEYWORD for p in params)


class OperatorSpec(Strict):
    name: str
    prior: float = Field(1.0, gt=0, description="prior weight of this arm for the selection policy")
    model: "str | None" = Field(None, description="LLM provider (name or model) for LLM operators")
    params: dict[str, Any] = Field(default_factory=dict)
    arm: "str | None" = Field(None, description="arm label; default name, or name@model")

    @field_validator("name")
    @classmethod
    def _known(cls, name: str, info: ValidationInfo) -> str:
        registry = plugins_of(info).operators
        if name.startswith("llm_") and name not in registry and not is_import_path(name):
            raise ValueError(f"LLM operator {name!r} is not available; available: {', '.join(registry.names())}, "
                             "or an import path package.module:Class")
        resolve(registry, name)
        return name

    @field_validator("params")
    @classmethod
    def _constructible(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        name = info.data.get("name")
        if name is None:  # the name itself was refused; that error says enough
            return params
        factory = resolve(plugins_of(info).operators, name)
        what = f"operator {name!r}"
        guarded(what, lambda: check_params(factory, params, (), what))
        kwargs = dict(params)
        model = info.data.get("model")
        if model is None and name.startswith("llm_"):
            raise ValueError(f"the LLM operator {name!r} needs `model:` (the name or model of one of llm.providers)")
        if model is not None and _takes(factory, "model"):
            kwargs["model"] = model
        guarded(f"building {what}", lambda: factory(**kwargs))
        return params

    @property
    def arm_name(self) -> str:
        if self.arm:
            return self.arm
        return f"{self.name}@{self.model}" if self.model else self.name


DEFAULT_OPERATORS: "tuple[Mapping[str, Any], ...]" = (
    {"name": "param_mutate"},
    {"name": "param_mutate", "arm": "param_mutate_wide", "params": {"n_changes": 3}},
    {"name": "param_mutate", "arm": "runtime_mutate", "params": {"kinds": ["runtime"]}},
    {"name": "param_crossover"},
    {"name": "random_sample", "prior": 0.5},
)


def default_operator_data() -> list[dict[str, Any]]:
    return [copy.deepcopy(dict(spec)) for spec in DEFAULT_OPERATORS]


def default_operators() -> list[OperatorSpec]:
    return [OperatorSpec.model_validate(d) for d in default_operator_data()]


def registered(field: str, registry: str) -> Any:
    """A field validator: the value names a plug-in of that registry of `evolution.plugins.Plugins`."""

    def check(cls: Any, value: str, info: ValidationInfo) -> str:
        resolve(getattr(plugins_of(info), registry), value)
        return value

    return field_validator(field)(classmethod(check))


class NamedPlugin(Strict):
    """A plug-in named in YAML with its parameters: `{name: ..., params: {...}}`, or the name alone.
    `REGISTRY` names the registry of `evolution.plugins.Plugins` it resolves in; `check_params`
    checks the parameters against what it resolved to."""

    REGISTRY: ClassVar[str] = ""
    name: str
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data

    @field_validator("name")
    @classmethod
    def _name(cls, name: str, info: ValidationInfo) -> str:
        resolve(getattr(plugins_of(info), cls.REGISTRY), name)
        return name

    @field_validator("params")
    @classmethod
    def _params(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        name = info.data.get("name")
        if name is not None:
            cls.check_params(resolve(getattr(plugins_of(info), cls.REGISTRY), name), name, params)
        return params

    @classmethod
    def check_params(cls, factory: Any, name: str, params: dict[str, Any]) -> None:
        raise NotImplementedError


class ParentSelection(NamedPlugin):
    """How parents are drawn: a built-in (`fitness_novelty`, `uniform`) or a plug-in class with
    select(candidates, k, rng, space), built with `params`. The older flat form
    `{fitness_weight: .., novelty_weight: .., temperature: ..}` means fitness_novelty with those
    params; a plain string is the name."""

    REGISTRY: ClassVar[str] = "parent_selections"
    name: str = "fitness_novelty"

    @model_validator(mode="before")
    @classmethod
    def _flat_form(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data and not ({"name", "params"} & set(data)):
            return {"name": "fitness_novelty", "params": dict(data)}
        return data

    @classmethod
    def check_params(cls, factory: Any, name: str, params: dict[str, Any]) -> None:
        what = f"parent selection {name!r}"
        guarded(what, lambda: check_params(factory, params, (), what))
        guarded(f"building {what}", lambda: factory(**params))


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
    parents: ParentSelection = Field(default_factory=dict)  # type: ignore[arg-type]  # validated in context

    _policy = registered("policy", "policies")

    @field_validator("reward")
    @classmethod
    def _reward(cls, name: str) -> str:
        from evolution.evolve import REWARDS
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
        registry = plugins_of(info).policies
        guarded(f"building selection policy {name!r}",
                lambda: make_policy(name, ["a", "b"], registry=registry, **params))
        return params

    @field_validator("warm_start")
    @classmethod
    def _warm(cls, raw: "str | None", info: ValidationInfo) -> "str | None":
        if raw is None or is_stored(info):
            return raw
        path = resolve_path(raw, base_dir_of(info))
        if path.is_dir():
            if not (path / "policy.json").exists() and not (path / "campaign.db").exists():
                raise ValueError(f"{path} is not a campaign folder (no policy.json or campaign.db)")
        return str(path)


class StrategySpec(NamedPlugin):
    REGISTRY: ClassVar[str] = "strategies"
    name: str = "evolution"

    @classmethod
    def check_params(cls, factory: Any, name: str, params: dict[str, Any]) -> None:
        from evolution.search import check_strategy_params
        guarded(f"checking search strategy {name!r}", lambda: check_strategy_params(factory, params, name))


class Provider(Strict):
    name: str
    kind: str = Field(description="LLM provider kind: a registered name or an import path package.module:Class "
                                  "(a class with complete())")
    model: str
    base_url: "str | None" = None
    api_key_env: "str | None" = None
    options: dict[str, Any] = Field(default_factory=dict,
                                    description="the provider's own settings, e.g. timeout_s, max_retries, "
                                                "max_concurrency (openai) or path (replay)")

    _kind = registered("kind", "providers")

    @field_validator("options")
    @classmethod
    def _options(cls, options: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        kind = info.data.get("kind")
        if kind is not None:
            factory = resolve(plugins_of(info).providers, kind)
            check_params(factory, options, ("name", "model", "base_url", "api_key_env", "sleep"),
                         f"LLM provider {kind!r}")
        return options

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
    concurrency: int = Field(4, ge=1, description="operator calls of one round that run side by side (LLM arms; "
                                                  "each with its own seeded generator, so the search does not "
                                                  "depend on which answer comes first); 1: one after another")

    @field_validator("providers")
    @classmethod
    def _unique(cls, providers: list[Provider]) -> list[Provider]:
        names = [p.name for p in providers]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"provider names must be unique; repeated: {', '.join(dup)}")
        return providers


class EvaluatorConfig(Strict):
    """The evaluator backend and its settings. `timing` (and `options.timing`) may make the
    correctness gate stricter, never looser (MEASURE.md); options a backend does not take are
    refused."""

    backend: str = "auto"
    batch_size: "int | None" = Field(None, ge=1, description="genomes per evaluate() call (default: the round)")
    noise: float = Field(0.0, ge=0, description="simulator: relative timing noise")
    timing: dict[str, Any] = Field(default_factory=dict, description="timing options of the GPU worker")
    options: dict[str, Any] = Field(default_factory=dict, description="other evaluator constructor options")

    @field_validator("backend")
    @classmethod
    def _backend(cls, name: str, info: ValidationInfo) -> str:
        resolve(plugins_of(info).evaluators, name)
        return name

    @field_validator("timing")
    @classmethod
    def _timing(cls, timing: dict[str, Any]) -> dict[str, Any]:
        loose = check_timing(timing)  # unknown keys and bad values are errors; low values only warn in reports
        if loose:
            raise ValueError(at(f"evaluator.timing.{loose[0]}", loose[1]))
        return timing

    @field_validator("options")
    @classmethod
    def _options(cls, options: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        backend = info.data.get("backend")
        if backend is None or not options:
            return options
        registry = plugins_of(info).evaluators
        from evaluator.factory import check_options
        guarded(f"checking the options of evaluator backend {backend!r}",
                lambda: check_options(backend, dict(options), registry))
        if backend in registry and "timing" in options:  # a built-in backend: the GPU worker's timing
            try:
                loose = check_timing(options["timing"])
            except ValueError as exc:
                raise ValueError(at("evaluator.options.timing", str(exc))) from None
            if loose:
                raise ValueError(at(f"evaluator.options.timing.{loose[0]}", loose[1]))
        return options


class SuiteRef(Strict):
    path: str
    groups: "list[str] | None" = None

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        return {"path": data} if isinstance(data, str) else data
