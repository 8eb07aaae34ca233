"""Shared pytest options and fixtures.

    pytest --regen-golden    rewrite the golden files (tests/golden/) instead of comparing
"""
import signal

import pytest


def pytest_addoption(parser):
    parser.addoption("--regen-golden", action="store_true", default=False,
                     help="rewrite tests/golden/* from the current output instead of "
                          "comparing against them")


@pytest.fixture
def interruptible_children():
    """Children started during the test can be interrupted by SIGINT, as from a terminal.
    A test run started in the background of a script (`pytest &`) inherits SIGINT ignored,
    and so would every child it starts (an ignored signal stays ignored across exec): the
    tests that interrupt an `nkirun` process would then see it run on. A handled signal is
    reset to its default in a child, so the test process handles it for the duration."""
    before = signal.getsignal(signal.SIGINT)
    if before == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
