"""Every instruction's own `SPEC.example` as a whole program, for the tests that run over the
instruction table (tests/isa/test_registry.py, tests/checker/test_mask.py).

An example is a snippet of instructions; its tensors are declared here from the parameters
(`declare`): the buffer, dtype and per-partition shape each operand allows, free size 512 or
whatever its views reach. An instruction whose shapes that cannot guess (a transpose, a
matmul's contraction, max8's 8 values) declares them in tests/isa/test_<name>.py as
EXAMPLE_TENSORS, {name: declaration as YAML flow text}, which take precedence.
"""
from __future__ import annotations

import importlib
import pathlib
import re
import sys
import tempfile

import yaml

from nkirun.api import check_program
from nkirun.hw.targets import TARGETS
from repo_paths import TESTS

HERE = TESTS / "isa"
VIEW_KINDS = ("tile", "tile_or_scalar", "tile_list")
SCALAR_WORDS = re.compile(r"^[-+]?(inf|nan|fp32\.(min|max)|nl\.fp32\.(min|max)|float\(.*\))$")


def spec_of(name: str):
    return importlib.import_module(f"nkirun.isa.{name}").SPEC


def per_instruction_module(name: str):
    """tests/isa/test_<name>.py imported (None if there is none)."""
    if not (HERE / f"test_{name}.py").exists():
        return None
    if str(HERE) not in sys.path:   # (when only tests outside tests/isa are collected)
        sys.path.insert(0, str(HERE))
    return importlib.import_module(f"test_{name}")


def _operand_tensors(example: str):
    """(tensor name, param, written, bare, largest index in its views) for every tensor an
    example's instructions name."""
    for entry in yaml.safe_load(example):
        (op, args), = entry.items()
        spec = spec_of(op.split(".")[-1])
        for key, value in args.items():
            p = spec.param(key)
            if p is None or not _names_views(p):
                continue
            for item in value if isinstance(value, list) else [value]:   # a list of views too
                if not isinstance(item, str) or SCALAR_WORDS.match(item.strip()):
                    continue
                m = re.match(r"\s*([A-Za-z_]\w*)\s*(\[.*\])?\s*$", item)
                assert m, f"{op}: cannot read the operand {key}: {item!r}"
                yield m.group(1), p, p.out, m.group(2) is None, _reach(m.group(2) or "")


def _names_views(p) -> bool:
    """Whether parameter `p` takes tensor views (its kind a name string or a kind object)."""
    kind = getattr(p.kind, "name", p.kind)
    return bool(getattr(p.kind, "is_view", False)) or kind in VIEW_KINDS


def _reach(index: str) -> int:
    """The free size a view's index needs: its largest slice end or integer index + 1."""
    ends = [int(e) for e in re.findall(r":\s*(\d+)", index)]
    singles = [int(i) + 1 for i in re.findall(r"(?<![:\d])(\d+)(?!\s*:|\d)", index)]
    return max(ends + singles, default=0)


def declare(example: str) -> dict[str, str]:
    """Tensor declarations (YAML flow text) under which `example` should check clean."""
    decls, free, inputs, outputs = {}, {}, set(), set()
    for tensor, p, written, bare, reach in _operand_tensors(example):
        (outputs if written else inputs).add(tensor)
        free[tensor] = max(free.get(tensor, 0), 1 if p.per_partition and bare else 512, reach)
        if tensor not in decls:   # the first operand naming a tensor chooses buffer and dtype
            allowed = p.buffers or {"sbuf", "psum"}
            buffer = next(b for b in ("sbuf", "psum", "hbm") if b in allowed)
            dtype = "float32" if not p.dtypes or "float32" in p.dtypes else sorted(p.dtypes)[0]
            decls[tensor] = f"buffer: {buffer}, dtype: {dtype}"
    return {t: "{" + f"{d}, shape: [128, {free[t]}]" + (", fill: 1" if t in inputs else "")
            + (", output: true" if t in outputs else "") + "}" for t, d in decls.items()}


def example_program(tmp_path, name: str, instructions: str | None = None) -> str:
    """A program of `name`'s example (or of `instructions`, YAML, instead) with its tensors
    declared, for example_target(name); returns its path."""
    spec = spec_of(name)
    decls = declare(spec.example)
    decls.update(getattr(per_instruction_module(name), "EXAMPLE_TENSORS", {}))
    body = spec.example if instructions is None else instructions
    target = example_target(name)
    # A two-core instruction's test module writes the whole program around core 0's entries
    whole = getattr(per_instruction_module(name), "example_program_text", None)
    if whole is not None:
        path = tmp_path / f"{name}_example.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(whole(body, target or "trn2"))
        return str(path)
    text = "version: 1\n" + (f"target: {target}\n" if target else "") + "tensors:\n"
    text += "".join(f"  {t}: {d}\n" for t, d in decls.items())
    text += "instructions:\n" + "".join(f"  {line}\n" for line in body.splitlines())
    path = tmp_path / f"{name}_example.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


_TARGETS: dict[str, str | None] = {}


def example_target(name: str) -> str | None:
    """The target `name`'s example is meant for: EXAMPLE_TARGET in its test module, else the
    default (None) or, for an instruction the default target lacks, the first target of
    nkirun's table under which the example checks without an error."""
    if name not in _TARGETS:
        chosen = getattr(per_instruction_module(name), "EXAMPLE_TARGET", ...)
        if chosen is ...:
            chosen = next((t for t in (None, *TARGETS) if _checks_clean(name, t)), None)
        _TARGETS[name] = chosen
    return _TARGETS[name]


def _checks_clean(name: str, target: str | None) -> bool:
    with tempfile.TemporaryDirectory() as folder:
        _TARGETS[name] = target
        try:
            return check_program(example_program(pathlib.Path(folder), name)).ok
        finally:
            del _TARGETS[name]
