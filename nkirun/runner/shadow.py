"""`run --shadow`: the program as written and, in the same pass, a float32 shadow of it.

Every instruction executes twice: on the real machine (tensors in their declared dtypes)
and on a shadow machine where every float tensor is float32 and nothing is rounded to a
narrower type. The shadow's write also yields a *probe*: the value the instruction would
have stored had its inputs been the shadow's (exact) ones, rounded as written (its
`dtype=` and its destination's dtype). Comparing gives, per instruction (docs/shadow.md):

* carried error: real output vs shadow output (what the output holds after everything
  before it and the instruction itself);
* added error: probe vs shadow output (what this instruction alone contributes when every
  earlier instruction was exact).

The seam into runner/interpret.py is its `step` argument: `Shadow.step(b, m)` runs the
shadow and then the real instruction. Nothing here names an instruction.

Readings:
- Shadowed tensors: float tensors in one value per element (float32/tfloat32/bfloat16/
  float16/fp8). Integer tensors, the MX types and any tensor some instruction reads or
  writes through a view of another dtype (a bit reinterpretation) keep their dtype in the
  shadow too (they are still compared: an index computed from shadow data may differ).
- A tensor enters the shadow at its first use, upcast from the real machine's contents
  (initial data, --input, or storage a kernel just allocated), before either runs it.
- The shadow follows the real run's "which elements hold data" (for NKI's auto-accumulate
  in PSUM) and keeps its own accumulator registers and PRNG state: same instructions, same
  semantics, only in float32. It reports no run-time errors of its own: E090 and friends
  come from the real run. If the shadow alone fails (e.g. a gather index that only the
  shadow's values put out of bounds), W620 says so and the shadow stops there.
- The added error assumes an instruction computes in float32 from its inputs and rounds
  only when it stores (nkirun's model of every engine, hw/dtypes.py): the probe is the
  shadow's stored value passed through the instruction's output casts.
"""
from __future__ import annotations

import numpy as np

from nkirun.diagnostics import NkirunError, warning
from nkirun.hw import dtypes as dt
from nkirun.runner import shadow_native
from nkirun.runner.machine import Machine
from nkirun.runner.shadow_bits import (
    as_f32,
    rounded_f32,
    rounds_on_bits,
)
from nkirun.runner.shadow_cores import TwoCores, touched
from nkirun.runner.shadow_metrics import Row, compare, resolve_places
from nkirun.runner.shadow_stores import (
    Spy,
    WriteStats,
    mirrorable,
    same_state,
    stores_through_write,
    write_selected,
)
from nkirun.runner.streamed import last_streamed
from nkirun.views.operands import Resolved

F32 = np.dtype(np.float32)


def shadowed_dtype(d: dt.DType) -> bool:
    """Whether a tensor of this dtype is kept in float32 in the shadow."""
    return d.is_float and d.packed == 1 and d.name != "float8_e8m0fnu"


def reinterpreted(bound) -> set[str]:
    """Tensors some instruction views as another dtype (their bytes, not their values)."""
    out = set()
    for b in bound:
        acc = b.accesses()
        for _, r in acc.reads + acc.writes:
            if r.ap is not None and r.ap.dtype.name != r.decl.dtype.name:
                out.add(r.decl.name)
    return out


def never_written(bound) -> set[str]:
    """Tensors the instructions read but none writes (e.g. a kernel's inputs): their values
    are the same in both runs throughout, so the shadow can read the real machine's array
    instead of a float32 copy of it (the same values, widened where they are read). Not
    for two-core programs (TwoCores.on): a meeting's exchange writes outside `writes`."""
    read, written = set(), set()
    for b in bound:
        acc = b.accesses()
        read.update(r.decl.name for _, r in acc.reads)
        written.update(r.decl.name for _, r in acc.writes)
    return read - written


class ShadowMachine(Machine):
    """The float32 machine. Its `written` is the real machine's (shared, never changed
    here); shadowed tensors are float32 arrays of the declared shape."""

    def __init__(self, real: Machine, keep_dtype: set[str], shared: frozenset = frozenset()):
        super().__init__({}, real.written)
        self.real = real
        self.fills = real.fills
        self.keep_dtype = keep_dtype
        self.shared = shared  # never written: the real machine's array is used as it is
        self.shadowed: set[str] = set()
        # per store of the current instruction: (Resolved, the values stored here, the
        # probe: what the real dtypes would keep of them, mask, whether the store rounds,
        # whether the probe is the stored float32 values rounded to bfloat16)
        self.records: list = []
        self.probing = True  # False while the real run's inputs equal the shadow's
        self.fast = True  # False: no shortcuts of Shadow.fast (for the tests)
        self.spare: dict = {}  # shape -> float32 arrays of freed shadowed tiles
        self.native = False  # True: shadow_native's C passes (Shadow.native)
        self.adopt = True  # False: every store copied into the tensor (mirrored steps)
        self.adopted: dict = {}  # tensor -> the values it adopted in this instruction

    def enter(self, name: str) -> None:
        """Bring tensor `name` in from the real machine (first use). Storage nothing has
        written yet (a kernel's fresh tile) brings no values: an element is read only
        after a write, or the real run stops at E090."""
        src = self.real.buffers[name]
        if name in self.shared:
            self.buffers[name] = src
            return
        w = self.real.written.get(name)
        blank = self.fast and w is not None and not w.any() and not self.real.fills
        if name not in self.keep_dtype and _is_float_storage(src):
            spare = self.spare.get(src.shape) if blank else None  # (a freed tile's array:
            self.buffers[name] = (spare.pop() if spare  # fresh large arrays fault pages in)
                                  else np.empty(src.shape, F32) if blank else src.astype(F32))
            self.shadowed.add(name)
        else:
            self.buffers[name] = np.empty_like(src) if blank else src.copy()

    def view(self, r: Resolved) -> np.ndarray:
        name = r.decl.name
        if name not in self.shadowed or r.ap is None or r.ap.indirect is not None:
            return super().view(r)
        s = r.ap  # a strided pattern over float32 storage: scale the byte steps
        k = F32.itemsize // s.dtype.itemsize  # (its own dtype: reinterpreted ones stay real)
        buf = self.buffers[name]
        a = np.ndarray(s.shape, F32, buffer=buf, offset=s.byte_offset * k,
                       strides=tuple(x * k for x in s.byte_strides))
        if s.overlapping:
            a.flags.writeable = False
        return a.reshape(r.shape) if s.shape != r.shape else a

    def _typed_flat(self, r: Resolved) -> np.ndarray:
        if r.decl.name not in self.shadowed:
            return super()._typed_flat(r)
        return self.buffers[r.decl.name].reshape(-1)  # element k of the real dtype = k here

    def _check_defined(self, r, rows=None) -> None:
        return None  # undefined reads are the real run's errors (E090)

    def _mark_written(self, r, mask) -> None:
        return None  # `written` is the real machine's

    def direct_view(self, r, shape):
        return None  # every store goes through write(), which records the probe

    def write(self, r: Resolved, values, out_dtype=None, mask=None) -> None:
        if r.ap is not None and r.ap.overlapping:  # a zero-step dst (runner/streamed.py)
            r, values, mask = last_streamed(r, values, mask)
        v = np.asarray(values)
        if r.decl.name not in self.shadowed:
            super().write(r, v, out_dtype, mask)
            stored = self.view(r)
            self.records.append((r, stored, stored, mask, True, False))
            return
        rounds = r.dtype.name != "float32" or (out_dtype is not None
                                               and out_dtype.name != "float32")
        # (with the real run's inputs equal to these, the real stores are the probe)
        on_bits = rounds and self.probing and rounds_on_bits(v, out_dtype, r.dtype)
        probe = (shadow_native.ROUND_BF16 if on_bits and self.native  # (rounded in C,
                 else rounded_f32(v, out_dtype, r.dtype)               # as it compares)
                 if rounds and self.probing else None)
        name, v32 = r.decl.name, as_f32(v)
        if name in self.adopted:  # (its storage is an earlier record's values: keep them)
            self.buffers[name] = self.buffers.pop(name).copy()
            del self.adopted[name]
        dst = self.view(r)
        if self.adopt and mask is None and r.ap is None and self._adoptable(r, v32):
            self.buffers[name] = self.adopted[name] = v32.reshape(self.buffers[name].shape)
            dst = v32  # (the instruction's fresh result becomes the tensor: no copy)
        if v32.shape != dst.shape:
            v32 = (np.broadcast_to(v32, dst.shape) if v32.size != dst.size
                   else v32.reshape(dst.shape))
        if dst is v32:
            pass
        elif mask is None:
            np.copyto(dst, v32)
        else:
            np.copyto(dst, v32, where=mask if mask.shape == dst.shape else mask.reshape(dst.shape))
        if r.ap is not None and r.ap.indirect is not None:
            self._scatter(r, dst, mask)
        self.records.append((r, v32, v32 if probe is None else probe, mask,
                             rounds or v.dtype.kind != "f", self.fast and on_bits))

    def write_select(self, r, cond, on_true, on_false, out_dtype=None, mask=None, regular=None):
        return write_selected(self, r, cond, on_true, on_false, out_dtype, mask, regular)

    def _adoptable(self, r: Resolved, v32: np.ndarray) -> bool:
        """Whether v32 may become tensor r's storage instead of being copied there: a
        whole-tensor store of float32 values filling an array of their own (the result of
        the instruction: no tensor's storage, no argument, no earlier record of it)."""
        if not (self.fast and v32.dtype == F32 and v32.size == self.buffers[r.decl.name].size
                and v32.flags.c_contiguous and r.is_whole):
            return False
        root = _root(v32)
        return (root is not None and root.dtype == F32 and root.size == v32.size
                and not any(root is _root(a) for a in self.buffers.values())
                and not any(root is _root(rec[1]) for rec in self.records)
                and not any(root is _root(a) for a in self.current.args.values()
                            if isinstance(a, np.ndarray)))  # (a constant of the program)


def _root(a: np.ndarray):
    """The array whose memory a views (a itself when it owns it), None if not an array's."""
    while a.base is not None:
        a = a.base
        if not isinstance(a, np.ndarray):
            return None
    return a


_FLOAT_STORAGE: dict = {}  # NumPy dtype -> whether it is shadowed (from_numpy is a scan)


def _is_float_storage(a: np.ndarray) -> bool:
    got = _FLOAT_STORAGE.get(a.dtype)
    if got is None:
        d = dt.from_numpy(a.dtype)
        got = _FLOAT_STORAGE[a.dtype] = d is not None and shadowed_dtype(d)
    return got


def same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """np.array_equal(a, b, equal_nan=True) for the small register arrays, answered by a
    byte compare when the bytes agree (the usual case; a few times faster)."""
    if a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes():
        return True
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))


def same_registers(m: Machine, s: Machine) -> bool:
    """Whether the engines' state an instruction may read besides its tensors (accumulator
    registers, PRNG states, virtual registers) is the same on both machines."""
    for a, c in ((m.vector_acc, s.vector_acc), (m.scalar_acc, s.scalar_acc)):
        if not (same_values(a.value, c.value) and same_values(a.defined, c.defined)):
            return False
    if getattr(m, "registers", None) != getattr(s, "registers", None):  # (nki.isa.register_*)
        return False
    pm, ps = getattr(m, "prng", None) or {}, getattr(s, "prng", None) or {}
    return pm.keys() == ps.keys() and all(np.array_equal(pm[k].state, ps[k].state) for k in pm)


class Shadow:
    """Runs the shadow alongside interpret.execute (pass `step=shadow.step`) and collects
    one Row per instruction; `on_row(row)` is called as each one finishes (--trace)."""

    # False: the plain way for every number (no ULPs from bits, every store's loss
    # measured at the store, fresh storage entering with its values): the tests in
    # tests/runner/test_shadow_bits.py check that both ways give one report
    fast = True
    # False: the NumPy definitions even where the C module (shadow_native) was built; it
    # is also off when NKIRUN_SHADOW_NUMPY=1 (tests/runner/test_shadow_native.py)
    native = True
    # False: the shadow executes every instruction itself; True: one whose inputs agree
    # with the real run's takes the real run's values instead (shadow_stores.mirrorable)
    mirror = True

    def __init__(self, bound, on_row=None):
        self.keep_dtype = reinterpreted(bound)
        self._rows: list[Row] = []
        self._later: dict = {}  # peak coordinates to fill in (shadow_metrics._place)
        self.warnings: list = []
        self.machine: ShadowMachine | None = None
        self.on_row = on_row
        self._previous = ()  # tensors the previous instruction touched
        self._names: dict = {}  # id(b) -> (b, touched(b), its inputs without cores)
        self.dirty: set[str] = set()  # tensors whose shadow values may differ from the real
        self._stopped = False
        self.pool: dict = {}  # scratch arrays for the comparisons, freed with the Shadow
        self.cores = TwoCores(bound)  # a two-core program: per-core registers, sendrecv
        self.shared = (frozenset(never_written(bound)) if self.fast and not self.cores.on
                       else frozenset())
        self.uses_native = self.native and shadow_native.available()

    @property
    def backend(self) -> str:
        """Which comparison this shadow runs: "native" (the C module) or "numpy"."""
        return "native" if self.uses_native else "numpy"

    def step(self, b, m: Machine) -> None:
        if self._stopped:
            b.spec.execute(b, m)
            return
        s = self.machine
        if s is None:
            s = self.machine = ShadowMachine(m, self.keep_dtype, self.shared)
            s.fast = self.fast
            s.native = self.uses_native
        for name in self._previous:  # a kernel frees storage after its last use
            if name not in m.buffers:
                freed = s.buffers.pop(name, None)
                if name in s.shadowed and freed is not None and self.fast:
                    s.spare.setdefault(freed.shape, []).append(freed)  # (for a new tile)
                s.shadowed.discard(name)
        hit = self._names.get(id(b))
        if hit is None or hit[0] is not b:  # (b's tensors and inputs: fixed but for cores)
            hit = self._names[id(b)] = (b, touched(b), self._inputs(b, m))
        names = self._previous = hit[1]
        for name in names:
            if name not in s.buffers and name in m.buffers:
                s.enter(name)
        self.cores.prepare(b, s, m)
        if m.registers:  # the control flow is the real run's: loop indices, bounds, offsets
            s.registers = dict(m.registers)
        s.looped = m.looped  # (runtime loops: which instructions repeat, runner/registers.py)
        s.current, s.records, s.adopted = b, [], {}
        dirty = self.dirty  # (before either runs b; the registers only when that matters)
        inputs = self._inputs(b, m) if self.cores.on else hit[2]  # (a pair is per run)
        exact = not (dirty and any(name in dirty for name in inputs)) \
            and same_registers(m, s)
        s.probing = not exact
        mirror = exact and self.mirror and self.fast and not self.cores.on and mirrorable(b, s)
        s.adopt = not mirror  # (a mirrored store's values are the real run's arrays)
        if not mirror:
            try:
                b.spec.execute(b, s)
            except NkirunError as e:
                self._stop(b, e)
                b.spec.execute(b, m)
                return
        stats = WriteStats(pool=self.pool, loss_deferred=exact and self.fast,
                           native=s.native, mirror=s if mirror else None)
        b.spec.execute(b, Spy(m, stats))
        if mirror:
            same_state(m, s)
        row = compare(b, m, s, s.records, stats, exact, self.dirty, self._later)
        self._rows.append(row)
        if self.on_row is not None:
            resolve_places(self._later)
            self.on_row(row)

    def _inputs(self, b, m):
        """The tensors b's values may depend on: its reads, and its destinations too when
        its module reads storage directly (an auto-accumulating matmul adds to what its
        PSUM tile holds without listing it as read)."""
        names = self.cores.reads(b, m)
        return names if stores_through_write(b.spec) else names + list(touched(b))

    @property
    def rows(self) -> list[Row]:
        """One Row per instruction run so far."""
        if self._later:
            resolve_places(self._later)
        return self._rows

    @property
    def stopped(self) -> bool:
        """Whether the shadow stopped early (W620): its values are then not final."""
        return self._stopped

    def _stop(self, b, e: NkirunError) -> None:
        self._stopped = True
        why = e.diagnostics[0].message if e.diagnostics else str(e)
        self.warnings.append(warning(
            "W620", f"{b.op}: the float32 shadow failed here and stopped ({why}); the "
            "report covers the instructions before it", b.loc(), b.index,
            hint="the shadow's values differ enough to change what this instruction does "
                 "(an index or a bound computed from data); the real run went on"))


def execute_shadowed(program, bound, inputs=None, after_each=None, uninitialized="error",
                     on_row=None):
    """interpret.execute with a shadow: (the real machine, the Shadow with its rows)."""
    from nkirun.runner.interpret import execute
    shadow = Shadow(bound, on_row)
    m = execute(program, bound, inputs, after_each, uninitialized, step=shadow.step)
    return m, shadow
