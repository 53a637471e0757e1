"""Every setting is read through one table (``autojit/config.py``, ``KNOBS``): each
``AUTOJIT_*`` value and each ``@autoroute(...)`` / ``autojit.config(...)`` option is parsed
by its knob, and a value that is not allowed is an error naming the variable (or option),
the value and what is allowed, never a silent default or a guess (``AUTOJIT_DISABLE=maybe``
used to disable, ``AUTOJIT_FUSION_MAX_OPS=0`` was accepted)."""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import autojit
from autojit.config import (
    COST_SPEEDS,
    COST_TIMES,
    KNOBS,
    PROCESS_WIDE,
    Settings,
    check_options,
    current_settings,
)
from autojit.errors import ConfigError, ConfigWarning
from autojit.routing.costmodel import DeviceParams

ROOT = Path(__file__).resolve().parents[2]
BOOL_GOOD = [("1", True), ("true", True), ("TRUE", True), ("Yes", True), ("on", True),
             (" 1 ", True), ("0", False), ("false", False), ("No", False), ("OFF", False)]
BOOL_BAD = ["maybe", "2", "-1", "y", "t", "enabled", "1.0", "nan"]

#: variable -> (good environment values and what they give, bad environment values)
ENV_CASES: dict[str, tuple[list[tuple[str, Any]], list[str]]] = {
    "AUTOJIT_FORCE": ([("cpu", "cpu"), ("GPU", "gpu"), ("python", "python"),
                       ("auto", None)], ["tpu", "cpu,gpu", "1"]),
    "AUTOJIT_DISABLE": (BOOL_GOOD, BOOL_BAD),
    "AUTOJIT_FUSION_MAX_OPS": ([("1", 1), ("64", 64), (" 3 ", 3)],
                               ["0", "-3", "1.5", "abc", "1e3"]),
    "AUTOJIT_GPU_MIN_ELEMS": ([("0", 0), ("4096", 4096)], ["-1", "2.5", "many"]),
    "AUTOJIT_GPU_UTIL_THRESH": ([("0", 0.0), ("0.8", 0.8), ("1.5", 1.5)],
                                ["-0.1", "nan", "inf", "high"]),
    "AUTOJIT_BACKENDS": ([("cpu", ("cpu",)), ("gpu,cpu", ("gpu", "cpu")),
                          (" CPU , gpu ,", ("cpu", "gpu")), ("cpu,cpu", ("cpu",))],
                         ["foo", "cpu,foo", ",", "python"]),
    "AUTOJIT_LOG": ([("debug", "debug"), ("DEBUG", "debug"), ("off", "")],
                    ["info", "1", "verbose"]),
    "AUTOJIT_STATS": (BOOL_GOOD, BOOL_BAD),
    "AUTOJIT_CACHE_DIR": ([("/tmp/some cache", "/tmp/some cache")], []),
    "AUTOJIT_CACHE_MAX_MB": ([("0", 0.0), ("1024", 1024.0), ("0.5", 0.5)],
                             ["-1", "inf", "nan", "1GB"]),
    "AUTOJIT_NUM_THREADS": ([("1", 1), ("4", 4)], ["0", "-1", "2.0", "all"]),
    "AUTOJIT_THREAD_MIN_WORK": ([("0", 0), ("4194304", 1 << 22)], ["-1", "1e6", "x"]),
    "AUTOJIT_THREAD_SPIN_US": ([("0", 0.0), ("250", 250.0), ("1e11", 1e11)],
                               ["-5", "inf", "nan", "2ms"]),
    "AUTOJIT_OUTPUT_POOL_MB": ([("0", 0.0), ("512", 512.0)], ["-1", "inf", "lots"]),
    "AUTOJIT_STRICT": (BOOL_GOOD, BOOL_BAD),
    "AUTOJIT_RESIDENCY": ([("host", "host"), ("Device", "device"), ("auto", "auto")],
                          ["gpu", "cpu", "1"]),
    "AUTOJIT_EXPLORE": ([("0", 0.0), ("0.03", 0.03), ("1", 1.0)],
                        ["2", "-0.1", "nan", "inf", "often"]),
    "AUTOJIT_COST": ([("gpu.transfer=2.5e10", (("gpu.transfer", 2.5e10),)),
                      ("gpu.launch_s=0, cpu.bandwidth=1e10",
                       (("gpu.launch_s", 0.0), ("cpu.bandwidth", 1e10))),
                      ("gpu.transfer=inf", (("gpu.transfer", math.inf),))],
                     ["gpu.transfer=abc", "gpu.transfer", "gpu.foo=1", "tpu.launch_s=1",
                      "gpu.bandwidth=0", "gpu.launch_s=-1", "gpu.launch_s=inf",
                      "cpu.flop_rate=nan", "launch_s=1"]),
    "AUTOJIT_CHECKS": (BOOL_GOOD, BOOL_BAD),
}

#: option -> (good Python values and what they give, bad Python values); every setting but
#: the process-wide ones (``PROCESS_WIDE``: from the environment only)
OPTION_CASES: dict[str, tuple[list[tuple[Any, Any]], list[Any]]] = {
    "force": ([("cpu", "cpu"), (None, None), ("Python", "python")], ["tpu", 1, True]),
    "disable": ([(True, True), (False, False), (1, True), ("off", False)],
                [2, "maybe", 0.5, None]),
    "fusion_max_ops": ([(1, 1), (64, 64), ("8", 8)], [0, -3, 1.5, True, None, "x"]),
    "gpu_min_elems": ([(0, 0), (10, 10)], [-1, 2.5, False]),
    "gpu_util_thresh": ([(0.5, 0.5), (1, 1.0)], [-1, math.nan, math.inf, True, "x"]),
    "backends": ([(("cpu",), ("cpu",)), (["gpu", "cpu"], ("gpu", "cpu")),
                  ("cpu,gpu", ("cpu", "gpu"))], [("foo",), (), 3, [1]]),
    "log": ([("debug", "debug"), ("off", "")], ["info", 1]),
    "stats_at_exit": ([(True, True), (False, False)], ["maybe", 3]),
    "cache_dir": ([("/tmp/x", "/tmp/x"), (Path("/tmp/y"), "/tmp/y")], [3, None, b"/tmp"]),
    "cache_max_mb": ([(0, 0.0), (12.5, 12.5)], [-1, math.inf, "big"]),
    "num_threads": ([(1, 1), (3, 3)], [0, -1, 2.0, True]),
    "thread_min_work": ([(0, 0), (1 << 40, 1 << 40)], [-1, 0.5]),
    "thread_spin_us": ([(0, 0.0), (1e7, 1e7)], [-1, math.inf, math.nan]),
    "output_pool_mb": ([(0, 0.0), (64, 64.0)], [-1, math.nan]),
    "strict": ([(True, True), (False, False), ("yes", True)], ["sometimes", 7]),
    "residency": ([("host", "host"), ("device", "device"), ("auto", "auto")],
                  ["gpu", None, 1]),
    "explore": ([(0, 0.0), (0.5, 0.5), (1, 1.0)], [2, -0.5, math.nan, "x"]),
    "cost": ([({"gpu.transfer": 1e6}, (("gpu.transfer", 1e6),)),
              ((("cpu.launch_s", 1e-6),), (("cpu.launch_s", 1e-6),)),
              ("gpu.transfer=1e6", (("gpu.transfer", 1e6),))],
             [{"gpu.transfer": "abc"}, {"gpu.foo": 1.0}, 3, ("gpu.transfer",)]),
}


@pytest.fixture(autouse=True)
def _quiet_log():
    """``log="debug"`` turns autojit's debug log on for the process: put it back after."""
    logger = logging.getLogger("autojit")
    level, handlers = logger.level, list(logger.handlers)
    yield
    logger.setLevel(level)
    logger.handlers[:] = handlers


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch):
    """Set variables, re-read them; the environment is read again as it was afterwards."""
    def setenv(variable: str, value: str) -> Settings:
        monkeypatch.setenv(variable, value)
        return autojit.reload_environment()

    yield setenv
    monkeypatch.undo()
    autojit.reload_environment()


def _field(variable: str) -> str:
    return next(k.field for k in KNOBS if k.variable == variable)


def test_every_setting_has_one_knob_and_every_knob_a_test_case() -> None:
    assert sorted(k.field for k in KNOBS) == sorted(f.name for f in dataclasses.fields(Settings))
    assert sorted(ENV_CASES) == sorted(k.variable for k in KNOBS)
    assert sorted(OPTION_CASES) == sorted(k.field for k in KNOBS if k.field not in PROCESS_WIDE)


@pytest.mark.parametrize("option", sorted(PROCESS_WIDE))
def test_a_process_wide_setting_is_no_option(option: str) -> None:
    """``checks`` holds for every kernel of the process (one compiled kernel serves calls of
    any options): as an option it would be silently half-honoured, so it is a TypeError
    naming the variable to set instead."""
    variable = next(k.variable for k in KNOBS if k.field == option)
    with pytest.raises(TypeError, match=f"{option} is process-wide.*{variable}"):
        autojit.autoroute(lambda a: a, **{option: True})
    with pytest.raises(TypeError, match="process-wide"), autojit.config(**{option: True}):
        pass


@pytest.mark.parametrize(("variable", "text", "want"),
                         [(v, t, w) for v, (good, _) in ENV_CASES.items() for t, w in good])
def test_good_environment_values_are_read(environment, variable: str, text: str,
                                          want: Any) -> None:
    assert getattr(environment(variable, text), _field(variable)) == want


@pytest.mark.parametrize(("variable", "text"),
                         [(v, t) for v, (_, bad) in ENV_CASES.items() for t in bad])
def test_bad_environment_values_raise_naming_variable_value_and_what_is_allowed(
        environment, variable: str, text: str) -> None:
    before = current_settings()
    with pytest.raises(ConfigError) as caught:
        environment(variable, text)
    knob = next(k for k in KNOBS if k.variable == variable)
    message = str(caught.value)
    assert message.startswith(f"{variable} must be {knob.kind.allowed}, not {text!r}")
    assert "could not convert" not in message and "invalid literal" not in message
    assert isinstance(caught.value, ValueError)
    assert current_settings() is before          # the settings stay as they were


def test_an_empty_variable_means_unset(environment) -> None:
    default = Settings()
    for knob in KNOBS:
        if knob.variable != "AUTOJIT_CACHE_DIR":
            assert getattr(environment(knob.variable, "  "), knob.field) == getattr(
                default, knob.field)


def test_several_bad_variables_are_all_named(environment, monkeypatch) -> None:
    monkeypatch.setenv("AUTOJIT_NUM_THREADS", "-1")
    with pytest.raises(ConfigError) as caught:
        environment("AUTOJIT_EXPLORE", "2")
    assert "AUTOJIT_NUM_THREADS" in str(caught.value)
    assert any("AUTOJIT_EXPLORE" in note for note in caught.value.__notes__)


@pytest.mark.parametrize(("option", "value", "want"),
                         [(o, v, w) for o, (good, _) in OPTION_CASES.items() for v, w in good])
def test_good_option_values_are_normalised(option: str, value: Any, want: Any) -> None:
    assert check_options({option: value}) == {option: want}
    with autojit.config(**{option: value}) as settings:
        assert getattr(settings, option) == want
    f = autojit.autoroute(lambda a: a, **{option: value})
    assert dict(f.options)[option] == want


@pytest.mark.parametrize(("option", "value"),
                         [(o, v) for o, (_, bad) in OPTION_CASES.items() for v in bad])
def test_bad_option_values_raise_naming_option_value_and_what_is_allowed(option: str,
                                                                        value: Any) -> None:
    knob = next(k for k in KNOBS if k.field == option)
    want = re.escape(f"option {option} must be {knob.kind.allowed}, not {value!r}")
    with pytest.raises(ConfigError, match=want):
        autojit.autoroute(lambda a: a, **{option: value})
    with pytest.raises(ConfigError, match=want), autojit.config(**{option: value}):
        pass


def test_unknown_options_are_a_type_error() -> None:
    with pytest.raises(TypeError, match="unknown autojit option"), autojit.config(num_thread=2):
        pass


def test_cost_parameters_are_the_cost_models() -> None:
    fields = {f.name for f in dataclasses.fields(DeviceParams)}
    assert set(COST_TIMES + COST_SPEEDS) == fields


def test_a_bad_variable_at_import_warns_and_keeps_the_default() -> None:
    """Importing autojit never fails over a bad variable (a program may import it without
    calling it); the warning names the variable, the value and what is allowed, and
    ``reload_environment()`` then raises."""
    child = textwrap.dedent("""\
        import warnings
        warnings.simplefilter("always")
        with warnings.catch_warnings(record=True) as seen:
            import autojit
        from autojit.config import current_settings
        print(current_settings().disable, current_settings().num_threads > 0,
              current_settings().strict)
        for w in seen:
            print(type(w.message).__name__, w.message)
        try:
            autojit.reload_environment()
        except ValueError as exc:
            print("raised", type(exc).__name__)
        """)
    env = dict(os.environ, AUTOJIT_DISABLE="maybe", AUTOJIT_NUM_THREADS="-1",
               AUTOJIT_STRICT="yes", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "False True True"             # defaults kept; yes is a boolean
    assert any(line.startswith(f"{ConfigWarning.__name__} AUTOJIT_DISABLE must be a boolean")
               and "'maybe'" in line for line in lines)
    assert any("AUTOJIT_NUM_THREADS must be an integer >= 1, not '-1'" in line
               for line in lines)
    assert lines[-1] == "raised ConfigError"


def test_no_autojit_variable_is_read_outside_the_table() -> None:
    """Every ``AUTOJIT_*`` variable is read in config.py, through ``KNOBS``."""
    reads = re.compile(r"(environ\.get\(|environ\[|getenv\()\s*[\"']AUTOJIT_")
    offenders = [str(path.relative_to(ROOT)) for path in (ROOT / "autojit").rglob("*.py")
                 if path.name != "config.py" and reads.search(path.read_text())]
    assert offenders == []
    source = (ROOT / "autojit" / "config.py").read_text()
    named = set(re.findall(r"\"(AUTOJIT_[A-Z_]+)\"", source))
    assert named == {k.variable for k in KNOBS}


def test_the_readme_documents_every_knob_and_the_boolean_spellings() -> None:
    readme = (ROOT / "README.md").read_text()
    for knob in KNOBS:
        assert knob.variable in readme, knob.variable
    assert "1/true/yes/on" in readme and "0/false/no/off" in readme
