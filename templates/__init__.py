"""templates: Jinja2 CUDA C++ kernel templates, one folder per family; render(genome) -> source."""

from .render import RenderedKernel, block_source, families, render, template_blocks

__all__ = ["RenderedKernel", "block_source", "families", "render", "template_blocks"]
