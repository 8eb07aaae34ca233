"""Format-independent program building: both front ends (YAML and text) hand plain
values with their source positions to a `Builder`, which checks the structure, converts
every keyword through the instruction table and produces the typed IR.
"""
from __future__ import annotations

from nkirun.hw import dtypes as dt
from nkirun.diagnostics import Loc, error, closest, did_you_mean  # noqa: F401 (did_you_mean: re-exported)
from nkirun.ir import Instruction, Program, TensorDecl, instruction_at, view_at
from nkirun.isa import REGISTRY
from nkirun.isa.spec import ArgError, convert, normalize_name, param_tables
from nkirun.views.operands import ViewSyntaxError, parse_view
from nkirun.hw.targets import DEFAULT_TARGET, TARGETS
from nkirun.source import tensor_fields
from nkirun.source.cores import tensor_core
from nkirun.source.tensor_fields import BUFFER_ALIASES, NAME_RE, TENSOR_KEYS  # noqa: F401

SCALAR_WORDS = frozenset({"inf", "nan"})  # tensor names that would read as numbers
TOP_KEYS = ("version", "name", "target", "tensors", "instructions", "cores")
MAX_UNKNOWN_REPORTED = 10  # unknown keywords of one instruction reported one by one


def _keep_mention(values: dict, key: str, raw, loc: Loc, guess) -> None:
    """An unknown keyword's value, kept in a dropped instruction (never run) so the
    checker still sees the tensor it names: under the keyword it was probably meant as
    when that converts (the operand is then checked too), else as a view under its own
    name (the dataflow pass then does not call that tensor unused)."""
    if not isinstance(raw, str):
        return
    for p in (guess, None):
        try:
            if p is not None and p.kind.is_view:
                values[p.name] = convert(p, raw, loc)
                return
            if p is None:
                values[key] = parse_view(raw, loc)
        except (ArgError, ViewSyntaxError):
            pass


def _type_name(v) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a mapping", type(None): "nothing"}.get(type(v), type(v).__name__)


class Builder:
    def __init__(self, path: str, base_dir: str, lines: tuple[str, ...] = ()):
        self.path, self.base_dir, self.lines = path, base_dir, lines
        self.diags = []
        self.version = None
        self.name = None
        self.target = DEFAULT_TARGET
        self.tensors: dict[str, TensorDecl] = {}
        self.invalid_tensors: set[str] = set()
        self.instructions: list[Instruction] = []
        self.dropped: set[int] = set()
        self.partial: list[Instruction] = []
        self.count = 0  # instruction entries seen (valid or not)
        self.cores = 1  # 2 once the source names a core (source/cores.py)
        self.core = 0  # the core whose stream new instructions join
        self._converted: dict = {}  # (op, key, type, raw) -> (typed value,)
        self.loops: list[dict] = []  # closed runtime loops (source/loops.py)
        self.open_loops: list[tuple] = []

    # ---- top level ---------------------------------------------------------------------------
    def top(self, key: str, value, kloc: Loc, vloc: Loc) -> None:
        if key == "version":
            if value != 1 or isinstance(value, bool):
                self.diags.append(error("E004", f"unsupported program format version {value!r}",
                                        vloc, hint="this nkirun reads `version: 1`"))
            self.version = value
        elif key == "name":
            if value is not None and not isinstance(value, str):
                self.diags.append(error("E006", "`name` must be a string", vloc))
            self.name = None if value is None else str(value)
        elif key == "target":
            if not isinstance(value, str) or value.lower() not in TARGETS:
                self.diags.append(error("E007", f"unknown target {value!r}", vloc,
                                        hint="allowed: " + ", ".join(TARGETS)))
            else:
                self.target = value.lower()
        else:
            self.diags.append(error("E003", f"unknown top-level key `{key}`", kloc,
                                    hint=did_you_mean(key, TOP_KEYS)
                                    or "allowed: " + ", ".join(TOP_KEYS)))

    # ---- tensors -----------------------------------------------------------------------------
    def tensor(self, name, fields, loc: Loc) -> None:
        bad = self._tensor(name, fields, loc)
        if bad and isinstance(name, str):
            self.invalid_tensors.add(name)

    def _tensor(self, name, fields, loc: Loc) -> bool:
        """Declares one tensor; True when its declaration is invalid."""
        d = self.diags
        n0 = len(d)
        early = self._tensor_entry(name, fields, loc)
        if early is not None:
            return early
        key_locs = {k: kl for k, (_, kl, _) in fields.items()}
        for k, (_, kl, _) in fields.items():
            if k not in TENSOR_KEYS:
                d.append(error("E010", f"tensor `{name}`: unknown key `{k}`", kl,
                               hint=did_you_mean(k, TENSOR_KEYS)
                               or "allowed: " + ", ".join(TENSOR_KEYS)))
        for k in ("buffer", "shape", "dtype"):
            if k not in fields:
                d.append(error("E005", f"tensor `{name}` needs `{k}`", loc))
        fields = tensor_fields.empty_values(d, name, fields)
        get = lambda k: fields[k][0] if k in fields else None  # noqa: E731
        vloc = lambda k: fields[k][2] if k in fields else loc  # noqa: E731

        buffer = tensor_fields.buffer_of(d, name, get("buffer"), vloc)
        shape = tensor_fields.shape_of(d, name, get("shape"), vloc)
        dtype = None
        if "dtype" in fields:
            dtype = dt.lookup(get("dtype")) if isinstance(get("dtype"), str) else None
            if dtype is None:
                d.append(error("E013", f"tensor `{name}`: unknown dtype {get('dtype')!r}",
                               vloc("dtype"), hint="allowed: " + ", ".join(dt.DTYPES)))
        init, init_value = tensor_fields.initial_value(d, name, fields, shape, vloc)
        core = tensor_core(d, name, fields)
        output = get("output")
        if output is not None and not isinstance(output, bool):
            d.append(error("E006", f"tensor `{name}`: `output` must be true or false, got "
                           f"{_type_name(output)}", vloc("output")))
            output = False
        if len(d) > n0 or buffer is None or shape is None or dtype is None:
            if len(d) == n0:  # never drop a declaration (and its instructions) silently
                d.append(error("E006", f"tensor `{name}` cannot be declared as written", loc,
                               hint="give it buffer, shape and dtype"))
            return True
        self.tensors[name] = TensorDecl(name, buffer, shape, dtype, init, init_value,
                                        bool(output), loc, key_locs, core)
        return False

    def _tensor_entry(self, name, fields, loc: Loc) -> bool | None:
        """The name and the mapping of a tensor entry: None when both are fine, else what
        `_tensor` returns (True: invalid; False: a second declaration, reported)."""
        d = self.diags
        # fullmatch: `$` alone would accept a name ending in a newline (a file name with one)
        if not isinstance(name, str) or not NAME_RE.fullmatch(name):
            d.append(error("E018", f"invalid tensor name {name!r}", loc,
                           hint="names are letters, digits and _, not starting with a digit "
                                "(they become output file names)"))
            return True
        if name.lower() in SCALAR_WORDS:  # `operand0: inf` must mean one thing only
            d.append(error("E018", f"tensor name {name!r} is also a scalar word", loc,
                           hint="inf and nan (any case) are numbers wherever a keyword "
                                "takes a number; rename the tensor"))
            return True
        if name in self.tensors or name in self.invalid_tensors:
            d.append(error("E014", f"tensor `{name}` is declared twice", loc))
            return False
        if not isinstance(fields, dict):
            d.append(error("E006", f"tensor `{name}` must be a mapping such as "
                           "{buffer: sbuf, shape: [128, 512], dtype: float32}", loc))
            return True
        return None

    # ---- instructions ------------------------------------------------------------------------
    def bad_entry(self, message: str, loc: Loc, hint: str | None = None,
                  code: str = "E020") -> None:
        self.diags.append(error(code, message, loc, self.count,
                                hint=hint or "write e.g. `- load: {dst: t, src: x}`"))
        self.dropped.add(self.count)
        self.count += 1

    def instruction(self, op: str, args: dict | None, loc: Loc) -> None:
        index = self.count
        self.count += 1
        spec = REGISTRY.get(op)
        name = op if spec is not None else normalize_name(op)
        spec = spec or REGISTRY.get(name)
        if spec is None:
            self._unknown_instruction(op, name, loc, index)
            return
        if args is None:
            self.diags.append(error("E024", f"{name}: the value must be a mapping of keyword "
                                    "arguments, e.g. `{dst: t, src: x}`", loc, index))
            self.dropped.add(index)
            return
        n0 = len(self.diags)
        tables = param_tables(spec)
        values, locs, meant, unknown = self._keywords(name, spec, args, tables.by_name, index)
        if len(unknown) > MAX_UNKNOWN_REPORTED:  # one line for the rest, not one each
            more = unknown[MAX_UNKNOWN_REPORTED:]
            self.diags.append(error(
                "E022", f"{name}: {len(more):,} more unknown keywords ("
                + ", ".join(f"`{k}`" for k in more[:5]) + (", ..." if len(more) > 5 else "")
                + ")", locs[more[0]], index, hint="allowed: " + ", ".join(spec.param_names)))
        for p in tables.required:
            if p.name not in args and p.name not in meant:
                self.diags.append(error("E023", f"{name}: missing required keyword `{p.name}`",
                                        loc, index, hint=p.doc or None))
        if len(self.diags) > n0:
            self.dropped.add(index)
            self.partial.append(Instruction(name, values, index, loc, locs, core=self.core))
            return
        full = tables.defaults.copy()  # every param: the default unless given
        full.update(values)
        self.instructions.append(Instruction(name, full, index, loc, locs, core=self.core))

    def _unknown_instruction(self, op: str, name: str, loc: Loc, index: int) -> None:
        """E391 for an instruction NKI removed, else E021 with a did-you-mean."""
        from nkirun.isa.removed import removed_instruction
        gone = removed_instruction(name)
        if gone is not None:
            self.diags.append(error("E391", f"`{name}` was removed in {gone[0]}", loc, index,
                                    hint=gone[1]))
        else:
            self.diags.append(error("E021", f"unknown instruction `{op}`", loc, index,
                                    hint=did_you_mean(name, REGISTRY)
                                    or "see `nkirun ops` for the instruction list"))
        self.dropped.add(index)

    def _keywords(self, name: str, spec, args: dict, params: dict, index: int) -> tuple:
        """Converts an instruction's keywords: (values, locations, the missing required
        keywords an unknown one was a typo of, the unknown keywords)."""
        values, locs = {}, {}
        converted = self._converted
        meant = set()  # missing required keywords an unknown one was a typo of
        unknown: list[str] = []
        for key, (raw, kloc) in args.items():
            locs[key] = kloc
            p = params.get(key)
            if p is None:
                unknown.append(key)
                guess = closest(key, [n for n in spec.param_names if n not in args])
                if guess is not None and params[guess].required:
                    meant.add(guess)  # one typo, one diagnostic: no E023 for it as well
                if len(unknown) <= MAX_UNKNOWN_REPORTED:
                    self.diags.append(_unknown_keyword(name, key, spec, kloc, index, guess))
                _keep_mention(values, key, raw, kloc, params.get(guess))
                continue
            if raw is None and not p.required:
                continue  # an explicit null means "not given"
            # Non-view values depend only on (param, value): traces repeat them endlessly.
            # (Views carry their own location, so they are not shared.)
            ckey = (name, key, raw.__class__, raw) if (
                not p.kind.is_view and raw.__class__ in _HASHABLE
                and (raw or raw.__class__ is not float)) else None  # (-0.0 == 0.0)
            hit = converted.get(ckey) if ckey is not None else None
            if hit is not None:
                values[key] = hit[0]
                continue
            try:
                values[key] = convert(p, raw, kloc)
                if ckey is not None:
                    converted[ckey] = (values[key],)
            except ArgError as e:
                self.diags.append(error(e.code, f"{name}: {e}", kloc, index, e.hint))
        return values, locs, meant, unknown

    def repeat(self, like: Instruction, view_keys: tuple, loc: Loc, locs: dict) -> None:
        """An instruction with exactly the keywords and values of `like`, an earlier valid
        one (a front end knows the source text was identical): the same IR as
        `instruction` would build, without converting again; only the locations differ."""
        args = like.args.copy()
        for k in view_keys:  # a view carries the location of its keyword
            v = args[k]
            args[k] = view_at(v.tensor, v.index, locs[k])
        self.instructions.append(instruction_at(like.op, args, self.count, loc, locs,
                                                like.index, self.core))
        self.count += 1

    # ---- result ------------------------------------------------------------------------------
    def finish(self):
        if self.version is None and not any(dg.code == "E004" for dg in self.diags):
            self.diags.insert(0, error("E004", "the program needs `version: 1`",
                                       Loc(self.path, 1, 1)))
        loops = ()
        if self.loops or self.open_loops:
            from nkirun.source.loops import finish
            loops = finish(self)
        program = Program(
            version=self.version if isinstance(self.version, int) else 1,
            target=self.target, tensors=self.tensors, instructions=tuple(self.instructions),
            name=self.name, path=self.path, base_dir=self.base_dir, source_lines=self.lines,
            invalid_tensors=frozenset(self.invalid_tensors), dropped=frozenset(self.dropped),
            partial=tuple(self.partial), cores=self.cores, loops=loops)
        return program, self.diags


def _unknown_keyword(name: str, key: str, spec, kloc: Loc, index: int, guess: str | None):
    """E390 for a keyword NKI removed or renamed (naming the release), else E022 with the
    closest keyword as its did-you-mean."""
    from nkirun.isa.removed import removed_keyword
    gone = removed_keyword(name, key)
    if gone is not None:
        return error("E390", f"{name}: `{key}` was removed in {gone[0]}", kloc, index,
                     hint=gone[1])
    return error("E022", f"{name}: unknown keyword `{key}`", kloc, index,
                 hint=f"did you mean `{guess}`?" if guess else
                 "allowed: " + ", ".join(spec.param_names))


_HASHABLE = frozenset({str, int, float, bool})
