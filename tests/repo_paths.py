"""Where the repository's files are, for tests in any sub-folder of tests/."""
import pathlib

TESTS = pathlib.Path(__file__).resolve().parent
ROOT = TESTS.parent
PROGRAMS = ROOT / "programs"
DOCS = ROOT / "docs"
INVALID = TESTS / "invalid"    # one invalid program per diagnostic code
GOLDEN = TESTS / "golden"      # golden cost reports


def load_module(path: pathlib.Path, name: str):
    """The Python file at `path` imported as module `name` (a test file's tables, or a
    kernel file a test wrote), without putting its folder on sys.path."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
