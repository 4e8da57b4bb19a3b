"""What a test can do with the candidate when it runs apart (isolation by process): each test
is one thing that must work as it does in process. Scored with the reference as candidate."""

import itertools
import json
import math
from unittest import mock

import pytest

import shapes
import shapes.geometry
from shapes import Box, Color, NegativeSide, OldWarning, ShapeError, make_box


def test_functions_and_plain_results():
    assert shapes.make_box(2, 3).area() == 6
    assert shapes.geometry.area(2, 5) == 10
    assert shapes.describe_geometry() == "cm"


def test_module_constants():
    assert shapes.VERSION == "1.2"
    assert shapes.LIMITS == {"max": 10, "names": ("a", "b")}


def test_objects_methods_attributes_and_operators():
    box = make_box(2, 3)
    assert box.width == 2
    box.height = 4
    assert box.area() == 8
    assert box.scale(2) is box
    assert (box.width, box.height) == (4, 8)
    assert len(box) == 4
    assert list(box) == [4, 8]
    assert (box + make_box(1, 1)).area() == 45
    assert shapes.total_of(box, make_box(1, 1)) == 45
    with box as inside:
        assert inside is box
    assert repr(box) == "Box(width=4, height=8)"


def test_classes_isinstance_and_equality_between_candidate_objects():
    box = Box(1, 2)
    assert isinstance(box, Box)
    assert box == Box(1, 2)
    assert box != Box(2, 1)


def test_state_kept_between_calls():
    counter = shapes.Counter2()
    assert [counter.bump() for _ in range(3)] == [1, 2, 3]


def test_candidate_exceptions_keep_their_classes():
    with pytest.raises(NegativeSide, match="negative side: -1"):
        make_box(-1, 2)
    with pytest.raises(ShapeError):
        make_box(-1, 2)
    with pytest.raises(ValueError):
        make_box(-1, 2)


def test_standard_library_exceptions_are_themselves():
    with pytest.raises(json.JSONDecodeError):
        shapes.parse("{")
    with pytest.raises(KeyError):
        shapes.color("BLUE")


def test_system_exit_is_a_system_exit():
    with pytest.raises(SystemExit):
        shapes.exit_with(2)


def test_arguments_changed_in_place_are_changed_here():
    items = [3, 1, 2]
    shapes.sort_in_place(items)
    assert items == [1, 2, 3]
    mapping, grid = {}, [[0, 0], [0, 0]]
    shapes.fill(mapping, grid)
    assert mapping == {"done": True}
    assert grid == [[9, 0], [0, 0]]


def test_functions_passed_in_are_called_back():
    assert shapes.apply_all(lambda v: v * 10, [1, 2]) == [10, 20]
    assert shapes.apply_all(shapes.geometry.area.__call__ if False else abs, [-1]) == [1]


def test_generators_cross_lazily():
    assert list(itertools.islice(shapes.squares(), 5)) == [0, 1, 4, 9, 16]


def test_printed_output_is_captured(capsys):
    assert shapes.describe(Box(1, 2)) == "1x2"
    assert capsys.readouterr().out == "box 1x2\n"


def test_warnings_are_warned_here():
    with pytest.warns(OldWarning, match="going away"):
        assert shapes.old_api() == 1
    with pytest.warns(DeprecationWarning):
        shapes.old_api()


def test_standard_library_values_cross_as_themselves():
    found = shapes.numbers()
    assert str(found["dec"]) == "1.10"
    assert found["frac"] * 3 == 1
    assert found["big"] == 2**200
    assert math.isnan(found["nan"])
    assert found["inf"] == math.inf
    assert found["bytes"] == b"\x00\xff"
    assert found["tuple_key"] == {(1, 2): "pair"}
    assert found["set"] == {1, 2}
    assert found["counter"]["a"] == 2
    assert list(found["ordered"]) == ["a"]
    assert found["point"].y == 2
    assert found["point"] == (1, 2)


def test_enum_members_keep_their_identity():
    assert shapes.color("RED") is Color.RED
    assert list(Color) == [Color.RED, Color.GREEN]


def test_a_file_made_in_tmp_path_can_be_handed_over(tmp_path):
    path = tmp_path / "note.txt"
    path.write_text("hello", encoding="utf-8")
    assert shapes.read_file(str(path)) == "HELLO"


def test_monkeypatching_the_candidate_reaches_its_own_calls(monkeypatch):
    monkeypatch.setattr(shapes, "helper", lambda: "patched")
    assert shapes.uses_helper() == "patched!"


def test_mock_patch_records_the_candidates_calls():
    with mock.patch("shapes.helper", return_value="mocked") as fake:
        assert shapes.uses_helper() == "mocked!"
    assert fake.call_count == 1
    assert shapes.uses_helper() == "real!"


def test_a_module_cannot_be_passed_to_the_candidate():
    # Apart only (tests/sandbox/test_isolation.py runs this suite with isolation="process"): in process
    # the module would simply be passed.
    with pytest.raises(TypeError, match="cannot be passed to the candidate"):
        shapes.same(json)


def test_files_beside_the_module_are_found_through_its_file():
    # Suites read data shipped beside a module (os.path.dirname(mod.__file__)).
    import os

    here = os.path.dirname(shapes.__file__)
    assert os.path.basename(shapes.__file__) == "__init__.py"
    assert shapes.geometry.__file__ == os.path.join(here, "geometry.py")
    with open(os.path.join(here, "units.txt")) as fh:
        assert fh.read().strip() == shapes.describe_geometry()


def test_slices_reach_the_candidate_as_slices():
    ring = shapes.Ring([1, 2, 3, 4])
    assert ring[1:3] == [2, 3]
    assert ring[::-1] == [4, 3, 2, 1]
    assert ring[5] == 2
