"""When NumPy reports floating-point errors itself: ``np.errstate`` / ``np.seterr``.

NumPy checks the FP status flags after each ufunc loop and, per ``np.geterr()``, warns
(``RuntimeWarning: divide by zero encountered in divide``), raises FloatingPointError,
calls the ``seterrcall`` function, prints or logs. Compiled kernels report nothing (their
decompositions compute both sides of selects and fold constants, so hardware flags would
not be NumPy's either). Under a policy that can raise, call, print or log, the call runs as
the original Python, which reports exactly as NumPy does. Under NumPy's default ('warn'
for divide/over/invalid, 'ignore' for under) or 'ignore', kernels run, and the
RuntimeWarnings NumPy would emit under 'warn' are not emitted (a documented gap).
"""

from __future__ import annotations

import numpy as np
from numpy._core import umath

#: NumPy 2 keeps the error policy in this context variable; np.errstate and np.seterr set
#: a new object, so an object seen before has the verdict computed before.
_POLICY = POLICY_VAR = umath._extobj_contextvar   # the fast path's gate compares it too
_REPORTING = frozenset({"raise", "call", "print", "log"})
_last: tuple[object, bool] = (object(), False)


def numpy_reports_fp_errors() -> bool:
    """Return True when ``np.geterr()`` (this thread / context) raises, calls, prints or
    logs for some FP error class: compiled code cannot honour that, NumPy must run."""
    global _last
    policy = _POLICY.get()
    seen, verdict = _last
    if policy is seen:
        return verdict
    verdict = any(action in _REPORTING for action in np.geterr().values())
    _last = (policy, verdict)
    return verdict


def current_policy() -> object:
    """Return the current error-policy object (compare with ``is`` to see a change)."""
    return _POLICY.get()
