"""The optional compiled part of nkirun (everything else is in pyproject.toml).

`nkirun.runner._shadow_native` computes `run --shadow`'s comparisons in one pass per tile
(docs/shadow.md). It is optional: where no C compiler is available the build skips it and
nkirun uses the NumPy definitions it is tested against.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "nkirun.runner._shadow_native",
    sources=["nkirun/runner/_shadow_native.c"],
    extra_compile_args=["-O3", "-ffp-contract=off"] if __import__("os").name != "nt" else [],
    optional=True,
)])
