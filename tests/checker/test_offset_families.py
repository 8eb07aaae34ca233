"""Offset families (checker/families.py) change nothing: an instruction equal to a checked one
up to tensor names and view offsets skips the rules only when a twin run showed they read
none of the offsets that differ. Each program here binds as the plain path does
(`bind(program, fast=False)`: every rule applied to every instruction) and as with
`speed.OFFSET_FAMILIES` off; the rules that read an offset (a partition start, bounds) are
broken at a new offset of a known family and still reported — and, with a twin that does
not note partition-start reads, the partition-start error is lost: the tests can fail.
"""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from nkirun import speed
from nkirun.checker import families
from nkirun.checker.bind import bind
from nkirun.isa.bound import Bound, Operands
from nkirun.source import parse_file
from nkirun.api_kernel import trace_call
from nkirun.views.operands import Resolved
from repo_paths import load_module

ROOT = pathlib.Path(__file__).resolve().parents[2]
FAST_BIND = load_module(ROOT / "tests" / "checker" / "test_fast_bind.py", "_fast_bind_fam")

def _program(tmp_path, body: str, tensors: str):
    path = tmp_path / "p.yaml"
    path.write_text("version: 1\ntensors:\n" + tensors + "instructions:\n" + body)
    program, diags = parse_file(str(path))
    assert program is not None and not diags
    return program


def _nonzeros(tmp_path, starts):
    """nonzero_with_count of 16 partitions at free offset k and partition starts (src, dst)
    (E463: they must agree modulo 16)."""
    body = "".join(f"  - nonzero_with_count: {{dst: 'd[{b}:{b + 16}, {5 * k}:{5 * k + 5}]', "
                   f"src: 's[{a}:{a + 16}, {4 * k}:{4 * k + 4}]'}}\n"
                   for k, (a, b) in enumerate(starts))
    return _program(tmp_path, body, "  s: {buffer: sbuf, shape: [128, 32], dtype: int32}\n"
                                    "  d: {buffer: sbuf, shape: [128, 40], dtype: int32}\n")


STARTS = [(0, 0), (0, 0), (0, 0), (16, 16), (16, 16), (8, 0), (0, 0), (8, 0)]


@pytest.fixture
def hits(monkeypatch):
    """How many instructions took a family's engine instead of the rules."""
    found = []
    plain = families.Families.engine

    def spy(self, key, values):
        got = plain(self, key, values)
        found.append(got is not None)
        return got
    monkeypatch.setattr(families.Families, "engine", spy)
    return found


def _agree(program, monkeypatch):
    """bind with families == the plain path == families off; names plans as computed."""
    fast = bind(program)
    assert FAST_BIND.summary(*fast) == FAST_BIND.summary(*bind(program, fast=False))
    monkeypatch.setattr(speed, "OFFSET_FAMILIES", False)
    assert FAST_BIND.summary(*fast) == FAST_BIND.summary(*bind(program))
    monkeypatch.setattr(speed, "OFFSET_FAMILIES", True)
    for b in fast[0]:  # (a family member's names plan is its family's: as computed)
        fresh = Bound(b.inst, b.spec, Operands(dict(b.args)), None, b.engine, b.target)
        assert fresh.names_plan() == b.names_plan()
    return fast


def test_a_partition_start_at_a_new_offset_is_still_checked(tmp_path, monkeypatch, hits):
    # free offsets 0..7: one family; starts (0, 0) and (16, 16) pass, (8, 0) breaks E463
    program = _nonzeros(tmp_path, STARTS)
    bound, diags = _agree(program, monkeypatch)
    assert [(d.code, d.instruction) for d in diags] == [("E463", 5), ("E463", 7)]
    # the family's rules read src's and dst's partition start (not their box): the members
    # at starts seen before (#1, #2, #4, #6) took the family's engine
    assert sum(hits) == 4


def test_a_twin_that_misses_a_read_loses_the_error(tmp_path, monkeypatch):
    """The test above can fail: were partition-start reads not noted, #5 and #7 would be
    taken from the family and their E463 lost."""
    monkeypatch.setattr(families.Watched, "part_start",
                        property(families._GET["part_start"]))
    program = _nonzeros(tmp_path, STARTS)
    diags = bind(program)[1]
    assert not diags and bind(program, fast=False)[1]


def test_out_of_bounds_at_a_new_offset_is_reported(tmp_path, monkeypatch, hits):
    body = "".join(f"  - tensor_copy: {{dst: 'd[0:128, 0:64]', src: 's[0:128, {64 * k}:"
                   f"{64 * k + 64}]'}}\n" for k in range(10))  # (s has 512 columns: 8 fit)
    program = _program(tmp_path, body, "  s: {buffer: sbuf, shape: [128, 512], dtype: float32}\n"
                                       "  d: {buffer: sbuf, shape: [128, 64], dtype: float32}\n")
    _, diags = _agree(program, monkeypatch)
    assert [(d.code, d.instruction) for d in diags] == [("E031", 8), ("E031", 9)]
    assert sum(hits) == 7  # (#1..#7: the family of #0)


LOOP = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def offsets(x, n):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for i in range(n):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, 64 * i:64 * (i + 1)])
        nisa.activation(dst=acc[:, 64 * i:64 * (i + 1)], op=nl.exp, data=t)
        nisa.tensor_tensor(dst=acc[:, 0:64], data1=acc[:, 64 * i:64 * (i + 1)],
                           data2=acc[:, 0:64], op=nl.add)
    nisa.dma_copy(dst=out, src=acc)
    return out
'''


def test_a_kernel_over_offsets_binds_like_the_plain_path(tmp_path, monkeypatch, hits):
    (tmp_path / "fam_offsets.py").write_text(LOOP)
    offsets = load_module(tmp_path / "fam_offsets.py", "fam_offsets").offsets
    program = trace_call(offsets, (np.zeros((128, 512), np.float32), 8)).program
    _agree(program, monkeypatch)
    assert sum(hits) >= 3 * 6  # each call of the loop at a new offset, after the first two


@pytest.mark.parametrize("path", FAST_BIND.PROGRAMS + FAST_BIND.INVALID, ids=lambda p: p.name)
def test_programs_bind_alike_with_and_without_families(path, monkeypatch):
    program, _ = parse_file(str(path))
    if program is not None:
        _agree(program, monkeypatch)


def test_watched_notes_what_was_read():
    from nkirun.ir import Slice, TensorDecl, View
    from nkirun.hw.dtypes import DTYPES
    from nkirun.views.operands import resolve
    decl = TensorDecl("t", "sbuf", (128, 64), DTYPES["float32"])
    r, _ = resolve(View("t", (Slice(32, 64), Slice(8, 16))), decl)
    w = families.watched(r)
    assert w == families.watched(r) and isinstance(w, Resolved)
    assert [getattr(w, f) for f in Resolved.__slots__] == \
        [getattr(r, f) for f in Resolved.__slots__]
    w = families.watched(r)
    assert (w.shape, w.decl, w.partitions, w.free_size, w.dtype, w.buffer) == \
        (r.shape, r.decl, r.partitions, r.free_size, r.dtype, r.buffer) and w.read == 0
    assert w.part_start == 32 and w.read == families.PART_START
    assert w.is_whole is False and w.read == families.PART_START | families.BOX
    assert w.np_index == r.np_index and w.read == 7


def test_a_box_read_keys_the_family_by_box(tmp_path):
    """Families.learn with rules that read one operand's box: a later member joins only
    at that box."""
    program = _nonzeros(tmp_path, STARTS[:2])
    bound = bind(program, fast=False)[0]
    fam = families.Families({})
    values = [list(b.args.values()) for b in bound]
    for vs in values:
        for v in vs:
            if v.__class__ is Resolved:
                fam.token[id(v)] = len(fam.token)

    def rules(twin):
        twin.engine = bound[0].engine
        return twin.tile("src").box is not None

    key = fam.key("nonzero_with_count", values[0])
    assert key is not None and key == fam.key("nonzero_with_count", values[1])
    fam.learn(key, bound[0], values[0], rules)
    src = list(bound[0].args).index("src")
    assert fam.known[key][0] == ((src, families.BOX),)
    assert fam.engine(key, values[0])[0] == bound[0].engine
    assert fam.engine(key, values[1]) is None  # (another box)


def test_rules_read_operands_through_the_bound_views():
    """The premise (families.py): a rule reads an offset only through the operands'
    fields. The IR instruction's own views (b.inst.args) hold the offsets too: the only
    instruction module that reads them spells a scalar in a message."""
    readers = sorted(p.name for p in (ROOT / "nkirun" / "isa").glob("*.py")
                     if "inst.args" in p.read_text())
    assert readers == ["tensor_scalar.py"]
    text = (ROOT / "nkirun" / "isa" / "tensor_scalar.py").read_text()
    assert text.count("inst.args") == 1 and "(got {b.inst.args.get(key)})" in text


def test_views_layout_is_layout_key(tmp_path):
    """intern.Views.layout (small ints, each decl and index hashed once) tells layouts
    apart exactly as layout_key does, over every view of the example programs, a traced
    loop over offsets and access patterns (direct and indirect)."""
    from nkirun.checker.intern import Views, layout_key
    from nkirun.ir import View
    pairs = []
    programs = [parse_file(str(p))[0] for p in FAST_BIND.PROGRAMS]
    (tmp_path / "fam_offsets2.py").write_text(LOOP)
    offsets = load_module(tmp_path / "fam_offsets2.py", "fam_offsets2").offsets
    programs.append(trace_call(offsets, (np.zeros((128, 512), np.float32), 4)).program)
    (tmp_path / "fam_aps.py").write_text(FAST_BIND.AP_KERNEL)
    aps = load_module(tmp_path / "fam_aps.py", "fam_aps").aps
    programs.append(trace_call(aps, (np.zeros((128, 512), np.float32), 4)).program)
    for program in filter(None, programs):
        for inst in program.instructions:
            for v in inst.args.values():
                for x in (v if isinstance(v, (tuple, list)) else (v,)):
                    if isinstance(x, View) and x.tensor in program.tensors:
                        pairs.append((program.tensors[x.tensor], x.index))
    views = Views()
    got = [views.layout(d, i) for d, i in pairs]
    want = [layout_key(d, i) for d, i in pairs]
    assert [g is None for g in got] == [w is None for w in want]
    assert any(g is None for g in got) and len(set(want)) > 50
    index = {}
    for g, w in zip(got, want):  # (one pair per layout_key, and one layout_key per pair)
        assert index.setdefault(w, g) == g
    assert len(set(index.values())) == len(index)
