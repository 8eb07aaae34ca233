"""The line-oriented text front end (`.nkis`): one declaration or instruction per line.

    version 1
    tensor x hbm [128, 512] float32 file=x.npy
    load dst=t src=x[:, 0:512]

Every line is tokenised with its columns and handed to the same `frontend.Builder` as the
YAML front end, as the same plain values YAML would produce (str/int/float/bool/list), so
both formats give the same IR and the same diagnostics. docs/text-format.md is the
grammar. Instruction lines take a fast path (one precompiled regex, values cached by
their text, a repeated line rebuilt from the first one's IR); any line it does not fully
cover goes through the careful scanner, which either reads it (quotes, nested lists,
comments) or reports a located E001/E020.
"""
from __future__ import annotations

import os
import re

from nkirun.diagnostics import Loc, error, loc_at
from nkirun.ir import View
from nkirun.diagnostics import did_you_mean
from nkirun.source.builder import Builder
from nkirun.source.lines import CONTROL
from nkirun.source.text_tokens import _MISSING, _Syntax, _list, plain, tokens, value_of
from nkirun.isa import REGISTRY
from nkirun.isa.spec import normalize_name

DIRECTIVES = ("version", "name", "target", "tensor", "core")
LOOP_WORDS = ("for", "while", "end")  # runtime loops: source/loops.py
TENSOR_POSITIONALS = ("buffer", "shape", "dtype")
LINE_HINT = ("instruction lines are `OP key=value key=value ...` with no blank around `=`, "
             "e.g. `load dst=t src=x`")

# An instruction's name at the start of a line, followed by a blank or the end.
_OP = re.compile(r"[ \t]*([A-Za-z_][\w.]*)(?=[ \t]|$)")
# Fast path: ` key=value` where a value is plain characters and flat `[...]` groups
# (views such as `c[:, 0:512]`, flat lists). Quotes, `#` and nested brackets go the slow way.
_BRACKETS = r"\[[^\[\]\"'#]*(?:\[[^\[\]\"'#]*\][^\[\]\"'#]*)*\]"  # up to [[...], ...]
_PAIR = re.compile(r"([ \t]+)(([A-Za-z_]\w*)=(?=[^\s\]\"'#])"
                   rf"([^\s\[\]\"'#]*(?:{_BRACKETS}[^\s\[\]\"'#]*)*))")


# ---- lines (tokens and values: text_tokens.py) -----------------------------------------------
class _Reader:
    def __init__(self, b: Builder, path: str):
        self.b, self.path = b, path
        self.cache: dict[str, object] = {}  # value text -> plain value (not lists)
        # fast-path line text -> (op, column, ((key, value, column), ...), (the instruction
        # it built, its view keys) or None if it had errors): unrolled loops repeat lines;
        # plain values are never mutated downstream
        self.templates: dict[str, tuple] = {}
        self.seen: set[str] = set()

    def loc(self, ln: int, col: int) -> Loc:
        return loc_at(self.path, ln, col + 1)

    def err(self, code, message, ln, col, hint=None, instruction=None):
        self.b.diags.append(error(code, message, self.loc(ln, col), instruction, hint))

    def line(self, ln: int, line: str) -> None:
        seen = self.templates.get(line)
        if seen is not None:  # a repeated instruction line: only the locations are new
            op, col, pairs, like = seen
            path = self.path
            if like is None:  # it had errors: report them again, at this line
                self.b.instruction(op, {k: (v, loc_at(path, ln, c)) for k, v, c in pairs},
                                   loc_at(path, ln, col))
            else:
                self.b.repeat(like[0], like[1], loc_at(path, ln, col),
                              {k: loc_at(path, ln, c) for k, _, c in pairs})
            return
        m = _OP.match(line)
        if m is not None:
            op = m.group(1)
            if op not in DIRECTIVES and op not in LOOP_WORDS and "#" not in line \
                    and '"' not in line \
                    and "'" not in line and self.fast(ln, line, op, m):
                return
        try:
            toks = tokens(line)
        except _Syntax as e:
            return self.syntax(ln, line, e)
        if not toks:
            return  # blank or comment
        col, key, _, text = toks[0]
        if key is not None or text[0] in "\"'[":
            self.b.bad_entry(f"a line starts with a directive or an instruction name, got "
                             f"`{text if key is None else key + '=' + text}`",
                             self.loc(ln, col), hint=LINE_HINT)
            return
        if text == "tensor":
            return self.tensor(ln, toks)
        if text == "core":  # `core 0` / `core 1`: the lines below join that core's stream
            return self.core(ln, toks)
        if text in DIRECTIVES:
            return self.directive(ln, toks)
        if text in LOOP_WORDS:
            return self.loop(ln, toks)
        self.instruction(ln, toks)

    def loop(self, ln: int, toks) -> None:
        """`for index=i stop=n ...` / `while cond=c ...` opens a loop, `end` closes it."""
        from nkirun.source import loops
        col, _, _, word = toks[0]
        fields = {}
        try:
            for tcol, key, vcol, text in toks[1:]:
                if key is None:
                    raise _Syntax(tcol, f"expected key=value after `{word}`, got `{text}`",
                                  code="E652")
                if key in fields:
                    self.duplicate(key, ln, tcol, fields[key][1])
                    continue
                fields[key] = (value_of(text, vcol), self.loc(ln, tcol))
        except _Syntax as e:
            return self.err(e.code, str(e), ln, e.col, e.hint)
        if word != loops.END:
            return loops.begin(self.b, word, fields, self.loc(ln, col))
        if fields or not loops.end(self.b, self.loc(ln, col)):
            self.err("E652", "`end` closes a loop: alone on its line, after a `for` or "
                     "`while` line", ln, col)

    def duplicate(self, key: str, ln: int, col: int, first: Loc) -> None:
        # the same diagnostic as a duplicate key in YAML; the first value is kept
        self.err("E001", f"duplicate key `{key}` (first given at line {first.line})", ln, col,
                 hint="give each key once")

    def syntax(self, ln, line, e: _Syntax) -> None:
        m = _OP.match(line)
        word = m.group(1) if m else None
        if word == "tensor":
            name = line[m.end():].split()[:1]
            if name:
                self.b.invalid_tensors.add(name[0])  # no knock-on "unknown tensor" errors
        if word in DIRECTIVES:
            self.err(e.code, str(e), ln, e.col, e.hint)
        else:
            self.b.bad_entry(str(e), self.loc(ln, e.col), hint=e.hint or LINE_HINT, code=e.code)

    def fast(self, ln: int, line: str, op: str, m) -> bool:
        """Read a plain instruction line; False sends it to the careful path."""
        pos = m.end()
        args = {}
        cache = self.cache
        path = self.path
        pairs = _PAIR.findall(line, pos)
        for ws, pair, key, text in pairs:
            col = pos + len(ws)
            pos = col + len(pair)
            v = cache.get(text, _MISSING)
            if v is _MISSING:
                if not text:  # e.g. an unclosed `[`
                    return False
                if text[0] == "[":
                    try:
                        v = _list(text, col + len(key) + 1)
                    except _Syntax:
                        return False
                else:
                    v = cache[text] = plain(text)
            args[key] = (v, loc_at(path, ln, col + 1))
        # findall skips what it cannot match: anything left over, or a repeated keyword,
        # sends the line to the careful path (which reports it)
        if len(args) != len(pairs) or (pos != len(line) and line[pos:].strip()):
            return False
        b = self.b
        loc = loc_at(path, ln, m.start(1) + 1)
        n0, count = len(b.instructions), b.count
        b.instruction(op, args, loc)
        like = None
        if len(b.instructions) > n0 and b.instructions[-1].index == count:
            inst = b.instructions[-1]
            like = (inst, tuple(k for k, v in inst.args.items() if isinstance(v, View)
                                and k in args))
        self.templates[line] = (op, loc.column, tuple(
            (k, v, kl.column) for k, (v, kl) in args.items()), like)
        return True

    def instruction(self, ln: int, toks) -> None:
        b = self.b
        col, _, _, op = toks[0]
        loc = self.loc(ln, col)
        if normalize_name(op) not in REGISTRY:
            close = did_you_mean(op, DIRECTIVES)
            if close and len(toks) > 1 and all(k is None for _, k, _, _ in toks[1:]):
                self.err("E003", f"unknown directive `{op}`", ln, col, close)
                return
            b.instruction(op, {}, loc)  # E021 with its did-you-mean
            return
        args = {}
        try:
            for tcol, key, vcol, text in toks[1:]:
                if key is None:
                    raise _Syntax(tcol, f"expected key=value, got `{text}`", code="E020",
                                  hint=LINE_HINT + "; quote a value that contains blanks")
                if key in args:
                    self.duplicate(key, ln, tcol, args[key][1])
                    continue
                args[key] = (value_of(text, vcol), self.loc(ln, tcol))
        except _Syntax as e:
            b.bad_entry(str(e), self.loc(ln, e.col), hint=e.hint or LINE_HINT, code=e.code)
            return
        b.instruction(op, args, loc)

    def directive(self, ln: int, toks) -> None:
        col, _, _, key = toks[0]
        if len(toks) < 2 or toks[1][1] is not None:
            self.err("E001", f"`{key}` needs one value", ln,
                     toks[1][0] if len(toks) > 1 else col,
                     hint=f"write e.g. `{key} {dict(version=1, name='my_kernel', target='trn2')[key]}`")
            return
        if len(toks) > 2:
            self.err("E001", f"unexpected `{toks[2][3]}` after the value of `{key}`", ln,
                     toks[2][0], hint="quote a value that contains blanks")
            return
        if key in self.seen:
            self.err("E003", f"duplicate `{key}` line", ln, col)
            return
        self.seen.add(key)
        _, _, vcol, text = toks[1]
        try:
            value = value_of(text, vcol)
        except _Syntax as e:
            return self.err(e.code, str(e), ln, e.col, e.hint)
        self.b.top(key, value, self.loc(ln, col), self.loc(ln, vcol))

    def core(self, ln: int, toks) -> None:
        from nkirun.source.cores import begin_core
        col = toks[0][0]
        if len(toks) != 2 or toks[1][1] is not None:
            self.err("E630", "a core line is `core 0` or `core 1`", ln, col)
            return
        _, _, vcol, text = toks[1]
        try:
            value = value_of(text, vcol)
        except _Syntax as e:
            return self.err(e.code, str(e), ln, e.col, e.hint)
        begin_core(self.b, value, self.loc(ln, vcol))

    def tensor(self, ln: int, toks) -> None:
        col = toks[0][0]
        if len(toks) < 2 or toks[1][1] is not None:
            self.err("E005", "a tensor line needs a name, a buffer, a shape and a dtype", ln,
                     toks[1][0] if len(toks) > 1 else col,
                     hint="write e.g. `tensor t sbuf [128, 512] float32`")
            return
        _, _, ncol, ntext = toks[1]
        fields = {}
        positional = iter(TENSOR_POSITIONALS)
        try:
            name = value_of(ntext, ncol)
            for tcol, key, vcol, text in toks[2:]:
                loc = self.loc(ln, tcol)
                if key is None and text == "output":
                    key, value = "output", True
                elif key is None:
                    key = next(positional, None)
                    if key is None:
                        self.err("E010", f"tensor `{name}`: unexpected `{text}`", ln, tcol,
                                 hint="after buffer, shape and dtype come key=value pairs "
                                      "(file=, fill=, data=) and `output`")
                        self.b.invalid_tensors.add(str(name))
                        return
                    value = value_of(text, vcol)
                else:
                    value = value_of(text, vcol)
                if key in fields:
                    self.duplicate(key, ln, tcol, fields[key][1])
                    continue
                fields[key] = (value, loc, self.loc(ln, vcol))
        except _Syntax as e:
            self.err(e.code, str(e), ln, e.col, e.hint)
            self.b.invalid_tensors.add(ntext)
            return
        self.b.tensor(name, fields, self.loc(ln, ncol))


def parse_text(text: str, path: str, base_dir: str | None = None):
    """Parse a text-format program: returns (Program | None, diagnostics)."""
    from nkirun.source.lines import (LONG_LINE_CHECK, MAX_KEYWORDS_PER_LINE, Lines,
                                     content_lines, control_error, has_content,
                                     too_many_keywords)
    lines = Lines(text)
    if not has_content(text):
        return None, [error("E002", "the program is empty", Loc(path, 1, 1),
                            hint="a text program starts with `version 1`, then `tensor` and "
                                 "instruction lines")]
    b = Builder(path, base_dir if base_dir is not None else os.path.dirname(path) or ".", lines)
    r = _Reader(b, path)
    if CONTROL.search(text) is None:  # blank and comment lines say nothing: skip them fast
        for ln, line in content_lines(text):
            if len(line) > LONG_LINE_CHECK and line.count("=") > MAX_KEYWORDS_PER_LINE:
                b.diags.append(too_many_keywords(path, ln, line.count("=")))
                continue
            r.line(ln, line)
        return b.finish()
    for ln, line in enumerate(lines, 1):
        bad = CONTROL.search(line)
        if bad is None:
            r.line(ln, line)
        else:
            b.diags.append(control_error(path, ln, bad))
    return b.finish()
