"""The space of a sweep: `--vary NAME=V1,V2,...` / `NAME=A:B[:STEP]` crossed, filtered by a
`--where` expression that is evaluated safely (names, literals, arithmetic, comparisons and
boolean operators only), crossed with the candidate files of a glob KERNEL."""
from __future__ import annotations

import ast
import glob
import itertools
import operator
import os
import re

MAX_VARIANTS = 10_000_000  # a space larger than this is a mistake, not a sweep


class SpaceError(ValueError):
    """A usage error in --vary / --where / KERNEL (exit 2), said in the option's terms."""


_RANGE = re.compile(r"^\s*(-?\d+)\s*:\s*(-?\d+)\s*(?::\s*(-?\d+)\s*)?$")


def parse_vary(text: str) -> tuple[str, list]:
    """`NAME=V1,V2,...` (Python literals) or `NAME=A:B[:STEP]` (inclusive int range)."""
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise SpaceError(f"--vary {text!r}: expected NAME=V1,V2,... or NAME=A:B[:STEP], "
                         "e.g. --vary TILE_M=1,2,4 or --vary TILE_M=1:8:2")
    m = _RANGE.match(values)
    if m:
        a, b, step = int(m.group(1)), int(m.group(2)), int(m.group(3) or 1)
        if step <= 0 or b < a:
            raise SpaceError(f"--vary {text!r}: A:B:STEP needs A <= B and STEP > 0 "
                             "(the range includes B)")
        if (b - a) // step + 1 > MAX_VARIANTS:
            raise SpaceError(f"--vary {text!r}: more than {MAX_VARIANTS:,} values")
        return name, list(range(a, b + 1, step))
    try:
        parsed = ast.literal_eval(f"({values.strip()},)")
    except (ValueError, SyntaxError):
        raise SpaceError(f"--vary {text!r}: values must be Python literals separated by "
                         "commas (ints, floats, True/False, None, 'strings' in quotes), or "
                         "an inclusive range A:B[:STEP]") from None
    if not parsed:
        raise SpaceError(f"--vary {text!r}: no values")
    return name, list(parsed)


def parse_varies(texts) -> dict[str, list]:
    out: dict[str, list] = {}
    for t in texts:
        name, values = parse_vary(t)
        if name in out:
            raise SpaceError(f"--vary {name} is given twice; list every value in one "
                             f"--vary {name}=V1,V2,...")
        out[name] = values
    return out


# ---- --where: a safe evaluator ---------------------------------------------------------
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv,
           ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
            ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_MAX_POWER = 10_000  # 10**10**10 would hang the sweep before it starts


class Where:
    """A --where expression, parsed once and checked for allowed syntax and known names."""

    def __init__(self, text: str, names):
        self.text = text
        try:
            self.tree = ast.parse(text.strip(), mode="eval").body
        except SyntaxError as e:
            raise SpaceError(f"--where {text!r}: not a Python expression ({e.msg})") from None
        self._check(self.tree, set(names))

    def _check(self, node, names: set) -> None:
        allowed = (ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Name, ast.Constant,
                   ast.Tuple, ast.List, ast.Load, ast.And, ast.Or, ast.IfExp,
                   *_BINARY, *_UNARY, *_COMPARE)
        for sub in ast.walk(node):
            if not isinstance(sub, allowed):
                raise SpaceError(f"--where {self.text!r}: {type(sub).__name__} is not "
                                 "allowed; use names, literals, arithmetic (+ - * / // % "
                                 "**), comparisons and and/or/not")
            if isinstance(sub, ast.Name) and sub.id not in names:
                raise SpaceError(f"--where {self.text!r}: unknown name `{sub.id}`; the "
                                 f"names are the --vary names: {', '.join(sorted(names))}")

    def __call__(self, values: dict) -> bool:
        try:
            return bool(_eval(self.tree, values))
        except (ArithmeticError, TypeError, ValueError) as e:
            raise SpaceError(f"--where {self.text!r} fails for {values}: {e}") from None


def _eval(node, env):  # long-free: one case per allowed node
    t = type(node)
    if t is ast.Constant:
        return node.value
    if t is ast.Name:
        return env[node.id]
    if t in (ast.Tuple, ast.List):
        return tuple(_eval(e, env) for e in node.elts)
    if t is ast.BoolOp:
        vals = (_eval(v, env) for v in node.values)
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if t is ast.UnaryOp:
        return _UNARY[type(node.op)](_eval(node.operand, env))
    if t is ast.IfExp:
        return _eval(node.body, env) if _eval(node.test, env) else _eval(node.orelse, env)
    if t is ast.BinOp:
        a, b = _eval(node.left, env), _eval(node.right, env)
        if isinstance(node.op, ast.Pow) and isinstance(b, (int, float)) and abs(b) > _MAX_POWER:
            raise ValueError(f"exponent {b} is too large")
        return _BINARY[type(node.op)](a, b)
    left = _eval(node.left, env)
    for op, right_node in zip(node.ops, node.comparators):
        right = _eval(right_node, env)
        if not _COMPARE[type(op)](left, right):
            return False
        left = right
    return True


# ---- candidates and the crossed space ----------------------------------------------------
def candidate_files(kernel: str) -> tuple[list[str], str | None]:
    """(files, function) of `FILE.py::FN` or a glob `'cands/*.py::FN'` (sorted)."""
    path, sep, func = kernel.partition("::")
    func = (func or None) if sep else None
    if any(c in path for c in "*?["):
        files = sorted(glob.glob(path))
        if not files:
            raise SpaceError(f"KERNEL {kernel!r}: the glob matches no file")
        return files, func
    return [path], func


def variants(files: list[str], func: str | None, vary: dict[str, list], where=None):
    """[(kernel spec, params)] in a fixed order: files outermost, then the --vary names in
    the order given, last varying fastest. Ids are positions in this list."""
    total = len(files)
    for values in vary.values():
        total *= len(values)
    if total > MAX_VARIANTS:
        raise SpaceError(f"the space has {total:,} variants (more than {MAX_VARIANTS:,}); "
                         "narrow --vary or add --where")
    names = list(vary)
    out = []
    for f in files:
        spec = f if func is None else f"{f}::{func}"
        for combo in itertools.product(*vary.values()):
            params = dict(zip(names, combo))
            if where is None or where(params):
                out.append((spec, params))
    return out


def display_kernel(spec: str) -> str:
    """file::fn as the row's `kernel` field (the file as given, never made absolute)."""
    path, _, func = spec.partition("::")
    return f"{os.path.normpath(path)}::{func}" if func else os.path.normpath(path)
