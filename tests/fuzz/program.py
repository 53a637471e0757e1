"""A generated program: a function's source text, the calls to make of it, and which of its
values carry a documented inexactness (and how much).

Inexact, and why (everything else must match NumPy bit for bit):

* the transcendental functions of ``autojit/lower_cpu/ulp_bounds.py`` (docs/ulp.md): autojit
  calls libm/libmvec or its own vector code, NumPy its own SIMD loops; each result is within
  the measured bound of that table (float16 results, computed in float32 and rounded, one
  ULP more; ``logaddexp``/``logaddexp2``, compositions of exp and log1p not in the table, 8);
* float reductions and products (sum, prod, mean, std, var, nansum, nanmean, cumsum, cumprod,
  matmul/dot/inner/outer): the summation order is not part of NumPy's contract (pairwise,
  blocked, threaded), so a result of n terms may differ by about n*eps*sum|x|.

A value computed from an inexact one is inexact too (``Taint``): the generator never feeds
one into a discontinuous op (comparison, floor, argmax, a cast to int, ...), where an ULP
could flip the answer, so integer and bool results are always compared exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from tests.fuzz.values import ArgSpec, call_text


@dataclass(frozen=True)
class Taint:
    """How far a value may be from NumPy's: ``ulps`` summed over the inexact elementwise ops
    it went through, ``reduced`` when a float reduction/product is among them."""

    ulps: float = 0.0
    reduced: bool = False

    @property
    def exact(self) -> bool:
        return self.ulps == 0 and not self.reduced

    def join(self, other: Taint) -> Taint:
        return Taint(self.ulps + other.ulps, self.reduced or other.reduced)


EXACT = Taint()


@dataclass
class Program:
    """One random program: ``def f(params): body; return ret`` and its calls."""

    params: list[str]
    body: list[str]
    ret: list[str] | None          # returned names (a tuple when more than one), or nothing
    ret_tuple: bool
    calls: list[list[ArgSpec]]
    taint: dict[str, Taint] = field(default_factory=dict)
    seed: str = ""

    def source(self) -> str:
        """The function definition, as ``exec`` gets it and a repro prints it."""
        lines = [f"def f({', '.join(self.params)}):"]
        lines += [f"    {line}" for line in self.body]
        if self.ret is not None:
            text = ", ".join(self.ret) + ("," if self.ret_tuple and len(self.ret) == 1 else "")
            lines.append(f"    return {text}")
        if len(lines) == 1:
            lines.append("    pass")
        return "\n".join(lines) + "\n"

    def calls_source(self) -> str:
        """``call_1()``... functions building each call's arguments fresh."""
        return "\n\n".join(call_text(specs, f"call_{i + 1}")
                           for i, specs in enumerate(self.calls))

    def ops(self) -> frozenset[str]:
        """The NumPy functions, methods and operators the program uses (for signatures)."""
        text = "\n".join(self.body) + "\n" + ", ".join(self.ret or [])
        text = re.sub(r"(?<=[=(,\[:])\s*-(?=\d)", "", text)   # negative literals
        names = set(re.findall(r"np\.([a-z_0-9]+)\(", text))
        names |= {"." + m for m in re.findall(r"\.([a-z_]+)\(", text) if m not in names}
        names -= {".np"}
        for op in re.findall(r"(?<![=<>!])(\*\*=?|//=?|<<=?|>>=?|[-+*/%&|^@<>]=?|==|!=|~)",
                             re.sub(r"np\.\w+|'[^']*'", "", text)):
            names.add(op)
        if re.search(r"\[[^\]]*\]\s*=(?!=)", text):
            names.add("[]=")
        return frozenset(names)

    def with_(self, **changes: object) -> Program:
        return replace(self, **changes)

    def repro(self, header: str = "") -> str:
        """A runnable script: the function, the calls, and the comparison with NumPy."""
        calls = ", ".join(f"call_{i + 1}" for i in range(len(self.calls)))
        return (f'"""{header}"""\n' if header else "") + (
            "import numpy as np\n\n\n" + self.source() + "\n\n" + self.calls_source() +
            "\n\n\nCALLS = [" + calls + "]\n"
            f"RETURNS = {self.ret!r}\n"
            f"TAINT = {self.taint_table()!r}\n\n"
            "if __name__ == '__main__':\n"
            "    # PYTHONPATH=<autojit checkout> python this_file.py\n"
            "    from tests.fuzz.runner import check_repro\n"
            "    check_repro(f, CALLS, RETURNS, TAINT)\n")

    def taint_table(self) -> dict[str, tuple[float, bool]]:
        """The inexact names and their (ulps, reduced), as plain data for a repro."""
        text = " ".join(self.body + (self.ret or []) + self.params)
        return {n: (t.ulps, t.reduced) for n, t in sorted(self.taint.items())
                if not t.exact and re.search(rf"\b{re.escape(n)}\b", text)}
