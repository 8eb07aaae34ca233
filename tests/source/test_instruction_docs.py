"""The instruction lists in the docs are generated from the table and kept current."""
from nkirun.isa import MODULES
from nkirun.show import instruction_docs


def test_generated_docs_are_committed():
    stale = [str(p) for p, text in instruction_docs.generated().items()
             if not p.exists() or p.read_text() != text]
    assert not stale, f"run `python -m nkirun.show.instruction_docs --write`: {stale}"


def test_every_instruction_is_listed_with_its_page():
    page = instruction_docs.instructions_page()
    for name in MODULES:
        assert f"| `{name}` |" in page
    assert page.count("https://awsdocs-neuron.readthedocs-hosted.com/") == len(MODULES)
