"""Shared pytest options.

    pytest --regen-golden    rewrite the golden files (tests/golden/) instead of comparing
"""


def pytest_addoption(parser):
    parser.addoption("--regen-golden", action="store_true", default=False,
                     help="rewrite tests/golden/* from the current output instead of "
                          "comparing against them")
