"""One invalid kernel per kernel-front-end code (tests/invalid/kernels/): E600 (kernel
not found: no, several or no such function), E601 (an nki name or keyword nkirun does not
provide), E602 (the kernel's own exception), E603 (a bad nl/nisa call: bounds, shapes),
E604 (a view that is not a basic index), E605 (a dtype nkirun lacks), E606 (a returned
value that is not an HBM tensor), E607 (a pre-0.2 index or call nkirun cannot map), E608 (a
mask that is not a rectangle). Each file's header says the code and line `check`
reports and the command-line arguments."""
from __future__ import annotations

import json
import pathlib
import re
import shlex

import pytest
from click.testing import CliRunner

from nkirun.cli import cli

KERNELS = sorted((pathlib.Path(__file__).parents[1] / "invalid" / "kernels").glob("*.py"))
EXPECT = re.compile(r"^# expect: (E\d{3}) at (\d+)", re.M)
ARGS = re.compile(r"^# args: (.*)$", re.M)


def test_every_kernel_code_has_an_invalid_kernel():
    codes = {EXPECT.search(p.read_text()).group(1) for p in KERNELS}
    assert codes == {"E600", "E601", "E602", "E603", "E604", "E605", "E606", "E607", "E608"}


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.stem)
def test_invalid_kernel_reports_its_code_at_its_line(path):
    text = path.read_text()
    code, line = EXPECT.search(text).group(1), int(EXPECT.search(text).group(2))
    args = shlex.split(ARGS.search(text).group(1))
    r = CliRunner().invoke(cli, ["check", str(path), *args, "--format", "json"])
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    doc = json.loads(r.stdout)
    # `at 0`: a problem of the whole file, which JSON places at its start (line 1)
    assert any(d["code"] == code and d["line"] == max(line, 1) and d["file"] == str(path)
               for d in doc["diagnostics"]), doc
    r = CliRunner().invoke(cli, ["check", str(path), *args])
    assert r.exit_code == 1 and f"error[{code}]" in r.output
    assert (f"{path}:{line}:" if line else f"{path}:") in r.output
