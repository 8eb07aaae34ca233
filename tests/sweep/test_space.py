"""--vary parsing, the safe --where evaluator and the crossed space."""
from __future__ import annotations

import pytest

from nkirun.sweep.space import SpaceError, Where, candidate_files, parse_vary, parse_varies, \
    variants


def test_vary_lists_literals_and_inclusive_ranges():
    assert parse_vary("T=1,2,4") == ("T", [1, 2, 4])
    assert parse_vary("dt='bfloat16', 'float32'") == ("dt", ["bfloat16", "float32"])
    assert parse_vary("flag=True") == ("flag", [True])
    assert parse_vary("N=1:8:2") == ("N", [1, 3, 5, 7])
    assert parse_vary("N=2:4") == ("N", [2, 3, 4])
    assert parse_vary("N=-2:0") == ("N", [-2, -1, 0])


@pytest.mark.parametrize("text", ["T", "=1,2", "T=", "T=1,,2", "T=foo(1)", "T=4:1",
                                  "T=1:4:0", "1T=1"])
def test_vary_refuses_what_it_cannot_read(text):
    with pytest.raises(SpaceError, match="--vary"):
        parse_vary(text)


def test_vary_twice_is_refused():
    with pytest.raises(SpaceError, match="twice"):
        parse_varies(["T=1", "T=2"])


def test_where_allows_arithmetic_comparisons_and_booleans():
    w = Where("A * B <= 8 and not (A == 2 or B % 3 == 0) and A in (1, 4)", ["A", "B"])
    assert w({"A": 1, "B": 4}) and not w({"A": 4, "B": 4}) and not w({"A": 1, "B": 3})
    assert Where("A ** 2 > 3 if B else True", ["A", "B"])({"A": 1, "B": 0})


@pytest.mark.parametrize("expr", ["__import__('os').system('true')", "A.real", "A[0]",
                                  "[x for x in (1,)]", "lambda: 1", "open('f')",
                                  "(A := 1)", "f'{A}'"])
def test_where_refuses_everything_else(expr):
    with pytest.raises(SpaceError, match="--where"):
        Where(expr, ["A"])


def test_where_names_only_the_varied_ones():
    with pytest.raises(SpaceError, match="unknown name `C`.*A, B"):
        Where("C > 1", ["A", "B"])


def test_where_refuses_a_huge_power_instead_of_hanging():
    with pytest.raises(SpaceError, match="too large"):
        Where("A ** 100000000 > 1", ["A"])({"A": 10})


def test_space_is_crossed_in_a_fixed_order_and_filtered(tmp_path):
    vary = {"A": [1, 2], "B": [10, 20, 30]}
    out = variants(["k.py"], "f", vary, Where("A * B != 40", vary))
    assert out == [("k.py::f", {"A": 1, "B": 10}), ("k.py::f", {"A": 1, "B": 20}),
                   ("k.py::f", {"A": 1, "B": 30}), ("k.py::f", {"A": 2, "B": 10}),
                   ("k.py::f", {"A": 2, "B": 30})]


def test_a_glob_crosses_each_candidate_file(tmp_path):
    for n in ("b", "a"):
        (tmp_path / f"{n}.py").write_text("")
    files, func = candidate_files(f"{tmp_path}/*.py::k")
    assert [f.rsplit("/", 1)[1] for f in files] == ["a.py", "b.py"] and func == "k"
    assert len(variants(files, func, {"T": [1, 2]})) == 4
    with pytest.raises(SpaceError, match="matches no file"):
        candidate_files(f"{tmp_path}/*.nope::k")
