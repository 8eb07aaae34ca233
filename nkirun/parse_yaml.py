"""The YAML front end: program file -> typed IR, with every problem as a located diagnostic.

PyYAML's safe composer builds the node tree (with line/column marks); the IR is built
straight from the nodes, never through `yaml.load`. Only the standard YAML tags are
accepted; alias expansion and nesting are bounded.
"""
from __future__ import annotations

import os

import yaml
from yaml.constructor import ConstructorError, SafeConstructor

from .errors import Diagnostic, Loc, error
from .frontend import Builder

try:  # the C composer is ~10x faster; fall back to pure Python where libyaml is missing
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

_STD = "tag:yaml.org,2002:"
_MAX_NODES = 5_000_000  # bounds alias ("billion laughs") expansion


class _Walker:
    def __init__(self, path: str):
        self.path = path
        self.constructor = SafeConstructor()
        self.budget = _MAX_NODES

    def loc(self, node) -> Loc:
        m = node.start_mark
        return Loc(self.path, m.line + 1, m.column + 1)

    def value(self, node):
        """A node as plain Python (str/int/float/bool/None/list/dict of str keys)."""
        self.budget -= 1
        if self.budget < 0:
            raise _Bad(error("E001", "the document expands to too many nodes (alias bomb?)",
                             self.loc(node)))
        tag = node.tag or ""
        if isinstance(node, yaml.ScalarNode):
            if tag == _STD + "str":
                return node.value
            if tag in (_STD + "int", _STD + "float", _STD + "bool", _STD + "null"):
                return self.constructor.construct_object(node)
            if tag == _STD + "timestamp":
                return node.value
            raise _Bad(error("E001", f"YAML tag {tag!r} is not allowed", self.loc(node),
                             hint="programs use plain YAML values only (no tags such as "
                                  "!!python/object)"))
        if isinstance(node, yaml.SequenceNode):
            if tag != _STD + "seq":
                raise _Bad(error("E001", f"YAML tag {tag!r} is not allowed", self.loc(node)))
            return [self.value(n) for n in node.value]
        if isinstance(node, yaml.MappingNode):
            if tag != _STD + "map":
                raise _Bad(error("E001", f"YAML tag {tag!r} is not allowed", self.loc(node)))
            return {str(self.value(k)): self.value(v) for k, v in node.value}
        raise _Bad(error("E001", "unsupported YAML node", self.loc(node)))  # pragma: no cover


class _Bad(Exception):
    def __init__(self, diag: Diagnostic):
        self.diag = diag


def read_source(path: str) -> tuple[str | None, list[Diagnostic]]:
    """The program text, or a diagnostic for a missing/unreadable/non-UTF-8 file."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None, [error("E000", f"program file not found: {path}", Loc(path))]
    except OSError as e:
        return None, [error("E000", f"cannot read program file {path}: {e.strerror}", Loc(path))]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        return None, [error("E001", f"the program is not UTF-8 text (byte 0x{raw[e.start]:02x} "
                            f"at offset {e.start})", Loc(path, line, 1),
                            hint="save the file as UTF-8")]
    return text.lstrip("\ufeff"), []


def parse_yaml(text: str, path: str, base_dir: str | None = None):
    """Parse program text: returns (Program | None, diagnostics)."""
    lines = tuple(text.splitlines())
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        loc = Loc(path, mark.line + 1, mark.column + 1) if mark else Loc(path)
        what = e.problem or str(e)
        return None, [error("E001", f"YAML syntax error: {what}", loc,
                            hint=e.context if e.context else None)]
    except yaml.YAMLError as e:
        return None, [error("E001", f"YAML error: {e}", Loc(path))]
    except RecursionError:
        return None, [error("E001", "the YAML document is nested too deeply", Loc(path))]
    if root is None:
        return None, [error("E002", "the program is empty", Loc(path, 1, 1),
                            hint="a program is a mapping with version, tensors and instructions")]
    w = _Walker(path)
    if not isinstance(root, yaml.MappingNode):
        return None, [error("E002", "the program must be a YAML mapping (version, tensors, "
                            "instructions), not a " + ("list" if isinstance(
                                root, yaml.SequenceNode) else "scalar"), w.loc(root))]
    b = Builder(path, base_dir if base_dir is not None else os.path.dirname(path) or ".", lines)
    try:
        _build(w, b, root)
    except _Bad as e:
        b.diags.append(e.diag)
    except RecursionError:
        b.diags.append(error("E001", "the YAML document is nested too deeply", Loc(path)))
    return b.finish()


def _build(w: _Walker, b: Builder, root) -> None:
    seen = set()
    for knode, vnode in root.value:
        key = w.value(knode)
        kloc = w.loc(knode)
        if not isinstance(key, str):
            b.diags.append(error("E003", f"top-level key {key!r} must be a string", kloc))
            continue
        if key in seen:
            b.diags.append(error("E003", f"duplicate top-level key {key!r}", kloc))
            continue
        seen.add(key)
        if key == "tensors":
            if not isinstance(vnode, yaml.MappingNode):
                b.diags.append(error("E006", "`tensors` must be a mapping from name to "
                                     "{buffer, shape, dtype, ...}", w.loc(vnode)))
                continue
            for tk, tv in vnode.value:
                name = w.value(tk)
                if isinstance(tv, yaml.MappingNode):
                    fields = {}
                    for fk, fv in tv.value:
                        fields[str(w.value(fk))] = (w.value(fv), w.loc(fk), w.loc(fv))
                    b.tensor(name, fields, w.loc(tk))
                else:
                    b.tensor(name, w.value(tv), w.loc(tk))
        elif key == "instructions":
            if not isinstance(vnode, yaml.SequenceNode):
                b.diags.append(error("E006", "`instructions` must be a list of one-key mappings",
                                     w.loc(vnode)))
                continue
            for entry in vnode.value:
                _instruction(w, b, entry)
        else:
            b.top(key, w.value(vnode), kloc, w.loc(vnode))


def _instruction(w: _Walker, b: Builder, entry) -> None:
    eloc = w.loc(entry)
    if not isinstance(entry, yaml.MappingNode) or len(entry.value) != 1:
        what = (f"a mapping with {len(entry.value)} keys" if isinstance(entry, yaml.MappingNode)
                else "a list" if isinstance(entry, yaml.SequenceNode) else "a scalar")
        b.bad_entry(f"each instruction must be a mapping with exactly one key (the instruction "
                    f"name), got {what}", eloc)
        return
    knode, vnode = entry.value[0]
    op = w.value(knode)
    if isinstance(vnode, yaml.MappingNode):
        args = {}
        for ak, av in vnode.value:
            args[str(w.value(ak))] = (w.value(av), w.loc(ak))
    elif isinstance(vnode, yaml.ScalarNode) and vnode.tag == _STD + "null":
        args = {}
    else:
        args = None
    b.instruction(str(op), args, w.loc(knode))
