"""Render a genome to CUDA C++ source with the Jinja2 template of its family.

The family (a `TemplateFamily`, looked up in the registry given, else the built-ins) names the
template folder. Code patches replace named `{% block %}` regions: rendering a patched genome
renders a child template that extends the family's template and overrides those blocks with the
patch text, taken verbatim: the child template only names each patch (`{{ _evogemm_patch[i] }}`) and the
text comes in as a value of the render context, so it is never parsed as Jinja (no `{% endraw %}`
spelling, `{{ ... }}` or `{% include %}` in a patch can reach the template engine).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

import jinja2

from genome import Genome

from .family import FamilyRegistry, TemplateFamily, family_registry


@dataclass(frozen=True)
class RenderedKernel:
    genome: Genome
    source: str
    knobs: tuple[int, ...]  # runtime knobs passed through the C ABI
    family: TemplateFamily


def _family(genome_or_name: "Genome | str", families: "FamilyRegistry | None") -> TemplateFamily:
    name = genome_or_name.family if isinstance(genome_or_name, Genome) else genome_or_name
    return (families or family_registry()).resolve(name)


# templates every family may include (evogemm_host_state.j2: the host side's per-device helpers), after its own folders
SHARED_TEMPLATES = Path(__file__).resolve().parent


def _environment(family: TemplateFamily) -> jinja2.Environment:
    return _environment_for(tuple(family.template_folders()))


@lru_cache(maxsize=64)
def _environment_for(folders: tuple[str, ...]) -> jinja2.Environment:
    """One environment per template search path, so each template is compiled once per process (its
    loader still reloads a template whose file changed)."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader([*folders, str(SHARED_TEMPLATES)]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def _chain(env: jinja2.Environment, name: str) -> "list[jinja2.Template]":
    """A template and every template it extends, child first."""
    from jinja2 import nodes
    chain: list[jinja2.Template] = []
    seen: set[str] = set()
    while name and name not in seen:
        seen.add(name)
        chain.append(env.get_template(name))
        source, _, _ = env.loader.get_source(env, name)
        parent = env.parse(source).find(nodes.Extends)
        name = parent.template.value if parent is not None and isinstance(parent.template, nodes.Const) else None
    return chain


def _all_blocks(env: jinja2.Environment, name: str) -> set[str]:
    """The blocks of a template and of every template it extends."""
    return {block for template in _chain(env, name) for block in template.blocks}


def template_blocks(family: str, families: "FamilyRegistry | None" = None) -> list[str]:
    fam = _family(family, families)
    return sorted(_all_blocks(_environment(fam), fam.template_file))


_PATCHES = "_evogemm_patch"  # the render-context name under which the patch texts travel


def block_source(genome: Genome, block: str, families: "FamilyRegistry | None" = None) -> str:
    """The current text of one block of the genome's kernel (patched or as templated)."""
    for patch in genome.patches:
        if patch.block == block:
            return patch.code
    fam = _family(genome, families)
    env = _environment(fam)
    chain = _chain(env, fam.template_file)
    if not any(block in t.blocks for t in chain):
        raise KeyError(f"family {genome.family} has no block {block!r}; "
                       f"blocks: {', '.join(sorted(_all_blocks(env, fam.template_file)))}")
    context = chain[0].new_context(_context(genome, fam))
    for parent in chain[1:]:  # as rendering does, so that a block calling super() finds its parent's
        for name, render_block in parent.blocks.items():
            context.blocks.setdefault(name, []).append(render_block)
    return "".join(context.blocks[block][0](context))


def block_params(family: str, block: str, families: "FamilyRegistry | None" = None) -> frozenset[str]:
    """The family's parameters that one block's template text uses (`p.NAME`, `p['NAME']`, also
    through `super()`): what a code patch of that block covers."""
    fam = _family(family, families)
    return _block_params(tuple(fam.template_folders()), fam.template_file, block) & frozenset(fam.space.names)


@lru_cache(maxsize=512)  # a pure function of the template files; parsing them is the slow part
def _block_params(folders: tuple[str, ...], template_file: str, block: str) -> frozenset[str]:
    from jinja2 import nodes
    env = _environment_for(folders)
    names: set[str] = set()
    for template in _chain(env, template_file):
        source, _, _ = env.loader.get_source(env, template.name)
        owner = next((b for b in env.parse(source).find_all(nodes.Block) if b.name == block), None)
        if owner is None:
            continue
        names |= _param_names(env, owner, set())
        calls_super = any(isinstance(c.node, nodes.Name) and c.node.name == "super" for c in owner.find_all(nodes.Call))
        if not calls_super:
            break
    return frozenset(names)


def _param_names(env: jinja2.Environment, node: "jinja2.nodes.Node", seen: set[str]) -> set[str]:
    """The `p.NAME` / `p['NAME']` a template node uses, also in the templates it includes by name."""
    from jinja2 import nodes
    names: set[str] = set()
    for found in node.find_all((nodes.Getattr, nodes.Getitem)):
        if isinstance(found.node, nodes.Name) and found.node.name == "p":
            key = found.attr if isinstance(found, nodes.Getattr) else getattr(found.arg, "value", None)
            if isinstance(key, str):
                names.add(key)
    for include in node.find_all(nodes.Include):
        name = include.template.value if isinstance(include.template, nodes.Const) else None
        if isinstance(name, str) and name not in seen:
            seen.add(name)
            source, _, _ = env.loader.get_source(env, name)
            names |= _param_names(env, env.parse(source), seen)
    return names


def frozen_params(genome: Genome, families: "FamilyRegistry | None" = None) -> frozenset[str]:
    """The parameters fixed in this genome: those its patched blocks cover. Changing one would give
    a new genome id but not new code, so operators leave them as they are (OperatorContext.frozen)."""
    if not genome.patches:
        return frozenset()
    return frozenset().union(*(block_params(genome.family, p.block, families) for p in genome.patches))


def _context(genome: Genome, family: TemplateFamily) -> dict:
    compile_params = family.space.compile_params(genome)
    named = {k: v for k, v in compile_params.items() if k in genome.param_dict}  # implicit defaults: as before
    return {**family.template_globals, "p": SimpleNamespace(**compile_params), "family": family.name,
            "params_json": json.dumps(named, sort_keys=True)}


def render(genome: Genome, families: "FamilyRegistry | None" = None) -> RenderedKernel:
    """Validate the genome against its family's rules and render its source."""
    fam = _family(genome, families)
    genome = fam.space.validate(genome)
    env = _environment(fam)
    if genome.patches:
        known = _all_blocks(env, fam.template_file)
        for patch in genome.patches:
            if patch.block not in known:
                raise KeyError(f"patch names block {patch.block!r}; {genome.family} has: {', '.join(sorted(known))}")
        child = "{% extends '" + fam.template_file + "' %}\n" + "\n".join(
            "{% block " + p.block + " %}{{ " + _PATCHES + "[" + str(i) + "] }}{% endblock %}"
            for i, p in enumerate(genome.patches))
        template = env.from_string(child)
    else:
        template = env.get_template(fam.template_file)
    source = template.render(**_context(genome, fam), **{_PATCHES: [p.code for p in genome.patches]})
    return RenderedKernel(genome=genome, source=source, knobs=fam.knob_vector(genome), family=fam)
