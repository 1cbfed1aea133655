"""Argument checks raised in Python before tracing, and the error that names the argument.

Every message names the argument, what was expected and what was received. Values that are
traced (inside ``jit``/``vmap``) cannot be checked here; they are left to the solvers' status
codes.

:class:`ArgumentError` carries the argument's name as data, and marks every argument its
message mentions (:func:`name`), so a front end renders them its own way (the command line
writes ``--resume`` where Python reads ``resume=True``) without parsing the message.
"""
from __future__ import annotations

import numbers
import re

import jax
import numpy as np


_MARK = re.compile("\x1e([^\x1f\x1e]*)\x1f([^\x1e]*)\x1e")


def name(argument: str, spelling: str | None = None) -> str:
    """An argument's name marked in a message: read as ``spelling`` (default: the name) by
    ``str(error)``, as a front end's own name by :meth:`ArgumentError.render`."""
    return f"\x1e{argument}\x1f{argument if spelling is None else spelling}\x1e"


def leading_argument(message: str) -> str | None:
    """The argument a message starts with (a :func:`name` mark at its start), or None."""
    m = _MARK.match(message)
    return m.group(1) if m else None


class ArgumentError(ValueError):
    """A bad argument: ``argument`` names it (None: no single one), the message marks every
    argument it mentions (:func:`name`). ``str(error)`` reads in Python's terms."""

    def __init__(self, argument: str | None, message: str):
        self.argument = argument
        own = argument is None or f"\x1e{argument}\x1f" in message
        self.message = message if own else f"{name(argument)}: {message}"
        super().__init__(self.render())

    def render(self, spell=None) -> str:
        """The message with each marked argument written ``spell(argument, python_spelling)``
        (default: the Python spelling)."""
        spell = spell or (lambda argument, python: python)
        return _MARK.sub(lambda m: spell(m.group(1), m.group(2)), self.message)

    def __str__(self) -> str:
        return self.render()


def is_concrete(x) -> bool:
    """True when ``x`` holds a value in Python (not a tracer inside jit/vmap)."""
    return not isinstance(x, jax.core.Tracer)


def check_int(arg: str, value, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ArgumentError(arg, f"{name(arg)} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ArgumentError(arg, f"{name(arg)} must be >= {minimum}, got {value}")
    return int(value)


def check_positive(arg: str, value, *, allow_zero: bool = False):
    """Checks a scalar is > 0 (>= 0 with ``allow_zero``) when it is concrete."""
    if not is_concrete(value):
        return value
    arr = np.asarray(value)
    if arr.shape != ():
        raise ArgumentError(arg, f"{name(arg)} must be a scalar, got an array of shape {arr.shape}")
    v = float(arr)
    ok = (v >= 0) if allow_zero else (v > 0)
    if not np.isfinite(v) or not ok:
        bound = ">= 0" if allow_zero else "> 0"
        raise ArgumentError(arg, f"{name(arg)} must be a finite number {bound}, got {v}")
    return value


def check_shape(arg: str, x, shape: tuple, *, what: str = "") -> None:
    """Checks ``x.shape`` against ``shape`` where ``None`` matches any size."""
    got = tuple(np.shape(x))
    if len(got) != len(shape) or any(s is not None and s != g for s, g in zip(shape, got)):
        want = "(" + ", ".join("?" if s is None else str(s) for s in shape) + ")"
        extra = f" ({what})" if what else ""
        raise ArgumentError(arg, f"{name(arg)} must have shape {want}{extra}, got {got}")


def check_finite(arg: str, x) -> None:
    if is_concrete(x) and not np.all(np.isfinite(np.asarray(x))):
        raise ArgumentError(arg, f"{name(arg)} must contain only finite values")


def check_floating(arg: str, x) -> None:
    dt = np.asarray(x).dtype if is_concrete(x) else x.dtype
    if not (np.issubdtype(dt, np.floating) or np.issubdtype(dt, np.integer)):
        raise ArgumentError(arg, f"{name(arg)} must be a real array, got dtype {dt}")


#: Tolerance of :func:`check_psd`, relative to the largest entry (at least 1): rounding of
#: G = M^T M in float32 stays far below it; a matrix that is not a Gram matrix does not.
PSD_RTOL = 1e-5


def check_psd(arg: str, x) -> None:
    """Checks a concrete (..., d, d) stack is symmetric and positive semi-definite, within
    ``PSD_RTOL`` x max(1, max |entry|) (asymmetry and most negative eigenvalue)."""
    if not is_concrete(x):
        return
    a = np.asarray(x, np.float64)
    scale = max(1.0, float(np.abs(a).max(initial=0.0)))
    asym = float(np.abs(a - np.swapaxes(a, -1, -2)).max(initial=0.0))
    if asym > PSD_RTOL * scale:
        raise ArgumentError(arg, f"{name(arg)} must be symmetric (Gram matrices M^T M); largest |G - G^T| entry is "
                                 f"{asym:.3g}")
    eig = np.linalg.eigvalsh(0.5 * (a + np.swapaxes(a, -1, -2)))  # (..., d)
    low = float(eig.min(initial=0.0))
    if low < -PSD_RTOL * scale:
        idx = np.unravel_index(np.argmin(eig.min(-1)), a.shape[:-2]) if a.ndim > 2 else ()
        where = f" (at index {tuple(int(i) for i in idx)})" if idx else ""
        raise ArgumentError(arg, f"{name(arg)} must be positive semi-definite (Gram matrices M^T M); smallest "
                                 f"eigenvalue {low:.3g}{where}")
