"""The typed program IR both front ends (YAML, text) produce.

Frozen dataclasses; every node keeps the source position of the text it came from so
diagnostics can point at it.
"""
from __future__ import annotations

from dataclasses import field, fields
from types import MappingProxyType
from typing import Any

from nkirun.records import record
from nkirun.hw.dtypes import DType
from nkirun.diagnostics import Loc

BUFFERS = ("hbm", "sbuf", "psum")
ON_CHIP = frozenset({"sbuf", "psum"})


@record(frozen=True, slots=True)
class Slice:
    """`start:stop:step` of one dimension of a view's index."""
    start: int | None = None
    stop: int | None = None
    step: int | None = None

    def __str__(self) -> str:
        s = f"{'' if self.start is None else self.start}:{'' if self.stop is None else self.stop}"
        return s if self.step is None else f"{s}:{self.step}"


@record(frozen=True, slots=True)
class View:
    """An operand: a tensor name with an optional NumPy basic index (`t[:, 0:512]`), or with
    an access pattern (`t.ap([[512,128],[1,512]],offset=8)`: `index` is an AccessPattern)."""

    tensor: str
    index: "tuple[int | Slice, ...] | AccessPattern | None" = None  # None: the whole tensor
    loc: Loc = field(default_factory=Loc, compare=False)

    def __str__(self) -> str:
        if self.index is None:
            return self.tensor
        if not isinstance(self.index, tuple):  # an AccessPattern: `t.ap([[512,128],[1,512]])`
            return f"{self.tensor}{self.index}"
        return f"{self.tensor}[{', '.join(str(i) for i in self.index)}]"


@record(frozen=True, slots=True)
class AccessPattern:
    """NKI's `.ap()`: a view as an explicit access pattern over the tensor's storage.

    Element k = (k0, k1, ...) of the view is storage element
    `offset + sum(step_i * k_i)`, counted in elements of `dtype` from the start of the
    tensor's storage (the tensor reinterpreted as `dtype` when one is given). For SBUF/PSUM
    tensors the first (step, num) pair is the partition entry. `str()` is the spelling both
    program formats read back: `.ap([[512,128],[1,512]],offset=8,dtype=bfloat16)`.
    """

    pattern: tuple[tuple[int, int], ...]  # (step, num) per dimension, outermost first
    offset: int = 0
    dtype: DType | None = None  # reinterpret the storage as this dtype (None: the tensor's)
    # Indirect (runtime) addressing of one dimension: an SBUF tensor holding the index.
    scalar_offset: "View | None" = None
    vector_offset: "View | None" = None
    indirect_dim: int = 0
    # The index's step in elements of the tensor's own dtype, where it is no dim's stride
    # (a kernel's `.ap(...)` on a reshape of the tensor); None: dim indirect_dim's stride.
    indirect_stride: int | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(n for _, n in self.pattern)

    def __str__(self) -> str:
        out = ["[" + ",".join(f"[{s},{n}]" for s, n in self.pattern) + "]"]
        if self.offset:
            out.append(f"offset={self.offset}")
        if self.dtype is not None:
            out.append(f"dtype={self.dtype.name}")
        if self.scalar_offset is not None:
            out.append(f"scalar_offset={self.scalar_offset}")
        if self.vector_offset is not None:
            out.append(f"vector_offset={self.vector_offset}")
        if self.indirect_dim:
            out.append(f"indirect_dim={self.indirect_dim}")
        if self.indirect_stride is not None:
            out.append(f"indirect_stride={self.indirect_stride}")
        return ".ap(" + ",".join(out) + ")"


@record(frozen=True, slots=True)
class Register:
    """A virtual register (nki.isa.register_alloc): a 32-bit integer of the machine, named
    like a tensor. An operand of the register_* instructions, a loop bound, or an access
    pattern's `scalar_offset`."""

    name: str

    def __str__(self) -> str:
        return self.name


@record(frozen=True, slots=True)
class Loop:
    """A runtime loop (nl.dynamic_range / fori_loop / while_loop) over the instructions
    whose index is in [first, end): the body appears once in `Program.instructions`;
    nkirun/control.py gives the order they run in. Loops nest properly.

    `for`: the body runs for i = start, start+step, ... < stop, `index` (a register) set to
    i before each iteration; start/stop are ints or Registers read when the loop is entered.
    `while`: the body runs while register `cond` is nonzero, tested before each iteration;
    after each iteration `cond` takes the value of register `next` (None: cond itself).
    """

    kind: str  # "for" | "while"
    first: int
    end: int
    name: str  # for `cost --trip NAME=N` and messages
    index: str | None = None
    start: "int | Register" = 0
    stop: "int | Register" = 0
    step: int = 1
    cond: str | None = None
    next: str | None = None
    named: bool = False  # the source gave `name` (written back by convert)
    core: int = 0  # a two-core program: the core whose stream holds the loop
    loc: Loc = field(default_factory=Loc, compare=False)
    key_locs: dict = field(default_factory=dict, compare=False)

    def key_loc(self, key: str) -> Loc:
        return self.key_locs.get(key, self.loc)


@record(frozen=True, slots=True)
class TensorDecl:
    """A declared tensor: buffer, shape, dtype and initial contents."""
    name: str
    buffer: str
    shape: tuple[int, ...]
    dtype: DType
    init: str | None = None  # "file" | "fill" | "data" | "input" (run --input) | None
    init_value: Any = None  # path (str), scalar, or nested list
    output: bool = False
    loc: Loc = field(default_factory=Loc, compare=False)
    key_locs: dict[str, Loc] = field(default_factory=dict, compare=False)
    # Two-core (LNC2) programs: the core (0 or 1) that owns an SBUF/PSUM/private-HBM
    # tensor; None: shared by both cores (shared HBM), or a one-core program.
    core: int | None = None

    @property
    def on_chip(self) -> bool:
        return self.buffer in ON_CHIP

    @property
    def partitions(self) -> int:
        return self.shape[0]

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def bytes_per_partition(self) -> int:
        return self.size // self.shape[0] * self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize


@record(frozen=True, slots=True)
class Instruction:
    """One instruction of a program: its op, typed keyword arguments and place."""
    op: str
    args: dict[str, Any]  # keyword -> typed value (View, float, int, str, tuple, ...)
    index: int  # position in the program
    loc: Loc = field(default_factory=Loc, compare=False)
    arg_locs: dict[str, Loc] = field(default_factory=dict, compare=False)
    # The index of an earlier instruction whose keywords and values this one repeats
    # exactly (a front end saw the same text): the checker reuses what it found for that one.
    repeat_of: int | None = field(default=None, compare=False)
    core: int = 0  # the core whose stream it is in (two-core programs: 0 or 1)

    def arg_loc(self, key: str) -> Loc:
        return self.arg_locs.get(key, self.loc)


# The front ends' repeated-line path builds one View per operand and one Instruction per
# line of a trace (100,000s); filling the slots directly, as errors.loc_at does for Loc, is
# about twice as fast as the frozen dataclasses' __init__. Every field is given.
_new = object.__new__
_VIEW_SET = tuple(getattr(View, f).__set__ for f in ("tensor", "index", "loc"))
_INST_SET = tuple(getattr(Instruction, f).__set__
                  for f in ("op", "args", "index", "loc", "arg_locs", "repeat_of", "core"))


_DECL_FIELDS = ("name", "buffer", "shape", "dtype", "init", "init_value", "output", "loc",
                "key_locs", "core")
assert _DECL_FIELDS == tuple(f.name for f in fields(TensorDecl)), "update tensor_at"
_DECL_SET = tuple(getattr(TensorDecl, f).__set__ for f in _DECL_FIELDS)


_NO_KEY_LOCS = MappingProxyType({})  # shared, read-only: a traced tile has no YAML keys


def tensor_at(name: str, buffer: str, shape: tuple, dtype: DType, loc: Loc,
              core: int | None = None) -> TensorDecl:
    """`TensorDecl(name, buffer, shape, dtype, None, None, False, loc, {}, core)`, fast (see
    above): a traced kernel declares a tensor per tile it allocates."""
    t = _new(TensorDecl)
    set_name, set_buffer, set_shape, set_dtype, set_init, set_init_value, set_output, \
        set_loc, set_key_locs, set_core = _DECL_SET
    set_name(t, name)
    set_buffer(t, buffer)
    set_shape(t, shape)
    set_dtype(t, dtype)
    set_init(t, None)
    set_init_value(t, None)
    set_output(t, False)
    set_loc(t, loc)
    set_key_locs(t, _NO_KEY_LOCS)
    set_core(t, core)
    return t


def view_at(tensor: str, index, loc: Loc) -> View:
    """`View(tensor, index, loc)`, fast (see above)."""
    v = _new(View)
    set_tensor, set_index, set_loc = _VIEW_SET
    set_tensor(v, tensor)
    set_index(v, index)
    set_loc(v, loc)
    return v


def instruction_at(op: str, args: dict, index: int, loc: Loc, arg_locs: dict,
                   repeat_of: int | None, core: int = 0) -> Instruction:
    """`Instruction(op, args, index, loc, arg_locs, repeat_of, core)`, fast (see above)."""
    inst = _new(Instruction)
    set_op, set_args, set_index, set_loc, set_arg_locs, set_repeat_of, set_core = _INST_SET
    set_op(inst, op)
    set_args(inst, args)
    set_index(inst, index)
    set_loc(inst, loc)
    set_arg_locs(inst, arg_locs)
    set_repeat_of(inst, repeat_of)
    set_core(inst, core)
    return inst


@record(frozen=True, slots=True)
class Program:
    """A whole program: its tensors and instructions (what every front end builds)."""
    version: int
    target: str
    tensors: dict[str, TensorDecl]
    instructions: tuple[Instruction, ...]
    name: str | None = None
    path: str = "<program>"  # as given by the user, for messages
    base_dir: str = "."  # data files are relative to this folder
    source_lines: tuple[str, ...] = field(default=(), compare=False, repr=False)
    # Tensors whose declaration had errors, and instructions dropped for errors: later
    # passes stay quiet about them rather than reporting knock-on errors.
    invalid_tensors: frozenset[str] = field(default=frozenset(), compare=False)
    dropped: frozenset[int] = field(default=frozenset(), compare=False)
    # The dropped instructions that had a known op, with the keywords that did convert:
    # checked for what can still be checked, never run or costed.
    partial: tuple[Instruction, ...] = field(default=(), compare=False)
    # 1, or 2 for a Logical NeuronCore of two cores (LNC2): each instruction then belongs
    # to one core's stream (Instruction.core), run in program order within its core; the
    # two streams meet only at sendrecv/core_barrier (checker/cores.py).
    cores: int = 1
    # Runtime loops over spans of `instructions`, outermost first (empty: straight-line).
    loops: tuple[Loop, ...] = ()
    # "compiler": the compiler places the on-chip tensors and spills a live set over
    # capacity (W047); "explicit": the kernel pins them (nki.compiler allocators,
    # address=), so an over-full live set is E041 (checker/capacity.py).
    placement: str = field(default="compiler", compare=False)
    # The compiler keeps one buffer per on-chip allocation site (a kernel under
    # nki.compiler.skip_middle_end_transformations): the cost model orders the accesses of
    # tensors allocated at one place as accesses of one tensor (schedule/scheduler.py).
    reuse_buffers: bool = False

    def to_yaml(self) -> str:
        """This program as YAML (what `convert --to yaml` writes; a kernel parameter given
        at run time has no initial contents: pass it with `run --input` / `inputs=`)."""
        return WRITER[0](self, "yaml")

    def to_text(self) -> str:
        """This program in the text format (`convert --to text`)."""
        return WRITER[0](self, "text")


# source/write.py's write_program, put here when it is imported (the IR sits below the
# front ends that write it; `import nkirun` imports the writer)
WRITER: list = [None]


def rename_tensors(program: Program, mapping: dict[str, str]) -> Program:
    """The program with tensors renamed (`mapping`: old -> new name) in their declarations
    and in every operand; a tensor already holding a new name moves aside (`out0_1`).
    Instructions come out with plain `args` and `arg_locs` (a written program's form)."""
    if not mapping:
        return program
    taken = set(program.tensors) - set(mapping) | set(mapping.values())
    for name in list(program.tensors):
        if name not in mapping and name in mapping.values():
            k = 1
            while f"{name}_{k}" in taken:
                k += 1
            mapping[name] = f"{name}_{k}"
            taken.add(mapping[name])

    def new(v):
        if isinstance(v, View):
            return View(mapping.get(v.tensor, v.tensor), new(v.index), v.loc)
        if isinstance(v, AccessPattern):
            return AccessPattern(v.pattern, v.offset, v.dtype, new(v.scalar_offset),
                                 new(v.vector_offset), v.indirect_dim)
        if isinstance(v, (tuple, list)) and not isinstance(v, str):
            return type(v)(new(x) for x in v)
        return v
    tensors = {mapping.get(n, n): _renamed_decl(t, mapping.get(n, n))
               for n, t in program.tensors.items()}
    insts = tuple(Instruction(i.op, {k: new(v) for k, v in dict(i.args).items()}, i.index,
                              i.loc, dict(i.arg_locs), i.repeat_of, i.core)
                  for i in program.instructions)
    from dataclasses import replace
    return replace(program, tensors=tensors, instructions=insts,
                   invalid_tensors=frozenset(mapping.get(n, n) for n in program.invalid_tensors))


def _renamed_decl(t: TensorDecl, name: str) -> TensorDecl:
    from dataclasses import replace
    return t if t.name == name else replace(t, name=name)
