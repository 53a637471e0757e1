"""What users see of loops, scratch arrays and int arguments (issue 15, point 7): the graph
and kernel text name loops as the user wrote them, the -m report says how each loop runs,
what it carries and where, what it writes in place or copies and what it allocates per
iteration, and ``autojit inspect --args`` takes scalars with values (``i64=1000``)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from tests.explain import region_programs as programs

from autojit import autoroute
from autojit.explain.argspec import ArgSpecError, parse_args_spec
from autojit.explain.cli import EXIT_OK, EXIT_UNTRACEABLE, EXIT_USAGE, main

PROGRAMS = Path(programs.__file__)
RNG = np.random.default_rng(0)


def _line(program: object, offset: int) -> str:
    """``file.py:N``: the line ``offset`` lines below ``program``'s ``def``."""
    code = program.__code__
    return f"{os.path.basename(code.co_filename)}:{code.co_firstlineno + offset}"


def _inspect(program: object, *args: object):
    return autoroute(program, force="cpu").inspect(*args)


def _lower(n: int = 6) -> np.ndarray:
    return np.tril(RNG.random((n, n))) + n * np.eye(n)


# -- the graph text -------------------------------------------------------------------------
def test_graph_text_names_the_loop_index_bounds_and_arrays_as_written() -> None:
    text = _inspect(programs.lower_solve, _lower(), RNG.random(6)).graph_text
    assert "loop i in [0, b.shape[0]) carried (), in place (x), reads (L, b):" in text
    assert "trace for_body(i: i64[], L: f64[n0,n1], b: f64[n2], x: f64[n2]):" in text
    assert "getitem(@0" not in text and "%0[i, :i]" in text   # views by the index's name
    assert "(x after the loop)" in text


def test_graph_text_shows_carried_scalars_with_their_first_value() -> None:
    text = _inspect(programs.trace_tanh, RNG.random((5, 5))).graph_text
    # the first iteration is peeled (acc changes type): the loop starts at 1
    assert re.search(r"loop i in \[1, a\.shape\[0\]\) carried \(acc\) from \(%\d+\), "
                     r"reads \(a\):", text)
    assert "trace for_body(i: i64[], acc: f64[], a: f64[n0,n1]):" in text


def test_graph_text_of_a_stencil_over_an_int_argument() -> None:
    text = _inspect(programs.heat, RNG.random((8, 8)), 5, 0.1).graph_text
    assert "loop %t in [0, steps) carried (), in place (u), reads (alpha):" in text


def test_graph_text_of_a_while_loop() -> None:
    text = _inspect(programs.relax, RNG.random(12), 0.01).graph_text
    assert re.search(r"while err > tol carried \(err\) from \(%\d+\), in place \(u\), "
                     r"reads \(tol\):", text)   # the condition as the user wrote it
    assert "trace while_body(err: f64[], tol: f64[], u: f64[n0]):" in text


def test_nested_loops_are_indented_under_their_loop() -> None:
    text = _inspect(programs.lu_inplace, _lower()).graph_text
    lines = text.splitlines()
    outer = next(line for line in lines if "loop i in [0, A.shape[0])" in line)
    first = next(line for line in lines if "loop j in [0, i)" in line)
    second = next(line for line in lines if "loop j in [i, n)" in line)   # n: the user's name
    indent = len(outer) - len(outer.lstrip())
    assert len(first) - len(first.lstrip()) > indent
    assert len(second) - len(second.lstrip()) == len(first) - len(first.lstrip())


# -- the kernel (fused) text ----------------------------------------------------------------
def test_kernel_text_lists_each_loops_steps_under_it() -> None:
    text = _inspect(programs.lu_inplace, _lower()).kernels_text
    lines = text.splitlines()
    assert lines[0].startswith("loop i in [0, A.shape[0])") and "per iteration 2 loops" in lines[0]
    inner = [line for line in lines if line.startswith("  loop j in")]
    assert len(inner) == 2
    # one kernel: the element write A[i, j] = ... joins the kernel computing it
    assert "per iteration 1 kernel, 1 library call" in inner[0]
    assert any(line.startswith("    kernel r0_r0_") for line in lines)
    assert any(line.startswith("    library matmul") for line in lines)
    assert not any(line != line.rstrip() for line in lines)   # no trailing blanks


def test_kernel_text_of_a_scratch_result() -> None:
    text = _inspect(programs.lower_solve, _lower(), RNG.random(6)).kernels_text
    head = next(line for line in text.splitlines() if line.startswith("loop i"))
    assert f"{_line(programs.lower_solve, 2)}: per iteration 1 kernel, 1 library call" in head


# -- the -m report --------------------------------------------------------------------------
def _report(program: object, *args: object, verbosity: int = 1) -> str:
    return _inspect(program, *args).report(verbosity, toolchain=False)


def test_report_says_how_the_loop_runs_and_where_its_carried_value_lives() -> None:
    text = _report(programs.trace_tanh, RNG.random((5, 5)))
    at = f"loop at {_line(programs.trace_tanh, 2)}"
    assert f"{at} (loop i in [1, a.shape[0]) carried (acc)" in text
    # a scalar body: the whole loop is one native kernel (fuse/native_loop.py)
    assert f"{at} (loop i in [1, a.shape[0]) carried (acc) from (%4), reads (a)) compiled " \
           "into one native loop" in text
    assert f"{at}: acc is carried: f64[] in a register" in text
    # each allocation per iteration is named with its line and size (the host loop's body
    # plan stores the next acc: 8 bytes), or the report says there is none
    if f"{at}: no allocation per iteration" not in text:
        assert re.search(rf"{_line(programs.trace_tanh, 3)}:\d+: {at}: allocates per "
                         r"iteration: %\d+ = add acc %\d+ \(the next acc\) at .*: f64\[\] "
                         r"8 bytes \(8 B here\), written by r0_k0_add", text)


def test_report_at_m_m_says_what_the_body_values_became() -> None:
    text = _report(programs.trace_tanh, RNG.random((5, 5)), verbosity=2)
    at = f"loop at {_line(programs.trace_tanh, 2)}"
    assert re.search(rf"{at}: in the body: %\d+ = tanh %\d+ (fused into|recomputed in) r0_", text)
    assert f"{at}: in the body: %" in text and "is a view of a (no allocation)" in text


def test_report_names_a_scratch_array_copied_before_the_loop() -> None:
    text = _report(programs.lower_solve, _lower(), RNG.random(6), verbosity=2)
    at = f"loop at {_line(programs.lower_solve, 2)}"
    assert re.search(rf"{at}: x \(%\d+ = fill 0\.0 at {_line(programs.lower_solve, 1)}:\d+\) "
                     r"is a scratch array the loop writes: copied once before the loop, "
                     r"f64\[n2\] 8·n2 bytes \(48 B here\)", text)
    assert "the loop works on its own copy" in text   # -m -m: why


def test_report_says_arrays_are_written_in_place_and_nothing_allocates() -> None:
    text = _report(programs.lu_inplace, _lower())
    outer = f"loop at {_line(programs.lu_inplace, 2)}"
    assert f"{outer}: A is written in place: f64[n0,n1], the caller's array" in text
    assert f"{outer}: no allocation per iteration" in text
    assert "runs as a host loop of 2 loops per iteration" in text
    assert f"loop at {_line(programs.lu_inplace, 3)} (loop j in [0, i)" in text


def test_report_of_rows_filled_in_a_loop_sized_by_an_int_argument() -> None:
    text = _report(programs.distances, 6, RNG.random(6))
    at = f"loop at {_line(programs.distances, 2)}"
    assert f"{at}: no allocation per iteration" in text
    assert re.search(rf"{at}: out \(%\d+ = fill 0\.0 at", text)


def test_report_names_a_loop_that_runs_as_python_and_why() -> None:
    text = _report(programs.shrink, RNG.random(8))
    assert (f"loop at {_line(programs.shrink, 1)} runs as Python while tracing (unrolled "
            "into the trace): carried types keep changing") in text


# -- autojit inspect --args with scalar values ----------------------------------------------
def test_scalar_entries_take_values() -> None:
    assert parse_args_spec("i64=1000, f64=0.5, bool=True, bool=false, i32=7")[:4] == [
        1000, 0.5, True, False]
    *_, i32 = parse_args_spec("i32=7")
    assert type(i32) is np.int32 and i32 == 7
    (a, n) = parse_args_spec("f64[n], i64=n, n=12")
    assert a.shape == (12,) and n == 12 and type(n) is int
    f, i = parse_args_spec("f64, i64")   # without a value: random, as before
    assert type(f) is float and type(i) is int


@pytest.mark.parametrize("spec, words", [
    ("i64=1.5", "not an integer or a size name"),
    ("f64=abc", "not a number"),
    ("bool=2", "not a bool"),
    ("i8=1000", "does not fit i8"),
    ("f64[4]=1", "only a scalar takes a value"),
    ("i64=", "needs a value"),
])
def test_bad_scalar_values_say_what_is_wrong(spec: str, words: str) -> None:
    with pytest.raises(ArgSpecError, match=re.escape(words)):
        parse_args_spec(spec)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["inspect", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_takes_a_loop_bound_and_shows_the_loop(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, f"{PROGRAMS}:heat", "--args", "f64[n,n], i64=5, f64=0.1",
                          "--stage", "graph", "--stage", "fused")
    assert code == EXIT_OK, err
    assert "loop %t in [0, steps) carried (), in place (u), reads (alpha):" in out
    assert "per iteration" in out


def test_cli_names_sizes_given_by_an_int_argument(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, f"{PROGRAMS}:distances", "--args", "i64=n, f64[n], n=8",
                          "-m")
    assert code == EXIT_OK, err
    assert "f64[n,n] 8·n·n bytes (512 B here)" in out   # np.empty((n, n)): named n


def test_cli_without_args_says_what_to_pass(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, f"{PROGRAMS}:heat")
    assert code == EXIT_USAGE and out == ""
    assert "heat(u, steps, alpha) takes 3 argument(s) (u, steps, alpha)" in err
    assert "i64=1000" in err and "cannot take the 0" not in err


def test_cli_too_few_args_says_what_an_entry_looks_like(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, f"{PROGRAMS}:heat", "--args", "f64[4,4]")
    assert code == EXIT_USAGE
    assert "cannot take the 1 argument(s)" in err and "DTYPE=VALUE" in err


def test_cli_bad_scalar_value_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, f"{PROGRAMS}:heat", "--args", "f64[4,4], i64=1e3, f64=0.1")
    assert code == EXIT_USAGE and "'1e3' is not an integer or a size name" in err


def test_cli_fallback_names_the_loop_that_runs_as_python(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, f"{PROGRAMS}:drop", "--args", "f64[n], i64=3")
    assert code == EXIT_UNTRACEABLE
    assert (f"the loop at {_line(programs.drop, 1)} runs as Python: carried types keep "
            "changing") in err


def test_notebook_view_of_a_loop_renders_its_head() -> None:
    from autojit.explain.html import graph_dot, graph_text_diagram

    inspection = _inspect(programs.lu_inplace, _lower())
    assert "loop i in [0, A.shape[0])" in graph_text_diagram(inspection)
    assert "cluster_r0_" not in graph_dot(inspection)   # body kernels are the loop's
    assert "loop i in [0, A.shape[0])" in inspection._repr_html_()


def test_a_python_if_on_an_int_argument_shows_its_decision() -> None:
    inspection = _inspect(programs.step, RNG.random(4), 7)
    assert "decision n > 100 is False" in inspection.graph_text
    assert (f"{_line(programs.step, 1)}:8: if n > 100 was False here: the trace holds the "
            "false branch; a call deciding otherwise traces again") in inspection.report(
                toolchain=False)
