"""Argument checks raised in Python before tracing.

Every message names the argument, what was expected and what was received. Values that are
traced (inside ``jit``/``vmap``) cannot be checked here; they are left to the solvers' status
codes.
"""
from __future__ import annotations

import numbers

import jax
import numpy as np


def is_concrete(x) -> bool:
    """True when ``x`` holds a value in Python (not a tracer inside jit/vmap)."""
    return not isinstance(x, jax.core.Tracer)


def check_int(name: str, value, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_positive(name: str, value, *, allow_zero: bool = False):
    """Checks a scalar is > 0 (>= 0 with ``allow_zero``) when it is concrete."""
    if not is_concrete(value):
        return value
    arr = np.asarray(value)
    if arr.shape != ():
        raise ValueError(f"{name} must be a scalar, got an array of shape {arr.shape}")
    v = float(arr)
    ok = (v >= 0) if allow_zero else (v > 0)
    if not np.isfinite(v) or not ok:
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {v}")
    return value


def check_shape(name: str, x, shape: tuple, *, what: str = "") -> None:
    """Checks ``x.shape`` against ``shape`` where ``None`` matches any size."""
    got = tuple(np.shape(x))
    if len(got) != len(shape) or any(s is not None and s != g for s, g in zip(shape, got)):
        want = "(" + ", ".join("?" if s is None else str(s) for s in shape) + ")"
        extra = f" ({what})" if what else ""
        raise ValueError(f"{name} must have shape {want}{extra}, got {got}")


def check_finite(name: str, x) -> None:
    if is_concrete(x) and not np.all(np.isfinite(np.asarray(x))):
        raise ValueError(f"{name} must contain only finite values")


def check_floating(name: str, x) -> None:
    dt = np.asarray(x).dtype if is_concrete(x) else x.dtype
    if not (np.issubdtype(dt, np.floating) or np.issubdtype(dt, np.integer)):
        raise ValueError(f"{name} must be a real array, got dtype {dt}")


#: Tolerance of :func:`check_psd`, relative to the largest entry (at least 1): rounding of
#: G = M^T M in float32 stays far below it; a matrix that is not a Gram matrix does not.
PSD_RTOL = 1e-5


def check_psd(name: str, x) -> None:
    """Checks a concrete (..., d, d) stack is symmetric and positive semi-definite, within
    ``PSD_RTOL`` x max(1, max |entry|) (asymmetry and most negative eigenvalue)."""
    if not is_concrete(x):
        return
    a = np.asarray(x, np.float64)
    scale = max(1.0, float(np.abs(a).max(initial=0.0)))
    asym = float(np.abs(a - np.swapaxes(a, -1, -2)).max(initial=0.0))
    if asym > PSD_RTOL * scale:
        raise ValueError(f"{name} must be symmetric (Gram matrices M^T M); largest |G - G^T| entry is {asym:.3g}")
    eig = np.linalg.eigvalsh(0.5 * (a + np.swapaxes(a, -1, -2)))  # (..., d)
    low = float(eig.min(initial=0.0))
    if low < -PSD_RTOL * scale:
        idx = np.unravel_index(np.argmin(eig.min(-1)), a.shape[:-2]) if a.ndim > 2 else ()
        where = f" (at index {tuple(int(i) for i in idx)})" if idx else ""
        raise ValueError(f"{name} must be positive semi-definite (Gram matrices M^T M); smallest eigenvalue "
                         f"{low:.3g}{where}")


def config_key(name: str, **kwargs):
    """A hashable description of an agent's configuration (``Agent.config``), or None when a
    value is traced or cannot be hashed (then no two agents are taken for the same).

    Numbers and 0-d arrays are keyed by their value, solver configurations (frozen
    dataclasses) and strings as they are, callables by identity.
    """
    items = []
    for key, value in sorted(kwargs.items()):
        if isinstance(value, jax.core.Tracer):
            return None
        if isinstance(value, (np.ndarray, jax.Array)):
            if np.ndim(value) != 0:
                return None
            value = float(np.asarray(value))
        try:
            hash(value)
        except TypeError:
            return None
        items.append((key, value))
    return (name, tuple(items))
