"""What two traces of one kernel are compared on when a fast path must equal its plain twin
(call-site forms, copy chains, block tiles, the check's form shortcuts): plain tuples, so a
failing assert shows the first instruction or diagnostic that differs."""


def instruction_facts(program) -> list:
    """Every instruction's op, arguments, index, location, keyword locations, repeat and
    core, the partial ones (a trace that stopped) included."""
    return [(i.op, dict(i.args), i.index, i.loc, dict(i.arg_locs), i.repeat_of, i.core)
            for i in (*program.instructions, *program.partial)]


def diagnostic_facts(diags) -> list:
    """Every diagnostic as the user sees it: severity, code, message, location,
    instruction and hint."""
    return [(d.severity, d.code, d.message, d.loc, d.instruction, d.hint) for d in diags]


def assert_same_outcome(fast, plain) -> None:
    """Two (traced kernel, check diagnostics, run results) triples, a fast path's and its
    plain twin's, agree: instructions, tensors in order, the trace's and the check's
    diagnostics, and the outputs' bytes."""
    (fast_traced, fast_diags, fast_results), (plain_traced, plain_diags, plain_results) = \
        fast, plain
    assert instruction_facts(fast_traced.program) == instruction_facts(plain_traced.program)
    assert fast_traced.program.tensors == plain_traced.program.tensors
    assert list(fast_traced.program.tensors) == list(plain_traced.program.tensors)
    assert (diagnostic_facts(fast_traced.diagnostics)
            == diagnostic_facts(plain_traced.diagnostics))
    assert diagnostic_facts(fast_diags) == diagnostic_facts(plain_diags)
    assert fast_results == plain_results
