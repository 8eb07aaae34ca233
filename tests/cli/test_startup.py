"""Start-up (issues 7 and 9, docs/performance.md): `nkirun check` loads only the instruction
modules its program uses and not the cost model, while the instruction table still lists
every instruction."""
from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from nkirun.isa import MODULES, REGISTRY
from repo_paths import PROGRAMS

PROGRAM = PROGRAMS / "rowmax_in_window.yaml"


def test_check_loads_only_the_instructions_it_uses():
    code = ("import sys; from nkirun.api import check_program; import nkirun.cli; "
            f"c = check_program({str(PROGRAM)!r}); assert c.ok, c.diagnostics; "
            "print(*sorted(m for m in sys.modules if m.startswith('nkirun.')))")
    mods = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.split()
    ops = {ln.split(":")[0].strip(" -") for ln in PROGRAM.read_text().splitlines()
           if ln.strip().startswith("- ")}
    loaded = {m for m in mods if m.startswith("nkirun.isa.")}
    assert loaded - {"nkirun.isa.spec", "nkirun.isa.common"} == {f"nkirun.isa.{op}" for op in ops}
    assert "nkirun.schedule.model" not in mods


def test_the_table_lists_every_instruction_without_loading():
    code = ("import sys; from nkirun.isa import MODULES, REGISTRY; "
            "print(len(REGISTRY), list(REGISTRY) == list(MODULES), "
            "'load' in REGISTRY, 'nope' in REGISTRY, REGISTRY.get('nope'), "
            "sum(m.startswith('nkirun.isa.') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == [str(len(MODULES)), "True", "True", "False", "None", "1"]  # only isa.spec


def test_registry_maps_every_name_to_its_spec():
    assert list(REGISTRY) == list(MODULES) and len(REGISTRY) == len(MODULES)
    assert [s.name for s in REGISTRY.values()] == list(MODULES)
    assert REGISTRY.get("nope") is None and REGISTRY.get("nope", 1) == 1
    with pytest.raises(KeyError):
        REGISTRY["nope"]


def test_registry_substitution_is_undone(monkeypatch):
    store = REGISTRY["store"]
    with monkeypatch.context() as m:
        m.setitem(REGISTRY, "store", dataclasses.replace(store, summary="x"))
        assert REGISTRY["store"].summary == "x"
        m.setitem(REGISTRY, "extra_op", store)
        assert "extra_op" in REGISTRY and list(REGISTRY)[-1] == "extra_op"
    assert REGISTRY["store"] is store and "extra_op" not in REGISTRY
    assert list(REGISTRY) == list(MODULES)
