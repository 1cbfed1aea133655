"""(Projected) regularised least squares, paper eq. (ridge), Appendix 'Bounding the
Estimation Error of Projected Regularized Least-Squares'.

    V_t   = V_0 + sum_{s<t} M_{pi_s}^T M_{pi_s},          V_0 = reg * I_d
    b_t   = sum_{s<t} M_{pi_s}^T y_s
    f_hat = Proj_{V_t}(V_t^{-1} b_t)                      (projection optional)

The state keeps V_t^{-1} and updates it with one Sherman-Morrison step per observation row,
so a round costs O(m d^2) (O(d^2) per row) instead of an O(d^3) re-solve. Padded (zero)
observation rows are exact no-ops of that update. ``log det V_t / det V_0`` is kept the same
way (matrix determinant lemma) for the confidence width of Abbasi-Yadkori et al. (2011,
Theorem 2) that UCB and IDS use (:func:`confidence_width`, :func:`anytime_log_inv_delta`).

Observation maps with many rows (more than ``BLOCK_MIN_ROWS`` and more than d: a revealing
action observes all K actions' rewards, so its map, and every action's padded one, has K rows)
are added as one block instead: with V^{-1} = C C^T (Cholesky) and A = M^T M,
(V + A)^{-1} = C (I + C^T A C)^{-1} C^T and log det(V + A) - log det V = log det(I + C^T A C),
one GEMM over the rows and O(d^3) besides, where the row-by-row steps would be a loop of m
dependent steps (m = K trips a round).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from e2d_jax import _linalg

#: Observation maps with more rows than this (and than d) are added as one block.
BLOCK_MIN_ROWS = 32

class RidgeState(NamedTuple):
    v_inv: jax.Array  # (d, d) float, V_t^{-1}
    b: jax.Array  # (d,) float, sum of M^T y
    f_hat: jax.Array  # (d,) float, the (projected) estimate
    logdet: jax.Array  # () float, log det V_t - log det V_0
    count: jax.Array  # () int32, rounds seen


def init(d: int, *, reg: float = 1.0, dtype=jnp.float32) -> RidgeState:
    """Empty statistics, V_0 = reg * I_d (reg > 0)."""
    return RidgeState(
        v_inv=jnp.eye(d, dtype=dtype) / reg,
        b=jnp.zeros((d,), dtype),
        f_hat=jnp.zeros((d,), dtype),
        logdet=jnp.zeros((), dtype),
        count=jnp.zeros((), jnp.int32),
    )


def _rank_one(carry, row):
    v_inv, logdet = carry
    u = v_inv @ row
    denom = 1.0 + row @ u
    v_inv = v_inv - jnp.outer(u, u) / denom
    # Keep the matrix exactly symmetric so float32 rounding cannot drift it apart.
    v_inv = 0.5 * (v_inv + v_inv.T)
    return (v_inv, logdet + jnp.log(denom)), None


def _add_block(v_inv, logdet, rows):
    d = v_inv.shape[-1]
    c = _linalg.psd_cholesky(v_inv, library=True)
    g = rows @ c  # (m, d): M C
    inner = jnp.eye(d, dtype=v_inv.dtype) + g.T @ g  # I + C^T A C, eigenvalues >= 1
    low = _linalg.psd_cholesky(inner, library=True)
    half = _linalg.cholesky_solve(low, c.T, library=True)  # (I + C^T A C)^{-1} C^T
    v_inv = c @ half
    v_inv = 0.5 * (v_inv + v_inv.T)
    return v_inv, logdet + 2.0 * jnp.sum(jnp.log(jnp.diagonal(low)))


def add_rows(v_inv, logdet, rows):
    """V^{-1} and log det V after adding ``rows`` (m, d) to V (V <- V + rows^T rows): one
    Sherman-Morrison step and one determinant-lemma step per row, O(m d^2), or one block
    update for many rows (see the module docstring); zero rows are exact no-ops."""
    m, d = rows.shape[-2:]
    if m > max(BLOCK_MIN_ROWS, d):
        return _add_block(v_inv, logdet, rows)
    (v_inv, logdet), _ = lax.scan(_rank_one, (v_inv, logdet), rows)
    return v_inv, logdet


def update(state: RidgeState, obs_matrix: jax.Array, obs: jax.Array, *, radius=None) -> RidgeState:
    """Adds one round's data.

    Args:
      state: current statistics.
      obs_matrix: (m, d) M_pi of the action played (zero rows for padding).
      obs: (m,) the observation (0 in padded entries).
      radius: optional bound S; the estimate is projected onto {||f|| <= S} in the V_t norm.

    Returns:
      The updated state (O(m d^2) work).
    """
    v_inv, logdet = add_rows(state.v_inv, state.logdet, obs_matrix)
    b = state.b + obs_matrix.T @ obs
    f_hat = v_inv @ b
    if radius is not None:
        f_hat = project_ball(f_hat, v_inv, radius)
    return RidgeState(v_inv=v_inv, b=b, f_hat=f_hat, logdet=logdet, count=state.count + 1)


def project_ball(f, v_inv, radius, *, iters: int = 60):
    """argmin_{||g|| <= radius} ||g - f||_{V} with V = v_inv^{-1}  (O(d^3), eigh + bisection).

    The minimiser is g(nu) = (V + nu I)^{-1} V f for the nu >= 0 with ||g(nu)|| = radius.
    In the eigenbasis of V^{-1} (eigenvalues s_i), g_i = z_i / (1 + nu s_i).
    """
    s, q = jnp.linalg.eigh(v_inv)
    z = q.T @ f
    norm2 = lambda nu: jnp.sum((z / (1.0 + nu * s)) ** 2)
    inside = norm2(0.0) <= radius**2
    # ||g(nu)|| <= ||z|| / (1 + nu s_min), so nu_hi = ||z|| / (radius s_min) suffices.
    hi = jnp.sqrt(jnp.sum(z**2)) / (radius * jnp.min(s))

    def body(_, lohi):
        lo, hi = lohi
        mid = 0.5 * (lo + hi)
        big = norm2(mid) > radius**2
        return jnp.where(big, mid, lo), jnp.where(big, hi, mid)

    _, nu = lax.fori_loop(0, iters, body, (jnp.zeros_like(hi), hi))
    g = q @ (z / (1.0 + nu * s))
    return jnp.where(inside, f, g)


def widths(state: RidgeState, features: jax.Array) -> jax.Array:
    """(K,) ||phi_pi||_{V_t^{-1}}."""
    return jnp.sqrt(jnp.maximum(jnp.einsum("ki,ij,kj->k", features, state.v_inv, features), 0.0))


def confidence_width(state: RidgeState, sigma, bound, log_inv_delta, *, reg=1.0) -> jax.Array:
    """beta_t^{1/2} = sigma sqrt(2 log(1/delta) + log det V_t / det V_0) + reg^{1/2} S.

    The radius of the self-normalised confidence ellipsoid {f : ||f - f_hat_t||_{V_t} <=
    beta_t^{1/2}}, which holds for all t with probability 1 - delta when every observation row
    is sigma-sub-Gaussian, V_0 = reg I and ||f*|| <= S.

    Args:
      state: the ridge statistics (``state.logdet`` is log det V_t / det V_0).
      sigma: the noise level.
      bound: S, the bound on ||f*||.
      log_inv_delta: log(1/delta), () (a fixed level, or :func:`anytime_log_inv_delta`).
      reg: the regulariser of V_0 = reg I.

    Returns:
      () beta_t^{1/2}.

    References:
      Abbasi-Yadkori, Pal and Szepesvari (2011), Improved algorithms for linear stochastic
      bandits, Theorem 2.
    """
    return sigma * jnp.sqrt(2.0 * log_inv_delta + state.logdet) + jnp.sqrt(reg) * bound


def anytime_log_inv_delta(rows_seen, dtype=jnp.float32) -> jax.Array:
    """log(1/delta_s) for the anytime level delta_s = 1 / (s log s), s = max(2, 1 + rows_seen).

    ``rows_seen`` counts the scalar observations received so far, every row of the observation
    maps of the actions played (zero rows of a padded map included): after t rounds with
    (K, m, d) observation maps it is m t. This is the level of the authors' code
    (kirschnj/pm-ids, branch e2d, ``RegularizedLeastSquares.beta`` with no fixed ``delta``):
    its counter s starts at 1 and grows by the length of each observation vector, the level is
    taken at max(s, 2), and the log is natural. With delta_s = 1 / (s log s),
    log(1/delta_s) = log s + log log s, computed in that form.

    Args:
      rows_seen: () int, scalar observations received so far (traceable).
      dtype: the float dtype of the result.

    Returns:
      () log(1/delta_s) = log s + log log s (> 0: at s = 2 it is log(2 log 2) = 0.33).
    """
    s = jnp.maximum(2.0, 1.0 + jnp.asarray(rows_seen).astype(dtype))
    return jnp.log(s) + jnp.log(jnp.log(s))
