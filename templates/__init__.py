"""templates: Jinja2 CUDA C++ kernel templates, one folder per family; render(genome) -> source.

A family is a `TemplateFamily` (template folder, space, knobs, flags, architecture, simulator
model, seeds); `family_registry()` holds the built-ins and takes plug-ins by import path.
"""

from .family import (COMMON_NVCC_FLAGS, FamilyRegistry, TemplateFamily, builtin_families, default_family,
                     family_registry, get_family, get_space)
from .render import RenderedKernel, block_params, block_source, frozen_params, render, template_blocks

__all__ = ["COMMON_NVCC_FLAGS", "FamilyRegistry", "TemplateFamily", "builtin_families", "default_family",
           "family_registry",
           "get_family", "get_space", "RenderedKernel", "block_params", "block_source", "frozen_params", "render",
           "template_blocks"]
