"""Program writing for the MX and random-number instruction tests (tests/isa): like
prog_helpers.write_program, plus a `target` and explicitly declared dtypes (an x4 tensor's
.npy holds uint32/uint16, so its dtype cannot be guessed from the array)."""
from __future__ import annotations

import itertools
import pathlib

import numpy as np
import yaml

from nkirun.api import check_program, run

_counter = itertools.count()


def t(buffer: str, shape, dtype: str, array=None, output: bool = False, **extra) -> dict:
    d = {"buffer": buffer, "shape": list(shape), "dtype": dtype, **extra}
    if array is not None:
        d["array"] = np.asarray(array)
    if output:
        d["output"] = True
    return d


def write(tmp_path, tensors: dict, instructions: list, target: str = "trn3") -> str:
    folder = pathlib.Path(tmp_path) / f"mxr{next(_counter)}"
    folder.mkdir(parents=True, exist_ok=True)
    decls = {}
    for name, spec in tensors.items():
        spec = dict(spec)
        arr = spec.pop("array", None)
        if arr is not None:
            np.save(folder / f"{name}.npy", arr)
            spec["file"] = f"{name}.npy"
        decls[name] = spec
    doc = {"version": 1, "target": target, "tensors": decls, "instructions": instructions}
    path = folder / "program.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def run_prog(tmp_path, tensors, instructions, target="trn3", warnings=None):
    """Run; returns the outputs (and appends the run-time warnings to `warnings`)."""
    machines = []
    outs = run(write(tmp_path, tensors, instructions, target),
               after_each=lambda b, m: machines.append(m))
    if warnings is not None and machines:
        warnings.extend(machines[-1].warnings)
    return outs


def check_codes(tmp_path, tensors, instructions, target="trn3") -> list[str]:
    return [d.code for d in check_program(write(tmp_path, tensors, instructions,
                                                target)).diagnostics]


def errors(codes: list[str]) -> list[str]:
    return [c for c in codes if c.startswith("E")]


def check_and_run_example(tmp_path, op: str, tensors: dict, target: str = "trn3"):
    """The instruction's `explain` example (SPEC.example) with these tensors: `check` reports
    no error, the run succeeds, and the same program converted to the text form (`.nkis`)
    checks and runs to the same outputs. Returns the outputs."""
    from click.testing import CliRunner

    from nkirun.cli import cli
    from nkirun.isa import REGISTRY
    instructions = yaml.safe_load(REGISTRY[op].example)
    path = write(tmp_path, tensors, instructions, target)
    assert errors([d.code for d in check_program(path).diagnostics]) == []
    outs = run(path)
    text = pathlib.Path(path).with_suffix(".nkis")
    r = CliRunner().invoke(cli, ["convert", path, "--to", "text", "-o", str(text)])
    assert r.exit_code == 0, r.output
    again = run(str(text))
    for name, arr in outs.items():
        np.testing.assert_array_equal(again[name], arr)
    return outs
