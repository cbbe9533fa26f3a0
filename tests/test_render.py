import random
import time

import pytest

from genome import Genome, InvalidGenome, Patch
from templates import get_space
from templates import block_source, family_registry, render, template_blocks

SPACE = get_space("sm90_cutlass")


def test_family_and_blocks_match_the_space():
    assert "sm90_cutlass" in family_registry().names()
    assert sorted(SPACE.blocks) == template_blocks("sm90_cutlass")


def test_render_thousands_of_sampled_genomes():
    rng = random.Random(11)
    genomes = [SPACE.sample(rng) for _ in range(2000)]
    start = time.monotonic()
    sources = set()
    for g in genomes:
        kernel = render(g)
        p = SPACE.params_of(g)
        tile_m = f"Int<{p['tile_m']}>" if p["tile_m"] in (320, 448) else f"_{p['tile_m']}"   # CuTe names no _320
        assert f"Shape<{tile_m}, _{p['tile_n']}, _{p['tile_k']}>" in kernel.source
        assert ("Layout<Shape<_1, _2, _1>>" in kernel.source) == (p["wg_split"] == "n")
        assert f"Shape<_{p['cluster_m']}, _{p['cluster_n']}, _1>" in kernel.source
        expect = "Cooperative" if p["schedule"] == "cooperative" else "Pingpong"
        assert f"KernelTmaWarpSpecialized{expect}" in kernel.source
        assert ("StreamKScheduler" in kernel.source) == (p["scheduler"] == "streamk")
        assert ("NoSmemWarpSpecialized" in kernel.source) == (p["epilogue"] == "nosmem")
        if p["stages"]:
            assert f"StageCount<{p['stages']}>" in kernel.source
        else:
            assert "StageCountAutoCarveout" in kernel.source
        assert "{{" not in kernel.source and "{%" not in kernel.source
        assert len(kernel.knobs) == 5
        sources.add(kernel.source)
    assert len(sources) > 500  # runtime knobs do not change the source, compile params do
    assert time.monotonic() - start < 20   # rendering and the checks (one Jinja environment a family: ~1 s)


def test_runtime_knobs_do_not_change_the_source():
    g = SPACE.validate(Genome.make("sm90_cutlass", dict(SPACE.default_params(), schedule="cooperative",
                                                         tile_m=128, scheduler="streamk")))
    a = render(g)
    b = render(g.with_params(raster="along_n", swizzle=8, splits=4))
    assert a.source == b.source and a.knobs != b.knobs
    assert b.knobs == (2, 8, 4, 2, 0)


def test_patch_replaces_block_verbatim():
    g = SPACE.validate(Genome.make("sm90_cutlass", dict(SPACE.default_params(), schedule="pingpong")))
    original = block_source(g, "epilogue")
    assert "CollectiveBuilder" in original
    code = "// patched epilogue {{ not jinja }} {% endraw %} {# nor this #}\n" + original
    patched = g.with_patch(Patch("epilogue", code))
    src = render(patched).source
    assert "// patched epilogue {{ not jinja }} {% endraw %} {# nor this #}" in src
    assert src.count("CollectiveEpilogue =") == 1
    assert block_source(patched, "epilogue") == code


def test_render_refuses_invalid_genomes():
    bad = Genome.make("sm90_cutlass", dict(SPACE.default_params(), schedule="cooperative", tile_m=64))
    with pytest.raises(InvalidGenome, match="cooperative-tile-m"):
        render(bad)
    with pytest.raises(InvalidGenome, match="patch-block"):
        render(SPACE.validate(bad.with_params(tile_m=128)).with_patch(Patch("nowhere", "x")))


SM90_FAMILIES = ("sm90_cutlass", "sm90_lean", "sm90_splitk", "sm90_padded", "sm90_cpasync", "sm90_swapab")


@pytest.mark.parametrize("family", SM90_FAMILIES)
def test_a_tile_n_without_a_base_wgmma_turns_on_cutes_extended_shapes_and_no_other_does(family):
    from genome.sm90_cutlass_space import GMMA_BASE_N
    space = get_space(family)
    rng = random.Random(5)
    seen = set()
    for _ in range(150):
        g = space.sample(rng)
        source = render(g).source
        params = space.params_of(g)
        n = params["tile_n"] // 2 if params["wg_split"] == "n" else params["tile_n"]   # each warpgroup's WGMMA
        on = "#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED 1" in source
        assert on == (n not in GMMA_BASE_N), (family, n)
        if on:  # before any CuTe header, and outside every patchable block
            assert source.index("CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED") < source.index('#include "cute/')
        seen.add(on)
    assert seen == {True, False}


def test_the_base_wgmma_widths_are_those_cute_offers_without_the_extended_shapes():
    """GMMA_BASE_N must list exactly the N of the fp16-in, fp32-accumulate SS WGMMAs that CuTe's
    ss_op_selector offers outside `#if defined(CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED)`: a width
    missing from it would build a tile as narrower WGMMAs (a 128x144 tile ran at half speed)."""
    import re
    from pathlib import Path
    from evaluator.compile import cutlass_include_dirs
    from genome.sm90_cutlass_space import GMMA_BASE_N
    try:
        header = Path(cutlass_include_dirs()[0]) / "cute" / "arch" / "mma_sm90.hpp"
    except Exception as exc:  # nvidia-cutlass not installed
        pytest.skip(f"no CUTLASS headers: {exc}")
    if not header.is_file():
        pytest.skip(f"no {header}")
    text = header.read_text()
    body = text[text.index("ss_op_selector()"):text.index("rs_op_selector()")]
    base, extended, guarded = set(), set(), False
    for line in body.splitlines():
        if "#if defined(CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED)" in line:
            guarded = True
        found = re.search(r"MMA_64x(\d+)x16_F32F16F16_SS", line)
        if found:
            (extended if guarded else base).add(int(found.group(1)))
        if line.strip().startswith("#endif"):
            guarded = False
    assert base == set(GMMA_BASE_N)
    assert {144, 176} <= extended


def test_a_family_on_the_sm90_template_without_the_base_widths_always_gets_the_extended_shapes():
    """A plug-in family built on the sm90 template without `template_globals` still renders, and its
    WGMMA is never narrowed (the macro does not change the choice for the base widths)."""
    import dataclasses
    from templates import FamilyRegistry
    base = family_registry().resolve("sm90_cutlass")
    bare = dataclasses.replace(base, template_globals={})
    g = SPACE.repair(SPACE.sample(random.Random(2)).with_params(tile_n=128, wg_split="m"), random.Random(0))
    assert SPACE.params_of(g)["tile_n"] == 128
    assert "CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED" not in render(g).source
    assert "#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED 1" in render(g, FamilyRegistry([bare])).source


def test_every_family_takes_the_host_helpers_from_the_one_shared_template():
    """per_device and current_device live in templates/evogemm_host_state.j2 only: every family's rendered source
    holds that text once, and no template file defines them itself."""
    from pathlib import Path

    from templates import builtin_families
    from templates.render import SHARED_TEMPLATES
    shared = (SHARED_TEMPLATES / "evogemm_host_state.j2").read_text()
    body = shared.split("-#}\n", 1)[1]   # the text after its comment
    for fam in builtin_families():
        source = render(fam.seeds()[0][1]).source
        assert source.count(body) == 1 and source.count("cudaError_t per_device(") == 1, fam.name
    for path in Path(SHARED_TEMPLATES).glob("*/*.j2"):
        assert "cudaError_t per_device(" not in path.read_text(), path


def test_the_tma_families_take_their_host_side_from_the_one_shared_template():
    """The tensor-map encoder and encode_map live in templates/evogemm_tma_host.j2 only: skinny_tma's and
    stream_wgmma's rendered sources hold each once, and no family's template file spells them itself."""
    from pathlib import Path

    from templates import family_registry
    from templates.render import SHARED_TEMPLATES
    shared = (SHARED_TEMPLATES / "evogemm_tma_host.j2").read_text()
    assert "PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder()" in shared and "static int encode_map(" in shared
    for name in ("skinny_tma", "stream_wgmma"):
        source = render(family_registry().resolve(name).seeds()[0][1]).source
        assert source.count("PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {") == 1, name
        assert source.count("static int encode_map(") == 1, name
    for path in Path(SHARED_TEMPLATES).glob("*/*.j2"):
        text = path.read_text()
        assert "tensor_map_encoder() {" not in text and "static int encode_map(" not in text, path
