"""The optional compiled part of nkirun (everything else is in pyproject.toml).

`nkirun.runner._shadow_native` computes `run --shadow`'s comparisons in one pass per tile
(docs/shadow.md). It is optional: where no C compiler is available the build skips it and
nkirun uses the NumPy definitions it is tested against.
"""
import os

from setuptools import Extension, setup

# -ffp-contract=off: no fused multiply-add, so every build rounds as NumPy does (MSVC's
# default /fp:precise does not contract either)
FLAGS = [] if os.name == "nt" else ["-O3", "-ffp-contract=off"]

setup(ext_modules=[Extension(
    "nkirun.runner._shadow_native",
    sources=["nkirun/runner/_shadow_native.c"],
    extra_compile_args=FLAGS,
    optional=True,  # no compiler: the build goes on without it
)])
