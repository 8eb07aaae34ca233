"""The documentation that lists instructions, generated from the instruction table, so that
adding an instruction module updates it (tests/test_instruction_docs.py keeps the committed
files equal to this output):

* docs/instructions.md — one row per instruction: engine, summary, mask operand, NKI page;
  then each instruction's NKI 0.6 call in its positional order (SPEC.nki.signature);
* README.md — the instruction list between its `instructions` markers;
* docs/masks.md — which operand's indices `mask=` refers to, between its markers.

    python -m nkirun.show.instruction_docs            # show what would change
    python -m nkirun.show.instruction_docs --write    # rewrite the three files
"""
from __future__ import annotations

import pathlib
import sys

from nkirun.isa import MODULES, REGISTRY

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
ENGINE_ORDER = ("dma", "vector", "scalar", "gpsimd", "tensor")
ENGINE_TITLE = {"dma": "DMA", "vector": "Vector", "scalar": "Scalar", "gpsimd": "GpSimd",
                "tensor": "Tensor"}


def _by_engine() -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for name in MODULES:
        groups.setdefault(REGISTRY[name].engine, []).append(name)
    order = [e for e in ENGINE_ORDER if e in groups] + sorted(set(groups) - set(ENGINE_ORDER))
    return {e: groups[e] for e in order}


def instructions_page() -> str:
    rows = ["# Instructions", "",
            "Generated from the instruction table (`python -m nkirun.show.instruction_docs "
            "--write`); `nkirun explain OP` shows one in full.", "",
            "| instruction | engine | what it does | `mask=` indexes | NKI page |",
            "| --- | --- | --- | --- | --- |"]
    for name in MODULES:
        s = REGISTRY[name]
        mask = f"`{s.mask_on}`" if s.param("mask") is not None else "—"
        rows.append(f"| `{name}` | {ENGINE_TITLE.get(s.engine, s.engine)} | {s.summary} | "
                    f"{mask} | [{s.page_url.rsplit('/', 1)[1]}]({s.page_url}) |")
    return "\n".join(rows + ["", *signatures()]) + "\n"


def signatures() -> list[str]:
    """The NKI 0.6 call of each instruction (SPEC.nki.signature), in its positional order."""
    from nkirun.isa.nki_api import signature_text
    rows = ["## Calls from Python kernels", "",
            "A kernel's `nki.isa` call maps its positional arguments in NKI 0.6's order, "
            "shown here with NKI's defaults (`...`: nkirun's own default applies); `name=` "
            "is accepted everywhere. Instructions not listed take their keywords in the "
            "order `nkirun explain OP` shows; `load` and `store` are `nl.load`/`nl.store`.",
            ""]
    for name in MODULES:
        text = signature_text(name, REGISTRY[name].nki)
        if text:
            rows.append(f"* `{text}`")
    return rows


def readme_list() -> str:
    parts = [", ".join(f"`{n}`" for n in names) + f" ({ENGINE_TITLE.get(e, e)})"
             for e, names in _by_engine().items()]
    return "; ".join(parts) + "."


def masks_table() -> str:
    by_operand: dict[str, list[str]] = {}
    for name in MODULES:
        s = REGISTRY[name]
        if s.param("mask") is not None:
            by_operand.setdefault(s.mask_on, []).append(name)
    rows = ["| mask indexes | instructions |", "| --- | --- |"]
    for operand in sorted(by_operand, key=lambda o: (o != "dst", o)):
        rows.append(f"| `{operand}` | " + ", ".join(f"`{n}`" for n in by_operand[operand]) + " |")
    return "\n".join(rows)


def _between(text: str, marker: str, body: str) -> str:
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    i, j = text.index(begin) + len(begin), text.index(end)
    return text[:i] + "\n" + body + "\n" + text[j:]


def generated() -> dict[pathlib.Path, str]:
    """Each generated file's full intended text."""
    readme = (ROOT / "README.md").read_text()
    masks = (ROOT / "docs" / "masks.md").read_text()
    return {ROOT / "docs" / "instructions.md": instructions_page(),
            ROOT / "README.md": _between(readme, "instructions", readme_list()),
            ROOT / "docs" / "masks.md": _between(masks, "mask-operands", masks_table())}


def main(argv: list[str]) -> int:
    for path, text in generated().items():
        old = path.read_text() if path.exists() else ""
        if old == text:
            continue
        if "--write" in argv:
            path.write_text(text)
            print(f"wrote {path}")
        else:
            print(f"{path} is out of date")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
