"""Runtime loops and registers in `run` (nkirun/control.py): the bodies repeat on the data,
checked against plain Python loops over NumPy written from the documented semantics
(nl.fori_loop: `for i in range(lower, upper, step): body(i)`; nl.while_loop: `while r:
r = body(r)`)."""
import numpy as np
import pytest

from register_helpers import codes, program, run, run_error

ROWS = {"x": "buffer: hbm, shape: [6, 128, 16], dtype: float32",
        "count": "buffer: hbm, shape: [1, 1], dtype: int32",
        "y": "buffer: hbm, shape: [6, 128, 16], dtype: float32, fill: 0, output: true",
        "c": "buffer: sbuf, shape: [1, 1], dtype: int32",
        "t": "buffer: sbuf, shape: [128, 16], dtype: float32"}
Y_ONE = {"y": "buffer: hbm, shape: [1, 1], dtype: int32, fill: 0, output: true"}
TILE = "x.ap([[16,128],[1,16]], scalar_offset=i)"
OUT = "y.ap([[16,128],[1,16]], scalar_offset=i)"


def for_program(start="0", stop="n", step=1):
    return program(ROWS, f"""\
  - dma_copy: {{dst: c, src: count}}
  - register_alloc: {{dst: n}}
  - register_load: {{dst: n, src: c}}
  - for:
      index: i
      start: {start}
      stop: {stop}
      step: {step}
      body:
        - dma_copy: {{dst: t, src: "{TILE}"}}
        - tensor_scalar: {{dst: t, data: t, op0: add, operand0: 1.0}}
        - dma_copy: {{dst: "{OUT}", src: t}}
""")


def reference(x, start, stop, step):
    y = np.zeros_like(x)
    for i in range(start, stop, step):
        y[i] = x[i] + 1
    return y


X = np.random.default_rng(3).standard_normal((6, 128, 16)).astype(np.float32)


@pytest.mark.parametrize("count", [0, 1, 4, 6])
def test_for_loop_runs_count_iterations_from_data(count):
    out = run(for_program(), x=X, count=np.array([[count]], np.int32))
    np.testing.assert_array_equal(out["y"], reference(X, 0, count, 1))


@pytest.mark.parametrize("start,step,count", [(1, 2, 6), (2, 3, 6), (5, 1, 3)])
def test_start_and_step(start, step, count):
    out = run(for_program(start=str(start), step=step), x=X,
              count=np.array([[count]], np.int32))
    np.testing.assert_array_equal(out["y"], reference(X, start, count, step))


def test_register_index_out_of_bounds_at_run_time_is_located_e093():
    diags = run_error(for_program(), x=X, count=np.array([[7]], np.int32))
    assert [d.code for d in diags] == ["E093"]
    assert diags[0].loc.line == 18 and "index 6" in diags[0].message


def test_static_range_is_checked_whole_and_runs():
    assert "E654" in codes(for_program(stop="7"))
    out = run(for_program(start="2", stop="6"), x=X, count=np.array([[0]], np.int32))
    np.testing.assert_array_equal(out["y"], reference(X, 2, 6, 1))


def test_while_loop_counts_down_like_the_documented_example():
    # nl.while_loop's example: acc += val while the count register is nonzero
    text = program({"cnt": "buffer: hbm, shape: [1, 1], dtype: int32",
                    "k": "buffer: sbuf, shape: [1, 1], dtype: int32",
                    "acc": "buffer: sbuf, shape: [1, 1], dtype: float32, fill: 0",
                    "y": "buffer: hbm, shape: [1, 1], dtype: float32, output: true"}, """\
  - dma_copy: {dst: k, src: cnt}
  - register_alloc: {dst: r}
  - register_load: {dst: r, src: k}
  - while:
      cond: r
      body:
        - tensor_scalar: {dst: acc, data: acc, op0: add, operand0: 2.5}
        - tensor_scalar: {dst: k, data: k, op0: subtract, operand0: 1}
        - register_load: {dst: r, src: k}
  - dma_copy: {dst: y, src: acc}
""")
    for n in (0, 1, 5):
        assert run(text, cnt=np.array([[n]], np.int32))["y"][0, 0] == 2.5 * n


def test_while_next_register_is_copied_into_the_condition():
    # r = body(r): the body returns another register; its value becomes the condition
    text = program({"y": "buffer: hbm, shape: [1, 1], dtype: int32, output: true"}, """\
  - register_alloc: {dst: c, x: 1}
  - register_alloc: {dst: nxt, x: 0}
  - register_alloc: {dst: trips, x: 0}
  - while:
      cond: c
      next: nxt
      body:
        - register_move: {dst: trips, src: 7}
  - register_store: {dst: y, src: trips}
""")
    assert run(text)["y"][0, 0] == 7


def test_nested_loops_set_each_index():
    text = program({"y": "buffer: hbm, shape: [3, 4], dtype: int32, fill: -1, output: true",
                    "s": "buffer: sbuf, shape: [1, 1], dtype: int32"}, """\
  - for:
      index: i
      stop: 3
      body:
        - for:
            index: j
            start: 1
            stop: 4
            body:
              - register_store: {dst: s, src: j}
              - dma_copy: {dst: "y.ap([[1,1],[1,1]], offset=0, scalar_offset=i)", src: s}
""")
    # the inner loop's last value (3) is what each row's first element keeps
    np.testing.assert_array_equal(run(text)["y"][:, 0], [3, 3, 3])


def test_loop_bound_never_written_is_e655_at_the_loop():
    body = ("  - register_alloc: {dst: n}\n"
            "  - for: {index: i, stop: n, body: [{register_store: {dst: y, src: i}}]}\n")
    diags = run_error(program(Y_ONE, body))
    assert [d.code for d in diags] == ["E655"] and "loop `i`" in diags[0].message


def test_endless_while_loop_stops_with_e661():
    body = "  - register_alloc: {dst: go, x: 1}\n  - while: {cond: go, body: []}\n"
    diags = run_error(program(Y_ONE, body))
    assert [d.code for d in diags] == ["E661"]


def test_matmul_auto_accumulate_is_decided_once_per_instruction_in_a_loop():
    # the compiler marks the body's matmul as a first write: every iteration overwrites
    text = program({"a": "buffer: sbuf, shape: [4, 8], dtype: float32, fill: 1",
                    "p": "buffer: psum, shape: [8, 8], dtype: float32",
                    "s": "buffer: sbuf, shape: [8, 8], dtype: float32",
                    "y": "buffer: hbm, shape: [8, 8], dtype: float32, output: true"}, """\
  - for:
      index: i
      stop: 3
      body:
        - nc_matmul: {dst: p, stationary: a, moving: a}
  - tensor_copy: {dst: s, src: p}
  - dma_copy: {dst: y, src: s}
""")
    np.testing.assert_array_equal(run(text)["y"], np.full((8, 8), 4.0, np.float32))


def test_loop_carried_tile_is_not_unused_and_stays_live():
    text = program({"k": "buffer: sbuf, shape: [1, 1], dtype: float32, fill: 0",
                    "y": "buffer: hbm, shape: [1, 1], dtype: float32, output: true"}, """\
  - for:
      index: i
      stop: 4
      body:
        - dma_copy: {dst: y, src: k}
        - tensor_scalar: {dst: k, data: k, op0: add, operand0: 1.0}
""")
    assert codes(text) == []
    assert run(text)["y"][0, 0] == 3.0


def test_capacity_counts_a_tile_live_across_the_loop_body():
    from nkirun.checker.control import widen_live

    class B:  # positions 0..4 are instructions 0..4; the loop holds 1..3
        def __init__(self, index):
            self.index = index

    class L:
        first, end = 1, 4

    first, last = {"carried": 0, "inner": 2}, {"carried": 1, "inner": 2}
    widen_live([L], first, last, [B(i) for i in range(5)])
    assert last == {"carried": 3, "inner": 2}


def test_moe_expert_loop_example_through_the_cli(tmp_path):
    from prog_helpers import run_cli
    from repo_paths import PROGRAMS
    data = PROGRAMS / "moe_expert_loop"
    x, count = np.load(data / "x.npy").astype(np.float64), int(np.load(data / "count.npy")[0, 0])
    want = np.zeros_like(x)
    want[:count] = x[:count] / (1 + np.exp(-x[:count])) * 0.5  # silu(x) * 0.5, routed tiles
    got = run_cli(str(PROGRAMS / "moe_expert_loop.yaml"), tmp_path / "out")["y"]
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


def test_dump_keeps_every_iteration(tmp_path):
    from click.testing import CliRunner
    from nkirun.cli import cli
    from repo_paths import PROGRAMS
    r = CliRunner().invoke(cli, ["run", str(PROGRAMS / "moe_expert_loop.yaml"), "--out",
                                 str(tmp_path / "out"), "--dump", str(tmp_path / "d")])
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in (tmp_path / "d").iterdir())
    assert "3_dma_copy" in names and "3_dma_copy_run4" in names and "3_dma_copy_run5" not in names


def test_a_shadow_run_follows_the_runs_loop_registers():
    """run --shadow through a runtime loop: the shadow's register reads (the loop index in
    a scalar_offset) take the real run's values, so the float32 shadow agrees exactly."""
    from repo_paths import PROGRAMS

    from nkirun.api import shadow
    report = shadow(str(PROGRAMS / "moe_expert_loop.yaml"))
    assert not report.warnings, [w.message for w in report.warnings]
    body = [r for r in report.rows if r.op == "activation"]
    assert len(body) >= 2  # the body ran more than once
    assert all(r.carried.abs == 0 for r in report.rows)
