"""nkirun imports PyYAML with the pure-Python reader's character check made on first use
(source/yaml_import.py): the module is the one `import yaml` gives, the pattern finds what
the eager one finds, and `re.compile` is left as it was."""
import re
import subprocess
import sys

import pytest

from nkirun.source.yaml_import import NON_PRINTABLE, LazyPattern
from tests.repo_paths import ROOT


def _every_character() -> str:
    return "".join(map(chr, range(0x110000)))


def test_lazy_pattern_finds_what_the_compiled_one_finds():
    text = _every_character()
    eager, lazy = re.compile(NON_PRINTABLE), LazyPattern(NON_PRINTABLE)
    assert lazy._compiled is None
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in eager.finditer(text)]
    assert lazy.search("ok\x00").start() == 2 and lazy.search("ok") is None
    assert lazy.pattern == NON_PRINTABLE and repr(lazy) == repr(eager)


def _run(code: str) -> list[str]:
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       check=True)
    return p.stdout.split()


def test_yaml_imported_by_nkirun_reads_as_imported_plainly():
    pytest.importorskip("yaml")
    probe = ("import re, sys, yaml\n"
             "for text in ('a: 1\\nb: [x, 2.5]\\n', 'a: \\x00', 'k: \\ufffe'):\n"
             "    for loader in (yaml.SafeLoader, yaml.CSafeLoader):\n"
             "        try:\n"
             "            print(repr(yaml.load(text, Loader=loader)).replace(' ', ''))\n"
             "        except yaml.YAMLError as e:\n"
             "            print(type(e).__name__, getattr(e, 'position', None))\n")
    plain = _run(probe)
    ours = _run("import re\ncompile_ = re.compile\n"
                "from nkirun.source.yaml_import import LazyPattern, yaml\n"
                "print(type(yaml.reader.Reader.NON_PRINTABLE) is LazyPattern, "
                "re.compile is compile_)\n" + probe)
    assert ours[:2] == ["True", "True"]  # (this PyYAML's pattern is the one we know)
    assert ours[2:] == plain
