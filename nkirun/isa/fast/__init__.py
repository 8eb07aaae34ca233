"""Fast paths of the hard instructions, each the speed version of a plain `definition` in
its instruction module (tests/isa/test_fast_paths.py checks they agree)."""
