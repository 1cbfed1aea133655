"""Matrix games min_mu max_omega mu A omega over two simplices, with exact certificates.

For any pair (mu, omega), ``max_g (mu A)_g`` is mu's exact objective and ``min_pi (A omega)_pi``
a valid lower bound on the game's value (weak duality); every solver keeps the best of each,
so the returned gap is certified whatever the iteration did. Two solvers take these games
(the finite offset DEC, :class:`e2d_jax.dec.finite.FiniteOffset`):

* :class:`~e2d_jax.dec.solvers.MatrixGameIPM`: the primal-dual interior-point method here, on
  von Neumann's LP form of the game (:func:`ipm_start`, :func:`ipm_step`), one K x K Cholesky
  per iteration, 10-25 iterations to 1e-8 relative in float64; far faster per game than
  mirror-prox, which needs hundreds to thousands of iterations (O(1/T))
  (``benchmarks/finite_throughput.py``; docs: Performance).
* :class:`~e2d_jax.dec.solvers.Saddle`: the optimistic mirror-prox of ``e2d_jax.dec.saddle``
  on the game's gradients and certificate (:func:`game_form`; warm-startable).

The interior-point method, with B = (A - lo) / (max A - lo) + 1, lo = max_g min_pi A <= val(A)
(entries <= 2, val(B) >= 1, same optimal strategies, value mapped affinely): von Neumann's
reduction of a positive game gives the LP pair

    max 1.x  s.t.  B^T x + w = 1_M,  x, w >= 0      (min player, mu = x / 1.x)
    min 1.y  s.t.  B y - z = 1_K,    y, z >= 0      (max player, omega = y / 1.y)

with optimal values 1 / val(B). The start x = 1/(4K), y = 1 is primal feasible. Each Newton
step (Mehrotra predictor-corrector) solves one K x K positive-definite system
(B E B^T + Z X^{-1}) dx = rhs, E = Y W^{-1}, twice (predictor and corrector), so an iteration
costs O(K^2 M); about 15-25 iterations reach 1e-10 in float64 whatever the game. The
certificate does not rely on the method: every iteration the normalised strategies are
evaluated exactly and the best of each bound is kept. The certified loop
(:mod:`e2d_jax.dec.loop`) stops at the tolerance, at the budget, or after four non-finite
Newton steps in a row (possible in float32 near the optimum, where E becomes
ill-conditioned; the best certified pair so far is returned).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from e2d_jax import _linalg


def game_form(a):
    """grads / certificate of the bilinear game min_mu max_omega mu A omega."""

    def grads(mu, omega):
        return a @ omega, mu @ a

    def certificate(mu, omega):
        return jnp.max(mu @ a), jnp.min(a @ omega)

    return grads, certificate


class IPMState(NamedTuple):
    """The interior-point method's iterate and the best certificate so far."""

    x: jax.Array  # (K,) primal variables (the min player, unnormalised)
    w: jax.Array  # (M,) primal slacks
    y: jax.Array  # (M,) dual variables (the max player, unnormalised)
    z: jax.Array  # (K,) dual slacks
    best_mu: jax.Array  # (K,)
    best_omega: jax.Array  # (M,)
    upper: jax.Array  # ()
    lower: jax.Array  # ()
    iter_num: jax.Array  # () int32
    ridge: jax.Array  # () relative ridge added to the Newton matrix (0 until a step fails)
    failures: jax.Array  # () int32 consecutive failed Newton steps


def _max_step(v, dv):
    """Largest alpha in (0, 1] with v + alpha dv >= 0 (v > 0)."""
    ratio = jnp.where(dv < 0, -v / jnp.where(dv < 0, dv, -1.0), jnp.inf)
    return jnp.minimum(1.0, jnp.min(ratio))


def ipm_scaled(a):
    """B = (A - lo) / spread + 1 (see the module docstring; entries <= 2, val(B) >= 1)."""
    dtype = a.dtype
    # Shift by the max player's pure security level lo = max_g min_pi A <= val(A), not by
    # min A: val(B) >= 1 > 0 is all the reduction needs, and entries far below the value
    # (large lam times a large divergence) no longer squeeze the relevant ones into a few
    # float32 ulps.
    lo, hi = jnp.max(jnp.min(a, axis=0)), jnp.max(a)
    spread = jnp.maximum(hi - lo, jnp.finfo(dtype).tiny ** 0.5)
    return (a - lo) / spread + 1.0


def _ipm_certify(a, x, y):
    mu = x / jnp.sum(x)
    om = y / jnp.sum(y)
    return mu, om, jnp.max(mu @ a), jnp.min(a @ om)


def ipm_start(a, b) -> IPMState:
    k, m = a.shape
    dtype = a.dtype
    # Entries of B lie in (-inf, 2]: x0 = 1/(4K) keeps 1 - B^T x0 >= 1/2; the dual slack is
    # floored at 1 where B y0 - 1 is not positive (an infeasible start, which the residuals rd
    # of the Newton steps remove).
    x0 = jnp.full((k,), 0.25 / k, dtype)
    y0 = jnp.ones((m,), dtype)
    mu0, om0, up0, low0 = _ipm_certify(a, x0, y0)
    return IPMState(x=x0, w=1.0 - b.T @ x0, y=y0, z=jnp.maximum(b @ y0 - 1.0, 1.0), best_mu=mu0, best_omega=om0,
                     upper=up0, lower=low0, iter_num=jnp.zeros((), jnp.int32),
                     ridge=jnp.zeros((), dtype), failures=jnp.zeros((), jnp.int32))


#: Largest K (the min player's actions) for which the interior-point step uses its two
#: small-K forms, each faster there and slower at K = 10 (docs: Design notes):
#: * B E B^T from the precomputed outer products of B's columns, one (K^2, M) matrix-vector
#:   product a step, instead of a (K, M) x (M, K) product (which XLA:CPU hands to a library
#:   kernel with a high per-call cost for small batched matrices);
#: * the Cholesky factor and its solves by each pivot's reciprocal (``_linalg``'s
#:   ``reciprocal=True``).
#: The outer products are also capped by their size, K^2 M <= OUTER_MAX.
SMALL_ACTIONS = 5
OUTER_MAX = 1 << 16


def ipm_outer(b):
    """B's column outer products as a (K^2, M) matrix, or None (K above SMALL_ACTIONS, or
    K^2 M above OUTER_MAX)."""
    k, m = b.shape
    if k > SMALL_ACTIONS or k * k * m > OUTER_MAX:
        return None
    return (b[:, None, :] * b[None, :, :]).reshape(k * k, m)


def ipm_step(a, b, st: IPMState, outer=None) -> IPMState:
    """One predictor-corrector iteration and its certificate (``outer``: :func:`ipm_outer` of
    ``b``, or None)."""
    k, m = a.shape
    dtype = a.dtype
    n_comp = k + m
    recip = k <= SMALL_ACTIONS

    def factor(st):
        e = st.y / st.w
        # B E B^T = sum_m e_m b_m b_m^T (exactly symmetric).
        bebt = (b * e) @ b.T if outer is None else (outer @ e).reshape(k, k)
        mat = bebt + jnp.diag(st.z / st.x)
        mat = mat + st.ridge * jnp.max(jnp.diagonal(mat)) * jnp.eye(k, dtype=dtype)
        return e, mat, _linalg.psd_cholesky(mat, reciprocal=recip)

    def newton(st, fac, rp, rd, r_xz, r_yw):
        e, mat, low = fac
        rhs = rd + b @ (e * rp - r_yw / st.w) + r_xz / st.x
        dx = _linalg.cholesky_solve(low, rhs, reciprocal=recip)
        # One step of iterative refinement: recovers most of the accuracy the ill-conditioned
        # normal matrix costs near the optimum (float32 especially).
        dx = dx + _linalg.cholesky_solve(low, rhs - mat @ dx, reciprocal=recip)
        dw = rp - b.T @ dx
        dy = (r_yw - st.y * dw) / st.w
        dz = (r_xz - st.z * dx) / st.x
        return dx, dw, dy, dz

    rp = 1.0 - b.T @ st.x - st.w
    rd = 1.0 - b @ st.y + st.z
    mu_c = (st.x @ st.z + st.y @ st.w) / n_comp
    # Predictor (affine scaling).
    fac = factor(st)
    dx, dw, dy, dz = newton(st, fac, rp, rd, -st.x * st.z, -st.y * st.w)
    ap = jnp.minimum(_max_step(st.x, dx), _max_step(st.w, dw))
    ad = jnp.minimum(_max_step(st.y, dy), _max_step(st.z, dz))
    mu_aff = ((st.x + ap * dx) @ (st.z + ad * dz) + (st.y + ad * dy) @ (st.w + ap * dw)) / n_comp
    sigma = jnp.clip(mu_aff / mu_c, 0.0, 1.0) ** 3
    # Corrector with centring.
    r_xz = sigma * mu_c - st.x * st.z - dx * dz
    r_yw = sigma * mu_c - st.y * st.w - dy * dw
    dx, dw, dy, dz = newton(st, fac, rp, rd, r_xz, r_yw)
    ap = 0.99 * jnp.minimum(_max_step(st.x, dx), _max_step(st.w, dw))
    ad = 0.99 * jnp.minimum(_max_step(st.y, dy), _max_step(st.z, dz))
    new = (st.x + ap * dx, st.w + ap * dw, st.y + ad * dy, st.z + ad * dz)
    ok = jnp.all(jnp.stack([jnp.all(jnp.isfinite(v) & (v > 0)) for v in new]))
    x, w, y, z = (jnp.where(ok, v, old) for v, old in zip(new, (st.x, st.w, st.y, st.z)))
    mu, om, up, low = _ipm_certify(a, x, y)
    better = ok & (up < st.upper)
    return IPMState(
        x=x, w=w, y=y, z=z,
        best_mu=jnp.where(better, mu, st.best_mu),
        best_omega=jnp.where(ok & (low > st.lower), om, st.best_omega),
        upper=jnp.where(better, up, st.upper),
        lower=jnp.where(ok, jnp.maximum(st.lower, low), st.lower),
        iter_num=st.iter_num + 1,
        # A failed step (a non-finite factorisation near the optimum, mostly in float32)
        # is retried with a relative ridge 100x larger, starting at 10 ulps.
        ridge=jnp.where(ok, st.ridge, jnp.maximum(100.0 * st.ridge, 10.0 * jnp.finfo(dtype).eps)),
        failures=jnp.where(ok, 0, st.failures + 1),
    )


