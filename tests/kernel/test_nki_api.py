"""How NKI's Python API spells each instruction is its spec's (`SPEC.nki`, isa/nki_api.py):
the facts are consistent with the instruction's keywords, and the kernel front end follows
them with nothing of its own — an instruction whose spec gives another positional order,
or a pre-0.2 form, is called so without a change to the front end."""
from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest

import nkirun
from nkirun.isa import MODULES, REGISTRY
from nkirun.isa.nki_api import REQUIRED, UNSET, NkiApi, parameters, signature_text
from nkirun.source.kernel import legacy_affine
from tests.kernel.test_kernel_contract import nkirun_kernel, write


@pytest.mark.parametrize("name", MODULES)
def test_each_instructions_nki_facts_fit_its_keywords(name):
    spec = REGISTRY[name]
    api = spec.nki
    assert api.module in ("nki.isa", "nki.language", "nki.collectives")
    if api.signature and api.front_end:  # NKI's parameters are the front-end function's
        module, _, function = api.front_end.partition(":")
        import inspect
        takes = list(inspect.signature(getattr(importlib.import_module(module),
                                               function)).parameters)
        names = [n for n, _ in parameters(api.signature)]
        assert takes[:len(names)] == names, (takes, names)
    elif api.signature:
        order = parameters(api.signature)
        names = [n for n, _ in order]
        assert len(set(names)) == len(names), names
        for n, default in order:  # a keyword nkirun lacks is dropped at NKI's default
            assert spec.param(n) is not None or default not in (REQUIRED, UNSET), n
        missing = [p.name for p in spec.params if p.required and p.name not in names]
        assert not missing, f"{name}: required keywords not in NKI's order: {missing}"
    assert all(form in legacy_affine.FORMS for form in api.legacy), api.legacy
    for keyword, _old, new in api.aliases:
        p = spec.param(keyword)
        assert p is not None and (p.choices is None or new in p.choices), (keyword, new)
    assert not api.accumulate or spec.param(api.accumulate) is not None
    assert api.recast in ("", "copy") or api.recast in REGISTRY
    assert api.result is None or callable(api.result)
    if api.front_end:
        module, _, function = api.front_end.partition(":")
        assert callable(getattr(importlib.import_module(module), function))
    for keyword, release, advice in api.removed:  # refused with the release (E390)
        assert spec.param(keyword) is None and release.startswith("NKI ") and advice


def test_signatures_are_parsed_once():
    text = REGISTRY["tensor_scalar"].nki.signature
    assert parameters(text) is parameters(text)
    assert parameters("dst src engine=unknown reverse=False x=... n=1") == (
        ("dst", REQUIRED), ("src", REQUIRED), ("engine", "unknown"), ("reverse", False),
        ("x", UNSET), ("n", 1))


def test_nki_isa_holds_the_nki_isa_instructions_and_not_the_nl_functions():
    from nkirun.source.kernel.isa_shim import build_module
    nisa = build_module("nki.isa")
    listed = set(dir(nisa))
    for name in MODULES:
        assert (name in listed) == (REGISTRY[name].nki.module == "nki.isa"), name
    assert REGISTRY["load"].nki.module == "nki.language"
    assert signature_text("load", REGISTRY["load"].nki) == ""
    assert signature_text("tensor_copy", REGISTRY["tensor_copy"].nki) == \
        "nki.isa.tensor_copy(dst, src, engine=unknown)"


SWAPPED = """\
    import nki
    import nki.isa as nisa
    import nki.language as nl

    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        b = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(a, x)
        nisa.copy_src_first(a, b)  # src, then dst: b = a
        nisa.tensor_tensor(b, b, a, nl.add)
        nisa.dma_copy(out, b)
        return out
    """


def test_a_new_positional_order_needs_only_the_spec(tmp_path, monkeypatch):
    """A copy of tensor_copy whose NKI order is (src, dst): added to the table alone, the
    kernel front end maps positional arguments by it."""
    base = REGISTRY["tensor_copy"]
    monkeypatch.setitem(REGISTRY, "copy_src_first", dataclasses.replace(
        base, name="copy_src_first", nki=NkiApi("src dst engine=unknown")))
    from nkirun.source.kernel.modules import modules
    nisa = modules()["nki.isa"]
    try:
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        got = nkirun.simulate(nkirun_kernel(write(tmp_path, SWAPPED), "k"))(x)
        np.testing.assert_array_equal(got, 2 * x)
    finally:
        vars(nisa).pop("copy_src_first", None)  # the module keeps what it made


def test_a_pre_02_form_needs_only_the_spec(tmp_path, monkeypatch):
    """tensor_tensor's column broadcast, given to another instruction by its spec alone."""
    base = REGISTRY["tensor_tensor"]
    monkeypatch.setitem(REGISTRY, "tt_copy", dataclasses.replace(base, name="tt_copy"))
    src = """\
        import neuronxcc.nki as nki
        import neuronxcc.nki.isa as nisa
        import neuronxcc.nki.language as nl

        @nki.jit
        def k(x, col):
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            y = nisa.tt_copy(nl.load(x), nl.load(col), nl.multiply)
            nl.store(out, value=y)
            return out
        """
    from nkirun.source.kernel.modules import modules
    nisa = modules()["nki.isa"]
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    col = np.array([[1.0], [2.0], [3.0]], dtype=np.float32)
    try:
        got = nkirun.simulate(nkirun_kernel(write(tmp_path, src), "k"))(x, col)
        np.testing.assert_array_equal(got, x * col)
    finally:
        vars(nisa).pop("tt_copy", None)


def test_explain_and_the_docs_show_the_kernel_call():
    from nkirun.show.explain import describe, render_text
    from nkirun.show.instruction_docs import instructions_page
    d = describe(REGISTRY["range_select"])
    assert d["nki_call"].startswith("nki.isa.range_select(dst, on_true_tile, comp_op0, ")
    assert f"in a Python kernel: {d['nki_call']}" in " ".join(render_text(d).split())
    assert describe(REGISTRY["load"])["nki_call"] is None
    assert "* `nki.isa.topk(val_dst, idx_dst, src, n)`" in instructions_page()
