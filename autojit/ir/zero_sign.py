"""Which kernel values may lose the sign of a zero without changing any result.

NumPy's float ``max``/``min`` reductions keep the sign of the row's last zero, and
reproducing that costs a second (index) accumulator in the vectorised loop
(``lower_cpu/reduce.py``). Softmax pays it for nothing: its row max only feeds
``exp(x - max)``, and ``exp(+0) == exp(-0)``. This backward analysis finds such values:
a value's zero sign *matters* when a store, or an operand rule below, can expose it.

Rules per operand (``OPERAND_RULES``; anything not listed is assumed to matter):

- ``BLIND``: the op's result is the same for +0 and -0 (``exp``, ``cos``, comparisons,
  ``log``: both give -inf, casts to integers and booleans);
- ``FOLLOWS``: a zero sign of the operand can only reach the result's zero sign
  (``a + b``, ``a * b``, ``-a``, the numerator of ``a / b``, ...), so it matters only
  where the result's does. A divisor always matters: ``1 / -0`` is ``-inf``.
"""

from __future__ import annotations

import enum

from autojit.ir.kernel import Instr, Kernel
from autojit.ir.ops import REDUCE_KINDS, Op, zero_coded


class Use(enum.Enum):
    BLIND = "blind"       # the operand's zero sign cannot change the result
    FOLLOWS = "follows"   # it matters exactly when the result's zero sign does


_BLIND_ONE = (Use.BLIND,)
_FOLLOWS_ONE = (Use.FOLLOWS,)
_FOLLOWS_TWO = (Use.FOLLOWS, Use.FOLLOWS)
_BLIND_TWO = (Use.BLIND, Use.BLIND)

#: per op, the rule of each operand in order
OPERAND_RULES: dict[Op, tuple[Use, ...]] = {
    **dict.fromkeys((Op.EXP, Op.EXP2, Op.COS, Op.COSH, Op.FABS, Op.ABSOLUTE, Op.ISNAN,
                     Op.ISINF, Op.ISFINITE, Op.LOG, Op.LOG2, Op.LOG10), _BLIND_ONE),
    **dict.fromkeys((Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE), _BLIND_TWO),
    **dict.fromkeys((Op.NEG, Op.POSITIVE, Op.SQRT, Op.CBRT, Op.SIN, Op.TAN, Op.SINH,
                     Op.TANH, Op.ASIN, Op.ATAN, Op.ASINH, Op.ATANH, Op.EXPM1, Op.LOG1P,
                     Op.FLOOR, Op.CEIL, Op.TRUNC, Op.RINT, Op.REDUCE), _FOLLOWS_ONE),
    **dict.fromkeys((Op.ADD, Op.SUB, Op.MUL, Op.MAXIMUM, Op.MINIMUM), _FOLLOWS_TWO),
    Op.DIV: (Use.FOLLOWS,),          # the divisor (second operand) always matters
    Op.SELECT: (Use.BLIND, Use.FOLLOWS, Use.FOLLOWS),
}


def _operand_matters(ins: Instr, position: int, result_matters: bool) -> bool:
    if ins.op is Op.CAST:   # to an integer or bool the zero is just 0; float to float keeps it
        return result_matters and ins.dtype.kind in "fc"
    rules = OPERAND_RULES.get(ins.op)
    if rules is None or position >= len(rules):
        return True
    return rules[position] is Use.FOLLOWS and result_matters


def zero_sign_blind(kernel: Kernel) -> frozenset[int]:
    """Return the ids of the instructions whose result's zero sign no store can see."""
    matters: set[int] = set()
    changed = True
    while changed:    # the body is in definition order; one reverse sweep normally settles
        changed = False
        for ins in reversed(kernel.body):
            result_matters = ins.op is Op.STORE or ins.id in matters
            for position, arg in enumerate(ins.args):
                if arg not in matters and _operand_matters(ins, position, result_matters):
                    matters.add(arg)
                    changed = True
    return frozenset(ins.id for ins in kernel.body) - matters


def indexed_reduces(kernel: Kernel) -> frozenset[int]:
    """Return the ids of the REDUCEs whose accumulator carries a row position besides its
    value: argmax/argmin (the answer) and float max/min whose zero sign a store can see
    (the last-zero code of ``ops.ZeroSign.LAST_ZERO``; left out where the sign is blind)."""
    dtypes = {ins.id: ins.dtype for ins in kernel.body}
    reduces = [ins for ins in kernel.body if ins.op is Op.REDUCE]
    blind = zero_sign_blind(kernel) if reduces else frozenset()
    return frozenset(
        ins.id for ins in reduces
        if REDUCE_KINDS[ins.attr].combine.position
        or zero_coded(ins.attr, dtypes[ins.args[0]], ins.id not in blind))
