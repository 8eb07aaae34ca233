"""Keywords and instructions that NKI removed or renamed, with the release that did it: the
releases, the instructions NKI removed (they have no module), and the lookup of a removed
keyword (an instruction's own are its spec's `nki.removed`, isa/nki_api.py).

The front end looks here only when a keyword or an instruction is unknown, so that a
kernel written for an older NKI gets a message naming the release and the replacement
instead of a bare "unknown keyword".

Sources: the NKI release notes (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/
release-notes/components/nki.html) and the migration guides. NKI 0.2.0 shipped with Neuron
SDK 2.27/2.28, 0.3.0 with 2.29, 0.4.0 with 2.30.

nkirun keeps accepting the legacy `mask=` and `dtype=` keywords (docs/masks.md) and memset's
`shape=`: they are removed in NKI 0.2.0 too, but the the instruction pages are written with them.
"""
from __future__ import annotations

NKI_020 = "NKI 0.2.0 (Neuron SDK 2.27)"
NKI_020_228 = "NKI 0.2.0 (Neuron SDK 2.28)"
NKI_030 = "NKI 0.3.0 (Neuron SDK 2.29)"
NKI_040 = "NKI 0.4.0 (Neuron SDK 2.30)"

# instruction -> (release that removed it, what to write instead)
INSTRUCTIONS = {
    "tensor_copy_dynamic_src": (NKI_040, "use tensor_copy with a dynamically offset view "
                                         "(.ap with scalar_offset)"),
    "tensor_copy_dynamic_dst": (NKI_040, "use tensor_copy with a dynamically offset view "
                                         "(.ap with scalar_offset)"),
}


def removed_keyword(op: str, key: str) -> tuple[str, str] | None:
    """(release, advice) when NKI removed or renamed `op`'s keyword `key` (its spec's
    `nki.removed`), else None."""
    from nkirun.isa import REGISTRY
    spec = REGISTRY.get(op)
    for keyword, release, advice in spec.nki.removed if spec is not None else ():
        if keyword == key:
            return release, advice
    return None


def removed_instruction(op: str) -> tuple[str, str] | None:
    return INSTRUCTIONS.get(op)
