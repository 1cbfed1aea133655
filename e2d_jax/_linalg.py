"""Small linear algebra shared by the solvers: positive-definite solves fast under ``vmap``,
and the one numerical-rank rule of the library.

XLA on CPU runs a batched LAPACK call once per matrix, which for the 3x3 systems of the
paper's Experiment 1 costs more than the arithmetic; a Cholesky factorisation unrolled in
Python over the (static) dimension turns into a few dozen elementwise operations across the
whole batch. With ``reciprocal=True`` each pivot is inverted once and the other entries are
multiplied by its reciprocal: XLA does not duplicate a division into several consumers, so
every division is a fusion (a kernel launch) of its own, and with reciprocals the graph
fuses into fewer kernels. Which form is faster depends on the size, so the interior-point
step uses reciprocals for K <= ``matrix_game.SMALL_ACTIONS`` and the linear solves
(``psd_solve``) and TS keep the division (docs: Design notes). The answers differ from
division's by an ulp or so. The unrolled graph grows with d^3: above ``UNROLL_MAX_DIM`` the
library call (``jax.scipy.linalg.cho_solve``) is used everywhere, and on CPU already above
``CPU_SOLVE_UNROLL_MAX_DIM`` for :func:`psd_solve`, whose d x d systems with d right-hand
sides (the linear DEC's ``V(mu)^{-1} Phi^T``) LAPACK solves faster than the unrolled graph
from d = 8 on, and compiles to a far smaller program (docs: Performance).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

UNROLL_MAX_DIM = 12
#: Largest d whose :func:`psd_solve` is unrolled on CPU (other platforms: ``UNROLL_MAX_DIM``).
CPU_SOLVE_UNROLL_MAX_DIM = 6

#: jaxlib's CPU LAPACK kernels (the Cholesky factorisation and the triangular solves) split a
#: batch of about this many multiply-adds or more over XLA's intra-op thread pool and block the
#: pool thread that called them until the pieces finish, so two such calls that XLA runs at
#: once (independent operations of one program, or the programs of two host devices) can hold
#: every pool thread and never finish; a smaller batch runs in its calling thread. Every
#: LAPACK call of the library on CPU is cut into batches below it (:func:`lapack_call`).
LAPACK_INLINE_WORK = 200_000

#: Relative tolerance of :func:`numerical_rank`, in units of the dtype's machine epsilon
#: times the matrix size: eigenvalues below ``RANK_RTOL_ULPS * n * eps * max eigenvalue``
#: count as zero (rounding noise of a sum of n x n Gram matrices).
RANK_RTOL_ULPS = 100.0


def rank_tolerance(max_eigenvalue, n: int, dtype):
    """The threshold below which an eigenvalue of a symmetric PSD n x n matrix is zero."""
    return max_eigenvalue * n * np.finfo(dtype).eps * RANK_RTOL_ULPS


def numerical_rank(matrix) -> int:
    """Rank of a concrete symmetric PSD matrix under :func:`rank_tolerance` (at least 1).

    Used wherever a rank fixes a static shape (the observable span), so it is decided in
    Python on concrete values, in float64, with the tolerance of the input's dtype.
    """
    arr = np.asarray(matrix)
    ev = np.linalg.eigvalsh(arr.astype(np.float64))
    dtype = arr.dtype if np.issubdtype(arr.dtype, np.floating) else np.float64
    tol = rank_tolerance(max(float(ev.max()), 0.0), arr.shape[-1], dtype)
    return max(1, int(np.sum(ev > tol)))


def lapack_work(*shapes) -> int:
    """A bound on a LAPACK call's multiply-adds per matrix of its batch: the largest
    m n max(m, n) over its operands' trailing (m, n)."""
    return max(m * n * max(m, n) for *_, m, n in shapes)


def _in_inline_batches(fn, *args):
    """``fn(*args)`` for operands with one leading batch axis, run on pieces of the batch small
    enough that each LAPACK call of ``fn`` runs in its calling thread (a ``lax.map`` over the
    pieces; the last piece padded with copies of the first matrix). ``fn`` may return a tuple."""
    n = args[0].shape[0]
    piece = max(1, (LAPACK_INLINE_WORK - 1) // lapack_work(*(a.shape for a in args)))
    if n <= piece:
        return fn(*args)
    steps = -(-n // piece)
    pad = steps * piece - n
    if pad:
        args = [jnp.concatenate([a, jnp.broadcast_to(a[:1], (pad,) + a.shape[1:])]) for a in args]
    out = lax.map(lambda xs: fn(*xs), tuple(a.reshape((steps, piece) + a.shape[1:]) for a in args))
    return jax.tree_util.tree_map(lambda o: o.reshape((steps * piece,) + o.shape[2:])[:n], out)


def lapack_call(fn):
    """``fn`` (operands (..., m, n) with matching leading axes; an array or a tuple of arrays
    out, each with those leading axes) with its LAPACK calls kept below
    :data:`LAPACK_INLINE_WORK` on CPU: every batch axis, those of ``vmap`` included, is
    flattened into one and run in pieces (:func:`_in_inline_batches`). Other platforms call
    ``fn`` as it is. Derivatives (forward and reverse) are those of ``fn``."""

    @jax.custom_batching.custom_vmap
    def pieces(*args):
        batch = jnp.broadcast_shapes(*(a.shape[:-2] for a in args))
        flat = [jnp.broadcast_to(a, batch + a.shape[-2:]).reshape((-1,) + a.shape[-2:]) for a in args]
        out = _in_inline_batches(fn, *flat)
        return jax.tree_util.tree_map(lambda o: o.reshape(batch + o.shape[1:]), out)

    @pieces.def_vmap
    def _batched(axis_size, in_batched, *args):
        # The new axis joins the operands' own batch axes; the next vmap (if any) comes back here.
        args = [a if batched else jnp.broadcast_to(a, (axis_size,) + a.shape) for a, batched in zip(args, in_batched)]
        out = pieces(*args)
        return out, jax.tree_util.tree_map(lambda _: True, out)

    @jax.custom_jvp
    def call(*args):
        return lax.platform_dependent(*args, cpu=pieces, default=fn)

    @call.defjvp
    def _jvp(primals, tangents):
        # Derivatives go through ``fn`` itself (a batching rule of its own is all ``pieces``
        # adds), so ``call`` differentiates as ``fn`` does, in either mode.
        return call(*primals), jax.jvp(fn, primals, tangents)[1]

    return call


def _pivot_floor(v):
    """Smallest pivot allowed: eps * d * (largest diagonal entry), see ``psd_solve``."""
    d = v.shape[-1]
    if d > UNROLL_MAX_DIM:
        # The same maximum; d slices stacked here would be fused into the consumer, once per
        # entry of the (d, d) matrix it is added to.
        diag = jnp.max(jnp.diagonal(v, axis1=-2, axis2=-1), axis=-1)
    else:
        diag = jnp.max(jnp.stack([v[..., i, i] for i in range(d)], -1), axis=-1)
    return jnp.finfo(v.dtype).eps * d * diag


def _cholesky_entries(v, reciprocal=False):
    """Lower Cholesky factor of ``v`` (..., d, d) as a nested list of (...,) arrays
    (``reciprocal``: multiply by each pivot's reciprocal instead of dividing, see above)."""
    d = v.shape[-1]
    floor = _pivot_floor(v)
    low = [[None] * d for _ in range(d)]
    for j in range(d):
        s = v[..., j, j]
        for k in range(j):
            s = s - low[j][k] * low[j][k]
        low[j][j] = jnp.sqrt(jnp.maximum(s, floor))
        rj = 1.0 / low[j][j] if reciprocal else None
        for i in range(j + 1, d):
            s = v[..., i, j]
            for k in range(j):
                s = s - low[i][k] * low[j][k]
            low[i][j] = s * rj if reciprocal else s / low[j][j]
    return low


def _substitute(low, rhs, reciprocal=False):
    """Solves (L L^T) x = rhs with L given entry-wise (nested list), rhs (..., d, k)."""
    d = len(low)
    if reciprocal:
        r = [1.0 / low[i][i][..., None] for i in range(d)]
        div = lambda s, i: s * r[i]
    else:
        div = lambda s, i: s / low[i][i][..., None]
    y = [None] * d
    for i in range(d):
        s = rhs[..., i, :]
        for k in range(i):
            s = s - low[i][k][..., None] * y[k]
        y[i] = div(s, i)
    x = [None] * d
    for i in reversed(range(d)):
        s = y[i]
        for k in range(i + 1, d):
            s = s - low[k][i][..., None] * x[k]
        x[i] = div(s, i)
    return jnp.stack(x, axis=-2)


def psd_solve(v: jax.Array, rhs: jax.Array) -> jax.Array:
    """Solves ``v x = rhs`` for symmetric positive-definite ``v``.

    Args:
      v: (..., d, d) symmetric positive definite.
      rhs: (..., d, k).

    Returns:
      (..., d, k) the solution.

    Numerically singular matrices: a pivot below eps * d * max_i v_ii (rounding noise; the
    matrix is singular to working precision) is raised to that floor, so the solve stays
    finite (very large along the near-null direction) instead of returning NaN. This only
    acts where the exact answer is beyond the precision of the dtype anyway. Where LAPACK
    factorises (d above ``CPU_SOLVE_UNROLL_MAX_DIM`` on CPU, above ``UNROLL_MAX_DIM``
    elsewhere) the same floor is applied as a diagonal shift before the factorisation.
    """
    d = v.shape[-1]
    if d > UNROLL_MAX_DIM:
        return _library_solve(v, rhs)
    if d <= CPU_SOLVE_UNROLL_MAX_DIM:
        return _unrolled_solve(v, rhs)
    # Chosen when the program is lowered for its platform: the compiled program holds one.
    return jax.lax.platform_dependent(v, rhs, cpu=_library_solve, default=_unrolled_solve)


#: Fewest right-hand sides :func:`psd_solve_wide` multiplies by the inverse for (below, the
#: solve is as fast and rounds as :func:`psd_solve` does).
WIDE_MIN_RHS = 32


def psd_solve_wide(v: jax.Array, rhs: jax.Array) -> jax.Array:
    """:func:`psd_solve` for many right-hand sides, (..., d, k) with k > ``WIDE_MIN_RHS`` and
    k > d: ``v``'s inverse from :func:`psd_solve` against the identity (d right-hand sides, the
    same pivot floor), then one matrix product. A triangular solve with k right-hand sides runs column by column on CPU;
    the product is one GEMM, several times faster from k = 100 on (docs: Design notes). The
    forward error is of the same order as the solve's (kappa(v) eps)."""
    d, k = v.shape[-1], rhs.shape[-1]
    if k <= max(d, WIDE_MIN_RHS):
        return psd_solve(v, rhs)
    return psd_solve(v, jnp.broadcast_to(jnp.eye(d, dtype=v.dtype), v.shape)) @ rhs


def _unrolled_solve(v, rhs):
    return _substitute(_cholesky_entries(v), rhs)


def _lapack_cholesky(v):
    """LAPACK's Cholesky factorisation after the pivot floor as a diagonal shift."""
    return jnp.linalg.cholesky(v + _pivot_floor(v)[..., None, None] * jnp.eye(v.shape[-1], dtype=v.dtype))


def _lapack_cho_solve(low, rhs):
    return jax.scipy.linalg.cho_solve((low, True), rhs)


def _lapack_solve(v, rhs):
    return _lapack_cho_solve(_lapack_cholesky(v), rhs)


def _lapack_lu_factor(a):
    return jax.scipy.linalg.lu_factor(a)


def _lapack_lu_solve(lu, piv, b):
    return jax.scipy.linalg.lu_solve((lu, piv[..., 0]), b)


#: The LAPACK forms as the library calls them (in batches below ``LAPACK_INLINE_WORK`` on CPU).
_library_solve = lapack_call(_lapack_solve)
_library_cholesky = lapack_call(_lapack_cholesky)
_library_cho_solve = lapack_call(_lapack_cho_solve)
_library_lu_factor = lapack_call(_lapack_lu_factor)
_library_lu_solve = lapack_call(_lapack_lu_solve)


def lu_factor(a: jax.Array):
    """LU factorisation with partial pivoting of a square ``a`` (..., p, p), as
    ``jax.scipy.linalg.lu_factor`` computes it, in batches below ``LAPACK_INLINE_WORK`` on CPU
    (:func:`lapack_call`): the factors and the pivots (..., p, 1) for :func:`lu_solve`."""
    lu, piv = _library_lu_factor(a)
    return lu, piv[..., None]


def lu_solve(factors, b: jax.Array) -> jax.Array:
    """The solution of ``a x = b`` from :func:`lu_factor`'s ``factors`` of ``a`` (..., p, p), for
    one right-hand side ``b`` (..., p) or several (..., p, k) (as ``jax.scipy.linalg.lu_solve``,
    in batches below ``LAPACK_INLINE_WORK`` on CPU)."""
    lu, piv = factors
    if b.ndim == lu.ndim:
        return _library_lu_solve(lu, piv, b)
    return _library_lu_solve(lu, piv, b[..., None])[..., 0]


def psd_cholesky(v: jax.Array, reciprocal: bool = False, library: bool = False) -> jax.Array:
    """Lower Cholesky factor (..., d, d) of a symmetric positive-definite matrix
    (``reciprocal``: see the module docstring; ``library``: the library call whatever d, a
    far smaller program for a factorisation that runs once a round)."""
    d = v.shape[-1]
    if library or d > UNROLL_MAX_DIM:
        return _library_cholesky(v)
    low = _cholesky_entries(v, reciprocal)
    zero = jnp.zeros_like(v[..., 0, 0])
    rows = [jnp.stack([low[i][j] if j <= i else zero for j in range(d)], -1) for i in range(d)]
    return jnp.stack(rows, axis=-2)


def cholesky_solve(low: jax.Array, rhs: jax.Array, reciprocal: bool = False, library: bool = False) -> jax.Array:
    """Solves ``(L L^T) x = rhs`` for a lower factor ``low`` (d, d) from :func:`psd_cholesky`.

    ``rhs`` is (d,) or (d, k); unrolled over d like :func:`psd_solve` (LAPACK above
    ``UNROLL_MAX_DIM``, or where ``library``).
    """
    d = low.shape[-1]
    vector = rhs.ndim == low.ndim - 1
    rhs2 = rhs[..., None] if vector else rhs
    if library or d > UNROLL_MAX_DIM:
        x = _library_cho_solve(low, rhs2)
    else:
        x = _substitute([[low[..., i, j] for j in range(d)] for i in range(d)], rhs2, reciprocal)
    return x[..., 0] if vector else x
