"""Where the repository's files are, for tests in any sub-folder of tests/."""
import pathlib

TESTS = pathlib.Path(__file__).resolve().parent
ROOT = TESTS.parent
PROGRAMS = ROOT / "programs"
DOCS = ROOT / "docs"
INVALID = TESTS / "invalid"    # one invalid program per diagnostic code
GOLDEN = TESTS / "golden"      # golden cost reports
