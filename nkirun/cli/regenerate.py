"""`python -m nkirun.cli.regenerate`: rewrite the program format's JSON Schema
(schemas/program.schema.json and the copy installed with nkirun) from the instruction
table (source/schema.py makes it; a test keeps the committed copy equal to it)."""
from __future__ import annotations

import os
import sys


def main() -> int:
    from nkirun.source.schema import PACKAGE_SCHEMA_PATH, SCHEMA_PATH, dumps
    text = dumps()
    for path in (SCHEMA_PATH, PACKAGE_SCHEMA_PATH):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
