"""The `nl` convenience functions (NKI 0.3+: wrappers of one instruction) and constants,
against NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import nkirun
from tests.kernel.test_kernel_contract import nkirun_kernel, write

SOURCE = """\
import numpy as np
import pytest
import nki
import nki.isa as nisa
import nki.language as nl


def out_of(t):
    o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(o, t)
    return o


@nki.jit
def language(x, y, col):
    a, b, c = nl.load(x), nl.load(y), nl.load(col)
    results = [
        nl.add(a, b), nl.multiply(a, 2.0), nl.subtract(1.0, a), nl.maximum(a, c),
        nl.exp(a), nl.negative(a), nl.square(b),
        nl.sum(a, axis=1), nl.max(a, axis=1), nl.mean(a, axis=1),
        nl.broadcast_to(c, (128, 16)), nl.zeros((128, 16), dtype=nl.float32),
        nl.full((128, 16), 2.5, dtype=nl.float32), nl.copy(a, dtype=nl.bfloat16),
    ]
    ident = nl.shared_identity_matrix(128, dtype=nl.float32)
    tr = nl.ndarray((16, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=tr, src=nl.transpose(a))
    results.append(tr)
    prod = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=prod, src=nl.matmul(ident, a, transpose_x=True))
    results.append(prod)
    k = nl.load(nl.shared_constant(np.arange(16, dtype=np.float32).reshape(1, 16)))
    results.append(nl.broadcast_to(k, (128, 16)))
    results.append(nl.add(a, nl.tile_size.pmax + nl.num_programs(0) + nl.program_id(0)))
    return tuple(out_of(t) for t in results)
"""


def test_convenience_functions_match_numpy(tmp_path):
    k = nkirun_kernel(write(tmp_path, SOURCE), "language")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((128, 16)).astype(np.float32)
    y = rng.standard_normal((128, 16)).astype(np.float32)
    col = rng.standard_normal((128, 1)).astype(np.float32)
    got = nkirun.simulate(k)(x, y, col)
    import ml_dtypes
    want = [x + y, x * 2, 1 - x, np.maximum(x, col), np.exp(x), -x, y * y,
            x.sum(1, keepdims=True), x.max(1, keepdims=True), x.mean(1, keepdims=True),
            np.repeat(col, 16, 1), np.zeros((128, 16)), np.full((128, 16), 2.5),
            x.astype(ml_dtypes.bfloat16), x.T, x,
            np.repeat(np.arange(16, dtype=np.float32)[None], 128, 0), x + 129]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, i
        np.testing.assert_allclose(g.astype(np.float64), np.asarray(w, np.float64),
                                   rtol=2e-6, atol=2e-6, err_msg=f"result {i}")


def test_constants_and_tokens(tmp_path):
    path = write(tmp_path, """\
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def k(x):
            assert str(nl.float32) == "float32" and nl.bfloat16 == "bfloat16"
            assert x.dtype == nl.float32 and x.buffer == nl.shared_hbm
            assert nl.hbm is nl.private_hbm and nl.is_hbm(x.buffer)
            assert nl.tile_size.pmax == 128 and nl.tile_size.gemm_moving_fmax == 512
            assert nl.tile_size.psum_fmax == 512 and nl.tile_size.gemm_stationary_fmax == 128
            assert list(nl.affine_range(3)) == [0, 1, 2] == list(nl.static_range(0, 3))
            assert nl.program_ndim() == 0 and nisa.reduce_cmd.reset_reduce is not None
            assert {nl.add: 1}[nl.add] == 1 and nl.add is not nl.multiply
            return x
        """)
    k = nkirun_kernel(path, "k")
    x = np.ones((4, 4), np.float32)
    np.testing.assert_array_equal(nkirun.simulate(k)(x), x)


def test_nkiobject_dataclass_fields_without_default_may_be_left_out(tmp_path):
    """nki-library's mlp_tkg builds an NKIObject dataclass without one of its fields (docs
    reading in lang.NKIObject); the field reads None, given fields keep their values."""
    path = write(tmp_path, """\
        from dataclasses import dataclass
        import nki
        import nki.language as nl

        @dataclass
        class Dims(nl.NKIObject):
            rows: int
            unused: int
            cols: int = 4

        @nki.jit
        def k(x):
            d = Dims(rows=x.shape[0])
            assert d.rows == x.shape[0] and d.unused is None and d.cols == 4
            t = nl.load(x)
            o = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            nl.store(o, nl.multiply(t, float(d.cols)))
            return o
        """)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(nkirun.simulate(nkirun_kernel(path, "k"))(x), x * 4)


def test_nkiobject_subclasses_take_keywords_for_plain_class_attributes(tmp_path):
    """nki-library's attention_cte builds a @dataclass NKIObject whose attributes are plain
    class attributes (no dataclass fields) by keyword; positional fields, defaults,
    default factories, __post_init__ and a subclass's own __init__ keep their meaning."""
    path = write(tmp_path, """\
        from dataclasses import dataclass, field
        import nki
        import nki.language as nl

        @dataclass
        class Section(nl.NKIObject):
            index = None
            offset = 0

        @dataclass
        class Tiles(nl.NKIObject):
            rows: int
            cols: int = 8
            names: list = field(default_factory=list)

            def __post_init__(self):
                self.size = self.rows * self.cols

        class Custom(nl.NKIObject):
            def __init__(self, a):
                self.a = a * 2

        @nki.jit
        def k(x, scale):
            s = Section(index=3)
            assert (s.index, s.offset) == (3, 0)
            t = Tiles(2)
            assert (t.rows, t.cols, t.names, t.size) == (2, 8, [], 16)
            assert Tiles(3, cols=2).size == 6 and Custom(5).a == 10
            o = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            nl.store(o, nl.multiply(nl.load(x), scale))
            return o
        """)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    # a NumPy scalar parameter is a number (a kernel's own test may pass 1 / np.sqrt(d))
    got = nkirun.simulate(nkirun_kernel(path, "k"))(x, np.float64(0.5))
    np.testing.assert_array_equal(got, x * 0.5)


def test_a_launch_grid_of_zero_is_a_located_error(tmp_path):
    path = write(tmp_path, """\
        import numpy as np
        import nki
        import nki.language as nl

        @nki.jit
        def k(x):
            o = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            nl.store(o, nl.load(x))
            return o

        def launch(x):
            return k[0](x)
        """)
    from nkirun.diagnostics import NkirunError
    module_k = nkirun_kernel(path, "launch")
    with pytest.raises(NkirunError) as e:
        module_k(np.ones((2, 2), np.float32))
    d = e.value.diagnostics[0]
    assert d.code == "E603" and "k[0]" in d.message and d.loc.line == 12


PARTLY_WRITTEN = """\
    import nki
    import nki.isa as nisa
    import nki.language as nl

    @nki.jit
    def k(x):
        # only row 0 of `t` is written; the transpose reads every row, the store only
        # column 0 of its result (what nki-library's find_nonzero_indices does with garbage)
        t = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[0:1, :], src=x)
        tp = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_transpose(dst=tp, data=t)
        s = nl.ndarray((4, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=s, src=tp[:, 0:1])
        o = nl.ndarray((4, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=s)
        return o
    """


def test_uninitialized_policy_applies_to_kernels(tmp_path):
    """The transpose computes garbage rows that never reach the output: the default policy
    carries them as unwritten and the run succeeds; `strict` stops at the read (E090);
    run --uninitialized / simulate(uninitialized=) zero / nan read them as 0 / NaN."""
    from click.testing import CliRunner
    from nkirun.cli import cli
    from nkirun.diagnostics import NkirunError
    path = write(tmp_path, PARTLY_WRITTEN)
    x = np.array([[1, 2, 3, 4]], np.float32)
    k = nkirun_kernel(path, "k")
    np.testing.assert_array_equal(nkirun.simulate(k)(x), x.T)
    with pytest.raises(NkirunError) as e:
        nkirun.simulate(k, uninitialized="strict")(x)
    assert e.value.diagnostics[0].code == "E090"
    assert "nc_transpose reads `t`" in e.value.diagnostics[0].message
    for policy in ("zero", "nan"):
        np.testing.assert_array_equal(nkirun.simulate(k, uninitialized=policy)(x), x.T)
    with pytest.raises(ValueError):
        nkirun.simulate(k, uninitialized="garbage")
    np.save(tmp_path / "x.npy", x)
    r = CliRunner().invoke(cli, ["run", f"{path}::k", "--input", f"x={tmp_path / 'x.npy'}",
                                 "--uninitialized", "zero", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "out0.npy"), x.T)


OUT_ARGUMENT = """\
    import neuronxcc.nki as nki
    import neuronxcc.nki.language as nl
    from helpers import twice

    @nki.jit
    def add_into(a, b, c, unused):
        nl.store(c, twice(nl.add(nl.load(a), nl.load(b))))
    """


def test_a_kernel_returning_nothing_outputs_the_arguments_it_writes(tmp_path, monkeypatch):
    """The pre-0.2 API's output arguments: `run` writes them (named by the parameter),
    `simulate` / `nki.simulate_kernel` fill the caller's arrays. The kernel sits in a
    folder with an `__init__.py` whose name is no identifier (nki-samples'
    `neuron-team-kernels/`), importing a sibling module absolutely."""
    import sys
    from click.testing import CliRunner
    from nkirun.cli import cli
    folder = tmp_path / "team-kernels"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "helpers.py").write_text("def twice(t):\n    return t * 2.0\n")
    path = write(folder, OUT_ARGUMENT)
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    b = np.ones((2, 4), np.float32)
    c, unused = np.zeros((2, 4), np.float32), np.zeros((2, 4), np.float32)
    for name, arr in dict(a=a, b=b, c=c, u=unused).items():
        np.save(tmp_path / f"{name}.npy", arr)
    monkeypatch.delitem(sys.modules, "helpers", raising=False)
    r = CliRunner().invoke(cli, ["run", f"{path}::add_into", "--out", str(tmp_path / "o")]
                           + [f"--input={p}={tmp_path / f}.npy" for p, f in
                              (("a", "a"), ("b", "b"), ("c", "c"), ("unused", "u"))])
    assert r.exit_code == 0, r.output
    assert "name=c" in r.output and "1 output written" in r.output
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "out0.npy"), (a + b) * 2)
    monkeypatch.syspath_prepend(str(folder))  # as a test in that folder would run
    assert nkirun.simulate(nkirun_kernel(path, "add_into"))(a, b, c, unused) is None
    np.testing.assert_array_equal(c, (a + b) * 2)
    assert not unused.any()


@pytest.mark.parametrize("module", ["nki.language.constants",
                                    "neuronxcc.nki.compiler.backends.neuron.tensor",
                                    "nki.typing.extra", "nki.isa.internal"])
def test_an_undocumented_nki_submodule_is_a_located_e601(tmp_path, module):
    from click.testing import CliRunner
    from nkirun.cli import cli
    path = write(tmp_path, f"""\
        import nki
        import nki.language as nl
        from {module} import something

        @nki.jit
        def k(x):
            return x
        """)
    np.save(tmp_path / "x.npy", np.ones((2, 2), np.float32))
    r = CliRunner().invoke(cli, ["check", f"{path}::k", "--input", f"x={tmp_path / 'x.npy'}"])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert f"{path}:3:1: error[E601]: " in r.output and "is not supported by nkirun" in r.output
