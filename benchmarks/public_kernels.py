"""Public NKI kernels for benchmarks, read from their repositories at a pinned commit at run
time. Nothing of them enters the project: a kernel file is copied out of a local bare git
mirror into a temporary folder outside the tree, imported from there under nkirun's `nki`,
and deleted with the process.

A mirror is a bare clone at MIRRORS/<owner>+<name>/repo (MIRRORS: $NKIRUN_MIRRORS, else
/work/.mirror). Get one with

    git clone --bare https://github.com/OWNER/NAME MIRRORS/OWNER+NAME/repo

A point whose repository, commit or file is absent is skipped by the caller with the reason
`missing()` gives (never an error: the benchmark runs with what it has).
"""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile

# repository -> the commit the benchmarks read (hw-measurements: the commits the published
# figures were taken at)
PINNED = {
    "zhang677/AccelOpt": "47e29a7c",
    "aws-neuron/aws-neuron-sdk": "81ce03ae",
    "aws-neuron/nki-library": "d2ad3a57",
    "aws-neuron/nki-samples": "6905a68",
    "stanford-cs149/asst4-trainium2": "aee34672",
    "stanford-cs149/asst4-trainium": "859c0e3",
}

_TMP: str | None = None


def mirrors_root() -> str:
    return os.environ.get("NKIRUN_MIRRORS", "/work/.mirror")


def git_dir(repo: str) -> str | None:
    """The bare mirror of `repo` ("owner/name"), or None when there is none."""
    d = os.path.join(mirrors_root(), repo.replace("/", "+"), "repo")
    return d if os.path.isdir(d) else None


def _git(repo: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "--git-dir", git_dir(repo), *args], capture_output=True,
                          text=True, timeout=60)


def missing(repo: str, path: str, commit: str | None = None) -> str | None:
    """Why `repo`'s `path` at `commit` (default: the pinned one) cannot be read, or None."""
    commit = commit or PINNED[repo]
    if git_dir(repo) is None:
        return (f"no mirror of {repo} under {mirrors_root()} (git clone --bare "
                f"https://github.com/{repo} {mirrors_root()}/{repo.replace('/', '+')}/repo)")
    if _git(repo, "cat-file", "-e", f"{commit}:{path}").returncode != 0:
        return f"{repo} @ {commit} has no {path}"
    return None


def read(repo: str, path: str, commit: str | None = None) -> str:
    """The text of `path` in `repo` at `commit` (default: the pinned one)."""
    r = _git(repo, "show", f"{commit or PINNED[repo]}:{path}")
    if r.returncode != 0:
        raise FileNotFoundError(missing(repo, path, commit) or r.stderr.strip())
    return r.stdout


def _tmp() -> str:
    global _TMP
    if _TMP is None:
        _TMP = tempfile.mkdtemp(prefix="nkirun-public-")
        atexit.register(shutil.rmtree, _TMP, True)
    return _TMP


def extract(repo: str, path: str, commit: str | None = None) -> str:
    """`path` written unmodified into a temporary folder (its own name kept); the file's path."""
    dest = os.path.join(_tmp(), repo.replace("/", "+"), os.path.basename(path))
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "w") as f:
        f.write(read(repo, path, commit))
    return dest


def code_block(text: str, function: str) -> str:
    """The code block of a documentation page (reStructuredText `.. code-block:: python` or
    Markdown fences) that defines `function`, dedented; the last such block when the
    function is defined several times, each version in its own block: see `occurrence`."""
    return code_blocks(text, function)[-1]


def code_blocks(text: str, function: str) -> list[str]:
    """Every code block of `text` that defines `function` (`def function(`), in page order."""
    import re
    import textwrap
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith(".. code-block:: python"):
            indent = len(line) - len(line.lstrip())
            j = i + 1
            body = []
            while j < len(lines) and (not lines[j].strip()
                                      or len(lines[j]) - len(lines[j].lstrip()) > indent):
                body.append(lines[j])
                j += 1
            blocks.append(textwrap.dedent("\n".join(body)))
            i = j
        elif line.strip().startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith("```"):
                j += 1
            blocks.append(textwrap.dedent("\n".join(lines[i + 1:j])))
            i = j + 1
        else:
            i += 1
    pat = re.compile(rf"^\s*def {re.escape(function)}\(", re.M)
    return [b + "\n" for b in blocks if pat.search(b)]


def with_constants(source: str, function: str, constants: dict) -> str:
    """`source` with `NAME = value` assignments inside `function` set to new values: the
    edit a tutorial asks its reader to make (CS149's ROW_CHUNK, FREE_DIM). Each NAME must be
    assigned there once with a literal (else ValueError: the source changed)."""
    import re
    start = re.search(rf"^def {re.escape(function)}\(", source, re.M)
    if start is None:
        raise ValueError(f"no function {function}")
    nxt = re.search(r"^(def |@)", source[start.end():], re.M)
    end = start.end() + nxt.start() if nxt else len(source)
    body = source[start.start():end]
    for name, value in constants.items():
        body, n = re.subn(rf"^(\s+{name}\s*=\s*)[0-9.]+[ \t]*$", rf"\g<1>{value!r}", body,
                          count=1, flags=re.M)
        if n != 1:
            raise ValueError(f"{function} assigns no literal to {name}")
    return source[:start.start()] + body + source[end:]


def write_module(name: str, text: str) -> str:
    """`text` written as a module file `name`.py in the temporary folder; its path."""
    dest = os.path.join(_tmp(), "modules", name + ".py")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "w") as f:
        f.write(text)
    return dest


def import_path(path: str):
    """Import a kernel file with nkirun's `nki` package (also `neuronxcc.nki`)."""
    from nkirun.source.kernel.loader import import_kernel_module
    from nkirun.source.kernel.modules import install_fallback_finder
    install_fallback_finder()
    return import_kernel_module(path)


def load(repo: str, path: str, function: str, commit: str | None = None):
    """The kernel `function` of the extracted file, imported with nkirun's `nki` package."""
    return getattr(import_path(extract(repo, path, commit)), function)
