import json

import pytest

from genome import Genome

from experiments.compare_halls import compare, main


LABELS = ("a1", "a2", "b1", "failed0")  # each a distinct real genome: load_results checks ids against content


def _g(label):
    return Genome.make("sm90_cutlass", {"tile_n": (32, 64, 96, 128)[LABELS.index(label)]})


def _timing(us):
    return {"median_us": us, "min_us": us, "max_us": us, "repeats": 5}


def _bench(path, shapes):
    """A bench.json with the given {shape: (vendor_us, {label: us})}, and a kernel that failed the gate."""
    data = {"meta": {}, "shapes": [
        {"problem": shape,
         "baselines": {"problem": shape, "device": {"torch_tn": _timing(v), "x": _timing(v * 2)}},
         "kernels": [{"genome": _g(label).to_dict(), "measurement": {"genome_id": _g(label).id, "problem": shape, "status": "ok",
                                                                "device": _timing(t)}}
                     for label, t in kernels.items()]
         + [{"genome": _g("failed0").to_dict(), "measurement": {"genome_id": _g("failed0").id, "problem": shape,
                                                           "status": "gate_failed"}}]}
        for shape, (v, kernels) in shapes.items()]}
    path.write_text(json.dumps(data))
    return path


def _hall(folder, halls):
    (folder / "hall_of_fame").mkdir(parents=True)
    for shape, ids in halls.items():
        (folder / "hall_of_fame" / f"{shape}.json").write_text(json.dumps([{"genome": {"id": _g(i).id}} for i in ids]))
    return folder


def test_each_arm_gets_its_own_fastest_timed_kernel_and_the_geomeans(tmp_path):
    bench = _bench(tmp_path / "bench.json", {"64x64x64": (10.0, {"a1": 12.5, "a2": 20.0, "b1": 8.0}),
                                             "128x128x128": (20.0, {"a1": 20.0, "b1": 25.0})})
    a = _hall(tmp_path / "a", {"64x64x64": ["a1", "a2", "failed0"], "128x128x128": ["a1"]})
    b = _hall(tmp_path / "b", {"64x64x64": ["b1"], "128x128x128": ["b1"]})
    text = compare(bench, {"old": [a], "new": [b]})
    rows = [line for line in text.splitlines() if line.startswith("| 64") or line.startswith("| 128")]
    a1, b1 = _g("a1").id[:8], _g("b1").id[:8]
    assert rows[0] == f"| 64x64x64 | 10.0 | 12.5 `{a1}` | 0.800 | 8.0 `{b1}` | 1.250 | 1.562 |"
    assert rows[1] == f"| 128x128x128 | 20.0 | 20.0 `{a1}` | 1.000 | 25.0 `{b1}` | 0.800 | 0.800 |"
    assert "old 0.8944, new 1.0000 (new / old 1.1180); new better by >1% at 1 shapes, worse by >1% at 1" in text


def test_a_shape_one_arm_has_no_timed_kernel_for_is_dashed_and_left_out_of_the_geomeans(tmp_path, capsys):
    bench = _bench(tmp_path / "bench.json", {"64x64x64": (10.0, {"a1": 12.5}),
                                             "128x128x128": (20.0, {"a1": 20.0, "b1": 25.0})})
    a = _hall(tmp_path / "a", {"64x64x64": ["a1"], "128x128x128": ["a1"]})
    b = _hall(tmp_path / "b", {"64x64x64": ["failed0"], "128x128x128": ["b1"]})
    text = compare(bench, {"old": [a], "new": [b]})
    assert f"| 64x64x64 | 10.0 | 12.5 `{_g('a1').id[:8]}` | 0.800 | - | - | - |" in text
    assert "over the 1 shapes both have: old 1.0000, new 0.8000" in text
    assert "no kernel of the 'new' halls timed at: 64x64x64" in text
    assert "'old' halls timed at" not in text
    only_a = _bench(tmp_path / "only-a.json", {"64x64x64": (10.0, {"a1": 12.5})})
    with pytest.raises(ValueError, match="no shape of .* has a timed kernel of both"):
        compare(only_a, {"old": [a], "new": [b]})
    assert main([str(bench), f"old={a}"]) == 2
    assert main([str(bench), f"old={a}", f"new={a},{a}"]) == 0
    assert "| 64x64x64 |" in capsys.readouterr().out
