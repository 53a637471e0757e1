"""Names that say which thing they are (issue 14): the enums keep today's strings where
they leave the router (stats dicts, snapshots, ``choose_route``), the old public name of the
emulated CUDA target still imports, and no autojit package shadows a standard module."""

from __future__ import annotations

import sys
from pathlib import Path

import autojit
from autojit.routing.breaker import Breaker, BreakerState
from autojit.routing.decisions import Decision, Route


def test_routes_and_breaker_states_are_todays_strings() -> None:
    assert [str(r) for r in Route] == ["cpu", "gpu", "python"]
    assert [str(s) for s in BreakerState] == ["closed", "open", "half-open"]
    assert f"{Route.GPU} {BreakerState.HALF_OPEN}" == "gpu half-open"
    assert {"cpu": 1}[Route.CPU] == 1 and hash(Route.PYTHON) == hash("python")


def test_what_leaves_the_router_is_plain_str() -> None:
    """Stats dicts and snapshots print exactly as before: plain ``str``, not enum members."""
    shown = Decision(Route.CPU, "no usable GPU").as_dict()
    assert type(shown["route"]) is str and shown["route"] == "cpu"
    breaker = Breaker(threshold=1)
    breaker.failure("boom")
    state = breaker.snapshot()["state"]
    assert type(state) is str and state == "open" and breaker.state is BreakerState.OPEN


def test_the_emulated_cuda_target_keeps_its_old_public_name() -> None:
    import autojit.testing as testing
    from autojit.runtime.targets import EmulatedCudaTarget
    assert testing.EmulatedCudaTarget is EmulatedCudaTarget
    assert testing.EmulatedCudaBackend is EmulatedCudaTarget
    assert {"EmulatedCudaTarget", "EmulatedCudaBackend"} <= set(testing.__all__)


def test_no_package_shadows_a_standard_module() -> None:
    """Checked on the folder, not by import (an editable install may find another checkout)."""
    folder = Path(autojit.__file__).parent
    packages = {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}
    assert "explain" in packages
    assert not packages & sys.stdlib_module_names
