"""The SVML probe engines outlive their module: every one shares one target machine, which
MCJIT takes as its own, so freeing two of them freed it twice. pytester's inline runs drop
the modules a run first imported, which freed the list holding them (a segfault running
tests/cpu/plugin alone)."""

import subprocess
import sys
import textwrap

from tests.support.paths import ROOT

CHILD = textwrap.dedent("""
    import gc, sys
    import autojit.lower_cpu.svml as svml
    probed = [svml.routine(name, 8) for name in ("sin", "exp", "log")]
    for name in [m for m in sys.modules if m == "autojit.lower_cpu.svml"]:
        del sys.modules[name]
    import autojit.lower_cpu as package
    del package.svml, svml
    gc.collect()
    print("alive", probed)
""")


def test_dropping_the_svml_module_frees_no_engine_twice() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "alive" in done.stdout
