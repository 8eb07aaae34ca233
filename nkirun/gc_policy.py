"""The garbage-collector policy of nkirun's long passes.

Building and checking a long program allocates millions of small objects and frees almost
none, so cyclic collections would only rescan the growing IR (a third of the time on
100k-instruction traces). The `nkirun` command owns its process and pauses the collector
for the whole command. In a caller's process the collector is paused only while a kernel
is traced and while the traced program is checked (api_kernel.py: 10-15% of the
trace and ~25% of the check of 100,000 instructions), and restored as it was when the
pass ends, also when the kernel raises; `import nkirun` alone changes nothing.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def paused_gc():
    """Pause the cyclic garbage collector for the duration (see the module docstring)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            # file everything allocated meanwhile under the oldest generation directly;
            # otherwise the next young collection would scan all of it at once
            gc.freeze()
            gc.unfreeze()
        gc.enable()


