"""A template family: the one object that says everything about a kind of kernel.

It carries its Jinja2 template folder, its search space (parameters and rules, from `genome/`),
how its runtime knobs are packed for the C ABI, its nvcc flags and target architecture, the
compute capability it needs, the simulator model that predicts its time (an import path, loaded
by the evaluator), and its seed genomes. Nothing else in the code names a family: rendering, the
compiler, the evaluator factory, the simulator and `evogemm space` all ask this object.

A plug-in family is a `TemplateFamily` (or a function of no arguments returning one) named in a
campaign's `families:` by import path `package.module:NAME`; genomes then carry its `name`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from genome import Genome, PluginError, Registry, SearchSpace, describe_object, is_import_path, load_object

KnobPacker = Callable[[Mapping[str, Any]], "list[int]"]

COMMON_NVCC_FLAGS = ("-O3", "-DNDEBUG", "-std=c++17", "-Xcompiler=-fPIC", "-shared", "-Xptxas=-v", "-lineinfo")


def _no_knobs(params: Mapping[str, Any]) -> list[int]:
    return []


@dataclass(frozen=True)
class TemplateFamily:
    name: str
    make_space: Callable[[], SearchSpace]
    template_dir: Path
    template_file: str = "kernel.cu.j2"
    knobs: KnobPacker = _no_knobs
    arch: str = "90a"                       # nvcc -gencode compute_<arch>,sm_<arch>
    nvcc_flags: tuple[str, ...] = COMMON_NVCC_FLAGS
    min_compute_capability: tuple[int, int] = (9, 0)
    simulator_model: "str | Callable[..., Any] | None" = None  # model(params, problem, sim_params, device)
    seeds_dir: "Path | None" = None
    description: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)  # free facts a family wants to carry
    template_search_path: tuple[Path, ...] = ()  # more folders its template may extend or include from
    template_globals: Mapping[str, Any] = field(default_factory=dict)  # names its template reads besides p

    def __post_init__(self) -> None:
        object.__setattr__(self, "template_dir", Path(self.template_dir))
        object.__setattr__(self, "template_search_path", tuple(Path(p) for p in self.template_search_path))
        if self.seeds_dir is not None:
            object.__setattr__(self, "seeds_dir", Path(self.seeds_dir))
        if not (self.template_dir / self.template_file).is_file():
            raise PluginError(f"template family {self.name!r}: no template {self.template_file} in {self.template_dir}")

    @cached_property
    def space(self) -> SearchSpace:
        space = self.make_space()
        if not isinstance(space, SearchSpace):
            raise PluginError(f"template family {self.name!r}: make_space() returned {describe_object(space)}, "
                              "not a SearchSpace")
        if space.family != self.name:
            raise PluginError(f"template family {self.name!r}: its space says family {space.family!r}")
        return space

    def arch_flags(self) -> tuple[str, ...]:
        return (f"-gencode=arch=compute_{self.arch},code=sm_{self.arch}",)

    def extended_by(self, name: str, make_space: Callable[[], SearchSpace], template_dir: Path,
                    simulator_model: str, description: str, knobs: KnobPacker,
                    template_globals: "Mapping[str, Any] | None" = None) -> "TemplateFamily":
        """A family whose template (in `template_dir`) extends this family's and overrides some of
        its blocks: same architecture, flags, device needs and template globals (plus or over them,
        `template_globals`), its own space, seeds and model."""
        template_dir = Path(template_dir)
        return TemplateFamily(name=name, make_space=make_space, template_dir=template_dir,
                              template_search_path=(template_dir.parent,), knobs=knobs, arch=self.arch,
                              nvcc_flags=self.nvcc_flags, min_compute_capability=self.min_compute_capability,
                              simulator_model=simulator_model, seeds_dir=template_dir / "seeds",
                              description=description,
                              template_globals={**self.template_globals, **(template_globals or {})})

    def template_folders(self) -> list[str]:
        """Where its template and whatever the template extends are looked up, in order."""
        return [str(self.template_dir), *(str(p) for p in self.template_search_path)]

    def compile_flags(self) -> tuple[str, ...]:
        return (*self.arch_flags(), *self.nvcc_flags)

    def knob_vector(self, genome: Genome) -> tuple[int, ...]:
        return tuple(int(k) for k in self.knobs(self.space.params_of(genome)))

    def seeds(self) -> "list[tuple[str, Genome]]":
        """The family's seed genomes as (file stem, genome), valid ones only, by file name."""
        if self.seeds_dir is None or not self.seeds_dir.is_dir():
            return []
        out = []
        for path in sorted(self.seeds_dir.glob("*.json")):
            try:
                genome = Genome.load(path)
            except (ValueError, TypeError):
                continue
            if genome.family == self.name and self.space.is_valid(genome):
                out.append((path.stem, self.space.normalise(genome)))
        return out

    def supports_device(self, major: int, minor: int) -> "str | None":
        """None when a GPU of compute capability major.minor runs this family, else why not."""
        if (major, minor) >= self.min_compute_capability and (self.arch.rstrip("a") == f"{major}{minor}"
                                                               or not self.arch.endswith("a")):
            return None
        want = ".".join(str(x) for x in self.min_compute_capability)
        return f"family {self.name} is built for sm_{self.arch} (compute capability {want}); GPU is {major}.{minor}"

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description or self.space.description,
                "template": str(self.template_dir / self.template_file), "arch": f"sm_{self.arch}",
                "nvcc_flags": list(self.compile_flags()),
                "min_compute_capability": ".".join(map(str, self.min_compute_capability)),
                "simulator_model": self.simulator_model if isinstance(self.simulator_model, str)
                else getattr(self.simulator_model, "__qualname__", None),
                "seeds": len(self.seeds())}


def _check_family(obj: Any) -> "str | None":
    if isinstance(obj, TemplateFamily):
        return None
    return f"is {describe_object(obj)}, not a TemplateFamily (templates.TemplateFamily)"


class FamilyRegistry(Registry[TemplateFamily]):
    """Template families by name. Entries are TemplateFamily objects; `add(path)` imports a
    plug-in family and registers it under its own name, so genomes naming it render."""

    def __init__(self, families: Iterable[TemplateFamily] = ()):
        super().__init__("template family", {f.name: f for f in families}, check=_check_family)
        self._aliases: dict[str, TemplateFamily] = {}  # import path -> the family it was added as

    def resolve(self, name: str) -> TemplateFamily:
        if isinstance(name, str) and name in self._entries:
            return self._entries[name]
        if isinstance(name, str) and name in self._aliases:
            return self._aliases[name]
        if not is_import_path(name):
            return super().resolve(name)  # raises "unknown template family ..."
        obj = load_object(name)
        if not isinstance(obj, TemplateFamily) and callable(obj) and not isinstance(obj, type):
            try:
                obj = obj()
            except TypeError as exc:
                raise PluginError(f"template family plug-in {name!r} is {describe_object(load_object(name))} "
                                  f"that cannot be called without arguments ({exc}); give a TemplateFamily") from exc
        family = self.check(obj, name)
        family.space  # noqa: B018 -- load and check the space now, not at render time
        return family

    def get(self, name: str) -> TemplateFamily:
        return self.resolve(name)

    def add(self, name_or_path: str) -> TemplateFamily:
        """Resolve a built-in name or plug-in path and make its family known by its own name (and
        the path as an alias of that same object, so naming it twice gives the same family)."""
        if name_or_path in self._aliases:
            return self._aliases[name_or_path]
        family = self.resolve(name_or_path)
        known = self._entries.get(family.name)
        if known is None:
            self._entries[family.name] = family
        elif known is not family:
            raise PluginError(f"template family plug-in {name_or_path!r} is named {family.name!r}, "
                              "which another family already uses")
        if is_import_path(name_or_path):
            self._aliases[name_or_path] = family
        return family

    def create(self, name: str, *args: Any, **kwargs: Any) -> TemplateFamily:  # pragma: no cover - API symmetry
        return self.resolve(name)

    def space(self, name: str) -> SearchSpace:
        return self.resolve(name).space


def builtin_families() -> list[TemplateFamily]:
    from .skinny_mma import FAMILY as SKINNY
    from .sm90_cutlass import FAMILY as SM90
    from .sm80_cutlass import FAMILY as SM80
    from .sm90_padded import FAMILY as PADDED
    from .sm90_lean import FAMILY as LEAN
    from .sm90_splitk import FAMILY as SPLITK
    from .sm90_cpasync import FAMILY as CPASYNC
    from .sm90_swapab import FAMILY as SWAPAB
    from .skinny_tma import FAMILY as SKINNY_TMA
    from .stream_wgmma import FAMILY as STREAM_WGMMA
    from .sm90_swapab_splitk import FAMILY as SWAPAB_SPLITK
    return [SM90, SKINNY, PADDED, SM80, SPLITK, LEAN, CPASYNC, SWAPAB, SKINNY_TMA, STREAM_WGMMA, SWAPAB_SPLITK]


def default_family() -> str:
    """The family a campaign or a command uses when none is named: the first built-in."""
    return builtin_families()[0].name


def family_registry(extra: Iterable[str] = ()) -> FamilyRegistry:
    """A fresh registry of the built-in families, plus plug-ins named by import path in `extra`."""
    reg = FamilyRegistry(builtin_families())
    for name in extra:
        reg.add(name)
    return reg


def get_family(name: str) -> TemplateFamily:
    """A built-in family (or a plug-in by import path), without a campaign's registry."""
    return family_registry().resolve(name)


def get_space(name: str) -> SearchSpace:
    return get_family(name).space

