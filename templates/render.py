"""Render a genome to CUDA C++ source with the Jinja2 template of its family.

Each family is a folder here holding `kernel.cu.j2`. Code patches replace named `{% block %}`
regions: rendering a patched genome renders a child template that extends the family's template
and overrides those blocks with the patch text, taken verbatim (never interpreted as Jinja).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import jinja2

from genome import Genome, get_space

TEMPLATE_DIR = Path(__file__).resolve().parent
TEMPLATE_FILE = "kernel.cu.j2"


@dataclass(frozen=True)
class RenderedKernel:
    genome: Genome
    source: str
    knobs: tuple[int, ...]  # runtime knobs passed through the C ABI


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def families() -> list[str]:
    return sorted(p.name for p in TEMPLATE_DIR.iterdir() if (p / TEMPLATE_FILE).is_file())


def template_blocks(family: str) -> list[str]:
    env = _environment()
    template = env.get_template(f"{family}/{TEMPLATE_FILE}")
    return sorted(template.blocks)


def _raw(text: str) -> str:
    # Patch text is C++; it must never be evaluated as Jinja. Split any literal endraw marker.
    return "{% raw %}" + text.replace("{% endraw %}", "{% endraw %}{{ '{% endraw %}' }}{% raw %}") + "{% endraw %}"


def block_source(genome: Genome, block: str) -> str:
    """The current text of one block of the genome's kernel (patched or as templated)."""
    for patch in genome.patches:
        if patch.block == block:
            return patch.code
    env = _environment()
    template = env.get_template(f"{genome.family}/{TEMPLATE_FILE}")
    if block not in template.blocks:
        raise KeyError(f"family {genome.family} has no block {block!r}; blocks: {', '.join(sorted(template.blocks))}")
    context = template.new_context(_context(genome))
    return "".join(template.blocks[block](context))


def _context(genome: Genome) -> dict:
    compile_params = get_space(genome.family).compile_params(genome)
    return {"p": SimpleNamespace(**compile_params),
            "params_json": json.dumps(compile_params, sort_keys=True)}


def render(genome: Genome) -> RenderedKernel:
    """Validate the genome against its family's rules and render its source."""
    space = get_space(genome.family)
    genome = space.validate(genome)
    env = _environment()
    base = f"{genome.family}/{TEMPLATE_FILE}"
    if genome.patches:
        known = set(env.get_template(base).blocks)
        for patch in genome.patches:
            if patch.block not in known:
                raise KeyError(f"patch names block {patch.block!r}; {genome.family} has: {', '.join(sorted(known))}")
        child = "{% extends '" + base + "' %}\n" + "\n".join(
            "{% block " + p.block + " %}" + _raw(p.code) + "{% endblock %}" for p in genome.patches)
        template = env.from_string(child)
    else:
        template = env.get_template(base)
    source = template.render(**_context(genome))
    return RenderedKernel(genome=genome, source=source, knobs=tuple(_knobs(genome)))


def _knobs(genome: Genome) -> list[int]:
    if genome.family == "sm90_cutlass":
        from genome.sm90_cutlass_space import knobs
        return knobs(genome.param_dict)
    return []
