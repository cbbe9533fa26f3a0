"""A template family defined outside the built-ins: `sm90_copy`, the sm90 CUTLASS template under
another name, with its own template folder.

A real plug-in family would ship its own `kernel.cu.j2` (any C++ that exports the evogemm C ABI),
its own `SearchSpace` (parameters and rules, `genome.SearchSpace`), a knob packer, nvcc flags,
a simulator model (or None: the simulator then reports its genomes as unsupported) and seeds.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from genome import SearchSpace, sm90_cutlass_space
from templates import TemplateFamily, get_family

NAME = "sm90_copy"


def make_space() -> SearchSpace:
    """The sm90 space and rules, under this family's name (a genome names its family)."""
    return dataclasses.replace(sm90_cutlass_space.make_space(), family=NAME,
                               description="a copy of sm90_cutlass (plug-in example)")


def make_family(template_dir: "str | Path | None" = None) -> TemplateFamily:
    """The family; `template_dir` defaults to the built-in sm90 template folder."""
    base = get_family("sm90_cutlass")
    return dataclasses.replace(base, name=NAME, make_space=make_space,
                               template_dir=Path(template_dir) if template_dir else base.template_dir,
                               seeds_dir=None, description="a copy of sm90_cutlass (plug-in example)")


SM90_COPY = make_family()
