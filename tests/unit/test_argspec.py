"""parse_args_spec: dtypes, symbolic sizes, layouts, scalars, determinism and errors."""

from __future__ import annotations

import numpy as np
import pytest

from autojit.errors import AutojitError
from autojit.explain.argspec import DEFAULT_SIZE, ArgSpecError, parse_args_spec


def test_brief_example_spec() -> None:
    spec = "f64[1000], f32[4,5], i64, f32[n,3], f64[100]:F, bool[8], u8[2,3]:strided"
    args = parse_args_spec(spec)
    assert len(args) == 7
    a, b, c, d, e, f, g = args
    assert (a.dtype, a.shape) == (np.float64, (1000,))
    assert (b.dtype, b.shape) == (np.float32, (4, 5))
    assert type(c) is int
    assert (d.dtype, d.shape) == (np.float32, (DEFAULT_SIZE, 3))
    assert (e.dtype, e.shape) == (np.float64, (100,)) and e.flags.f_contiguous
    assert (f.dtype, f.shape) == (np.bool_, (8,))
    assert (g.dtype, g.shape) == (np.uint8, (2, 3))
    assert not g.flags.c_contiguous and not g.flags.f_contiguous


@pytest.mark.parametrize(
    "name, dtype",
    [("bool", np.bool_), ("i8", np.int8), ("i16", np.int16), ("i32", np.int32),
     ("i64", np.int64), ("u8", np.uint8), ("u16", np.uint16), ("u32", np.uint32),
     ("u64", np.uint64), ("f32", np.float32), ("f64", np.float64)],
)
def test_every_dtype_gives_arrays_of_that_dtype(name: str, dtype: type) -> None:
    (arr,) = parse_args_spec(f"{name}[50]")
    assert arr.dtype == np.dtype(dtype) and arr.shape == (50,)


def test_contents_are_sensible_for_the_dtype() -> None:
    floats, ints, uints, bools = parse_args_spec("f64[4000], i8[4000], u8[4000], bool[4000]")
    assert np.isfinite(floats).all() and abs(floats.mean()) < 0.1 and 0.9 < floats.std() < 1.1
    assert ints.min() >= -100 and ints.max() < 100 and (ints < 0).any()
    assert uints.min() >= 0 and uints.max() < 100
    assert 0.4 < bools.mean() < 0.6


def test_symbolic_sizes_share_one_value_and_can_be_bound_anywhere() -> None:
    a, b = parse_args_spec("f32[n,3], f32[n], n=1000")
    assert a.shape == (1000, 3) and b.shape == (1000,)
    c, d = parse_args_spec("m=5, f64[m, k], i32[k]")
    assert c.shape == (5, DEFAULT_SIZE) and d.shape == (DEFAULT_SIZE,)


def test_layouts() -> None:
    c, f, s, s2 = parse_args_spec("f64[4,5]:C, f64[4,5]:F, f64[10]:strided, i32[3,4]:strided")
    assert c.flags.c_contiguous and not c.flags.f_contiguous
    assert f.flags.f_contiguous and not f.flags.c_contiguous and f.shape == (4, 5)
    assert s.shape == (10,) and s.strides == (16,) and s.base is not None
    assert s2.shape == (3, 4) and s2.strides[-1] == 8


def test_layout_names_are_case_insensitive() -> None:
    (a,) = parse_args_spec("f32[3,4]:f")
    assert a.flags.f_contiguous


def test_scalars_are_python_scalars_for_f64_i64_bool() -> None:
    f, i, b, f32 = parse_args_spec("f64, i64, bool, f32")
    assert type(f) is float and type(i) is int and type(b) is bool
    assert isinstance(f32, np.float32)


def test_zero_d_and_empty_arrays() -> None:
    zero_d, empty = parse_args_spec("f64[], f32[0, 3]")
    assert isinstance(zero_d, np.ndarray) and zero_d.shape == ()
    assert empty.shape == (0, 3)


def test_whitespace_and_underscores() -> None:
    (a,) = parse_args_spec("  f64 [ 1_000 ] : F ")
    assert a.shape == (1000,)


def test_empty_spec_gives_no_arguments() -> None:
    assert parse_args_spec("") == []
    assert parse_args_spec("   ") == []


def test_deterministic_per_seed() -> None:
    a1, s1 = parse_args_spec("f64[100], f64", seed=3)
    a2, s2 = parse_args_spec("f64[100], f64", seed=3)
    a3, _ = parse_args_spec("f64[100], f64", seed=4)
    np.testing.assert_array_equal(a1, a2)
    assert s1 == s2
    assert not np.array_equal(a1, a3)


def test_arguments_of_one_spec_differ() -> None:
    a, b = parse_args_spec("f64[100], f64[100]")
    assert not np.array_equal(a, b)


@pytest.mark.parametrize(
    "spec, token, words",
    [
        ("f64[10], f65[3]", "f65[3]", "unknown dtype 'f65'"),
        ("f64[10", "f64[10", "unclosed"),
        ("f64[10]]", "]", "unbalanced"),
        ("f64[-1]", "f64[-1]", "negative"),
        ("f64[3x]", "f64[3x]", "not an integer"),
        ("f64[3]:X", "f64[3]:X", "unknown layout"),
        ("f64:F", "f64:F", "scalar has no layout"),
        ("f64[]:strided", "f64[]:strided", "0-d"),
        ("f64[n], n=1, n=2", "n=2", "bound twice"),
        ("f64[n], n=abc", "n=abc", "not an integer"),
        ("f64[3],,f32", "", "empty entry"),
        ("f64[3],", "", "empty entry"),
        ("f64[3,,4]", "f64[3,,4]", "empty dimension"),
        ("1=3", "1=3", "not a size name"),
        ("f64=x", "f64=x", "not a number"),
        ("i64=1.5", "i64=1.5", "not an integer"),
        ("bool=maybe", "bool=maybe", "not a bool"),
        ("u8=300", "u8=300", "does not fit u8"),
        ("f64[3]=1", "f64[3]=1", "only a scalar takes a value"),
        ("i64=", "i64=", "needs a value"),
        ("f64(3)", "f64(3)", "expected DTYPE"),
    ],
)
def test_errors_point_at_the_bad_token(spec: str, token: str, words: str) -> None:
    with pytest.raises(ArgSpecError) as info:
        parse_args_spec(spec)
    err = info.value
    assert isinstance(err, AutojitError)
    assert err.token == token
    assert words in str(err)
    assert f"({token!r})" in str(err)
    assert "\n" not in str(err)
    if token:
        assert spec[err.column:].startswith(token)


def test_error_column_is_one_based_in_message() -> None:
    with pytest.raises(ArgSpecError, match="column 10"):
        parse_args_spec("f64[10], f65[3]")
