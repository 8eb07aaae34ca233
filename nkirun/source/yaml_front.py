"""The YAML front end: program file -> typed IR, with every problem as a located diagnostic.

PyYAML's safe composer builds the node tree (with line/column marks); the IR is built
straight from the nodes, never through `yaml.load`. Only the standard YAML tags are
accepted; alias expansion and nesting are bounded.
"""
from __future__ import annotations

import os

from nkirun.source.yaml_import import yaml  # (first: PyYAML imported its way)
from yaml.constructor import ConstructorError, SafeConstructor  # noqa: I001

from nkirun.diagnostics import Diagnostic, Loc, error
from nkirun.source.builder import Builder
from nkirun.source.reading import read_source  # noqa: F401  (where it was)
from nkirun.source.yaml_limits import (LAZY_LINES_FROM, LOADER, LONG_LINE_RE, reader_error,
                                       stream, too_deep, too_many_keys)

_STD = "tag:yaml.org,2002:"
_SCALAR_TAGS = frozenset(_STD + t for t in ("str", "int", "float", "bool", "null", "timestamp"))
# Bounds on what a program may expand to, checked before anything is converted: the node
# count after alias expansion ("billion laughs") here, the nesting depth (a program needs
# ~10: data lists of 5-D tensors) in yaml_limits. Large data belongs in .npy files.
_MAX_NODES = 1_000_000


class _Walker:
    def __init__(self, path: str):
        self.path = path
        self.constructor = SafeConstructor()

    def audit(self, root) -> None:
        """Refuse non-standard tags, recursive aliases and documents that expand to more
        than _MAX_NODES nodes, before converting anything. Sizes are memoised per node, so
        an alias bomb is measured in time linear in its text, never expanded."""
        sizes: dict[int, int] = {}
        active: set[int] = set()

        def size(node) -> int:
            key = id(node)
            if key in sizes:
                return sizes[key]
            if key in active:
                raise _Bad(error("E001", "a YAML alias refers to the node that contains it "
                                 "(a recursive structure)", self.loc(node)))
            tag = node.tag or ""
            if isinstance(node, yaml.ScalarNode):
                if tag not in _SCALAR_TAGS:
                    raise _Bad(_tag_error(tag, self.loc(node)))
                sizes[key] = 1  # memoised too, so len(sizes) counts the distinct nodes
                return 1
            if tag != _STD + ("seq" if isinstance(node, yaml.SequenceNode) else "map"):
                raise _Bad(_tag_error(tag, self.loc(node)))
            active.add(key)
            children = (node.value if isinstance(node, yaml.SequenceNode)
                        else [n for kv in node.value for n in kv])
            n = 1 + sum(size(c) for c in children)
            active.discard(key)
            sizes[key] = n
            return n

        total = size(root)
        # Only expansion through aliases is bounded: a long program written out in full
        # (100,000+ instructions) has as many distinct nodes as it expands to.
        if total > _MAX_NODES and total > 2 * len(sizes) + _MAX_NODES // 10:
            raise _Bad(error("E001", f"the document expands to more than {_MAX_NODES:,} values "
                             f"through YAML aliases ({total:,} from {len(sizes):,} written "
                             "ones: an alias bomb?)",
                             self.loc(root), hint="write the values out, or put large data in "
                                                  "a .npy file (`file:`)"))

    def loc(self, node) -> Loc:
        m = node.start_mark
        return Loc(self.path, m.line + 1, m.column + 1)

    def value(self, node):
        """A node as plain Python (str/int/float/bool/None/list/dict of str keys)."""
        tag = node.tag or ""
        if isinstance(node, yaml.ScalarNode):
            if tag == _STD + "str":
                return node.value
            if tag in (_STD + "int", _STD + "float", _STD + "bool", _STD + "null"):
                try:
                    return self.constructor.construct_object(node)
                except (ConstructorError, ValueError, KeyError, TypeError):
                    # an explicit tag (`!!int abc`), or an integer past Python's 4,300-digit
                    # conversion limit
                    shown = repr(node.value) if len(node.value) <= 40 else \
                        f"a value of {len(node.value):,} characters ({node.value[:12]}...)"
                    raise _Bad(error("E001", f"{shown} is not a valid {tag[len(_STD):]}",
                                     self.loc(node), hint="numbers must fit in 4,300 digits; "
                                     "an index, shape or fill that long is out of range")
                               ) from None
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
            out = {}
            for k, v in node.value:
                key = str(self.value(k))
                if key in out:
                    raise _Bad(_duplicate(key, self.loc(k), self.loc(node)))
                out[key] = self.value(v)
            return out
        raise _Bad(error("E001", "unsupported YAML node", self.loc(node)))  # pragma: no cover


class _Bad(Exception):
    def __init__(self, diag: Diagnostic):
        self.diag = diag


def _duplicate(key: str, loc: Loc, first: Loc) -> Diagnostic:
    # YAML forbids duplicate keys; PyYAML would silently keep the last one
    return error("E001", f"duplicate key `{key}` (first given at line {first.line})", loc,
                 hint="give each key once")


def _tag_error(tag: str, loc: Loc) -> Diagnostic:
    shown = tag.replace(_STD, "!!")
    return error("E001", f"YAML tag {shown!r} is not allowed", loc,
                 hint="programs use plain YAML values only; tags such as !!python/object "
                      "are refused (nkirun never constructs objects from a program)")


def parse_yaml(text: str, path: str, base_dir: str | None = None):
    """Parse program text: returns (Program | None, diagnostics)."""
    if len(text) > LAZY_LINES_FROM:  # e.g. 40 MB of blank lines: no tuple of millions
        from nkirun.source.lines import Lines
        lines = Lines(text)
    else:
        lines = tuple(text.splitlines())
    try:
        nested = too_deep(text, path)
        if nested is not None:
            return None, [nested]
        too_many = too_many_keys(text, path) if LONG_LINE_RE.search(text) else None
        if too_many is not None:
            return None, [too_many]
        root = yaml.compose(stream(text), Loader=LOADER)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        loc = Loc(path, mark.line + 1, mark.column + 1) if mark else Loc(path)
        what = e.problem or str(e)
        hint = e.context if e.context else None
        line = lines[mark.line] if mark and mark.line < len(lines) else ""
        if hint and "flow" in hint and "[" in line:
            # the usual cause: an unquoted view with a comma inside `{ ... }`
            hint += "; inside { } quote a view that has a comma: \"t[:, 0:128]\""
        return None, [error("E001", f"YAML syntax error: {what}", loc, hint=hint)]
    except yaml.reader.ReaderError as e:  # a character YAML does not allow, e.g. NUL
        return None, [reader_error(e, text, path)]
    except yaml.YAMLError as e:
        return None, [error("E001", f"YAML error: {e}", Loc(path))]
    except RecursionError:
        return None, [error("E001", "the YAML document is nested too deeply", Loc(path))]
    if root is None:
        return None, [error("E002", "the program is empty", Loc(path, 1, 1),
                            hint="a program is a mapping with version, tensors and instructions")]
    w = _Walker(path)
    try:
        w.audit(root)
    except _Bad as e:
        return None, [e.diag]
    if not isinstance(root, yaml.MappingNode):
        text_like = text.lstrip().startswith("version ")  # the text form's first line
        return None, [error("E002", "the program must be a YAML mapping (version, tensors, "
                            "instructions), not a " + ("list" if isinstance(
                                root, yaml.SequenceNode) else "scalar"), w.loc(root),
                            hint="this looks like the text form: name it .nkis or pass "
                                 "--program-format text (API: fmt=\"text\")"
                            if text_like else None)]
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
                    fields = _unique_keys(w, b, tv, lambda fk, fv: (w.value(fv), w.loc(fk),
                                                                  w.loc(fv)))
                    b.tensor(name, fields, w.loc(tk))
                else:
                    b.tensor(name, w.value(tv), w.loc(tk))
        elif key == "cores":
            from nkirun.source.cores import yaml_cores
            yaml_cores(w, b, vnode, kloc, _instruction, seen)
        elif key == "instructions":
            if "cores" in seen - {key}:
                b.diags.append(error("E630", "a program has either `instructions:` (one "
                                     "core) or `cores:` (two cores), not both", kloc))
                continue
            if not isinstance(vnode, yaml.SequenceNode):
                b.diags.append(error("E006", "`instructions` must be a list of one-key mappings",
                                     w.loc(vnode)))
                continue
            for entry in vnode.value:
                _instruction(w, b, entry)
        else:
            b.top(key, w.value(vnode), kloc, w.loc(vnode))


def _unique_keys(w: _Walker, b: Builder, node, entry) -> dict:
    """key -> entry(key node, value node) of a mapping node; a key given twice is reported
    at its second place (E001) and the first one is kept. entry(...)[1] is the key's Loc."""
    out: dict = {}
    for knode, vnode in node.value:
        k = str(w.value(knode))
        if k in out:
            b.diags.append(_duplicate(k, w.loc(knode), out[k][1]))
            continue
        out[k] = entry(knode, vnode)
    return out


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
    if op in ("for", "while") and isinstance(vnode, yaml.MappingNode):  # a runtime loop
        from nkirun.source.loops import yaml_loop
        return yaml_loop(w, b, op, vnode, w.loc(knode), _instruction, _unique_keys)
    if isinstance(vnode, yaml.MappingNode):
        args = _unique_keys(w, b, vnode, lambda ak, av: (w.value(av), w.loc(ak)))
    elif isinstance(vnode, yaml.ScalarNode) and vnode.tag == _STD + "null":
        args = {}
    else:
        args = None
    b.instruction(str(op), args, w.loc(knode))
