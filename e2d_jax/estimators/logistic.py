"""Regularised logistic maximum likelihood for Bernoulli (Bradley-Terry) observations.

Observations are y in {0, 1} with P(y = 1) = sigma(m^T f*), one per real row m of the played
action's observation map (:mod:`e2d_jax.envs.preference`). The estimate is

    f_hat_t = argmin_f  L_t(f),   L_t(f) = sum_{s<t} sum_i [log(1 + e^{z_si}) - y_si z_si]
                                           + (reg / 2) ||f||^2,   z_si = (M_{pi_s} f)_i,

which is strictly convex. Since the actions form a finite set, L_t depends on the history only
through the plays n_pi and the outcome sums w_pi of each action (K counts, K x m sums): the
state keeps those, so a round costs O(K m d^2 + d^3) however long the history. Each round runs
:data:`NEWTON_STEPS` (5) damped Newton steps on L_t from the previous round's estimate (the step size
the best of 1, 1/2, 1/4, 1/8 and 0, so L_t never increases); as the data change by one
observation a round, a few steps keep f_hat at the minimiser to float precision.

The state also keeps what the agents read from ridge regression's: the design V_t = reg I +
sum_s M^T M (as V_t^{-1}, with log det V_t / det V_0) and the inverse Hessian H_t^{-1} of L_t
at f_hat (the Laplace approximation of the posterior, N(f_hat, H_t^{-1})).

Confidence set (:func:`confidence_width`): ||f - f_hat_t||_{V_t} <= beta_t^{1/2} with

    beta_t^{1/2} = (1 / kappa) (1/2 sqrt(2 log(1/delta) + log det V_t / det V_0) + reg^{1/2} S),
    kappa = sigma'(S L) = min over the class of the logistic slope,

L the largest norm of an observation row and S the bound on ||f*||: the ridge width of
Abbasi-Yadkori et al. (2011) for 1/2-sub-Gaussian noise (a Bernoulli outcome is), divided by
the smallest slope of the link, the form of Filippi et al. (2010, GLM-UCB) and Li, Lu and
Zhou (2017). It is conservative by the factor 1/kappa where the duels are lopsided.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from e2d_jax import _linalg
from e2d_jax.estimators import ridge

#: Damped Newton steps a round (from the previous round's estimate).
NEWTON_STEPS = 5
_STEP_SIZES = (1.0, 0.5, 0.25, 0.125, 0.0)


class LogisticState(NamedTuple):
    v_inv: jax.Array  # (d, d) float, V_t^{-1} (the design, as ridge regression's)
    h_inv: jax.Array  # (d, d) float, H_t^{-1}: the inverse Hessian of L_t at f_hat
    f_hat: jax.Array  # (d,) float, the regularised maximum-likelihood estimate
    logdet: jax.Array  # () float, log det V_t - log det V_0
    count: jax.Array  # () int32, rounds seen
    plays: jax.Array  # (K,) float, n_pi: how often each action was played
    wins: jax.Array  # (K, m) float, w_pi: the sum of each action's outcomes, per row


def init(num_actions: int, rows: int, d: int, *, reg: float = 1.0, dtype=jnp.float32) -> LogisticState:
    """Empty statistics for K = ``num_actions`` actions with ``rows`` observation rows each."""
    eye = jnp.eye(d, dtype=dtype) / reg
    return LogisticState(v_inv=eye, h_inv=eye, f_hat=jnp.zeros((d,), dtype), logdet=jnp.zeros((), dtype),
                         count=jnp.zeros((), jnp.int32), plays=jnp.zeros((num_actions,), dtype),
                         wins=jnp.zeros((num_actions, rows), dtype))


def loss(f, obs_matrices, plays, wins, reg):
    """L(f) of the module docstring from the sufficient statistics (padded zero rows add the
    constant n log 2 and nothing to the gradient)."""
    z = jnp.einsum("kmd,d->km", obs_matrices, f)
    return jnp.sum(plays[:, None] * jax.nn.softplus(z) - wins * z) + 0.5 * reg * f @ f


def _curvature(f, obs_matrices, plays, reg):
    """The outcome probabilities sigma(M f) (K, m) and the Hessian of L at f."""
    p = jax.nn.sigmoid(jnp.einsum("kmd,d->km", obs_matrices, f))
    weight = plays[:, None] * p * (1.0 - p)
    hess = jnp.einsum("km,kmi,kmj->ij", weight, obs_matrices, obs_matrices) + reg * jnp.eye(f.shape[0], dtype=f.dtype)
    return p, hess


def _newton_step(f, obs_matrices, plays, wins, reg):
    p, hess = _curvature(f, obs_matrices, plays, reg)
    grad = jnp.einsum("km,kmd->d", plays[:, None] * p - wins, obs_matrices) + reg * f
    step = _linalg.lu_solve(_linalg.lu_factor(hess), grad)
    trial = f[None, :] - jnp.asarray(_STEP_SIZES, f.dtype)[:, None] * step[None, :]
    values = jax.vmap(loss, in_axes=(0, None, None, None, None))(trial, obs_matrices, plays, wins, reg)
    values = jnp.where(jnp.isfinite(values), values, jnp.inf)
    return trial[jnp.argmin(values)]


def hessian_inverse(f, obs_matrices, plays, reg):
    """H^{-1}: the inverse Hessian of L at f."""
    _, hess = _curvature(f, obs_matrices, plays, reg)
    h_inv = _linalg.lu_solve(_linalg.lu_factor(hess), jnp.eye(hess.shape[-1], dtype=hess.dtype))
    return 0.5 * (h_inv + h_inv.T)


def fit(f, obs_matrices, plays, wins, reg, steps: int = NEWTON_STEPS):
    """``steps`` damped Newton steps on L from ``f``."""
    return jax.lax.fori_loop(0, steps, lambda _, g: _newton_step(g, obs_matrices, plays, wins, reg), f)


def update(state: LogisticState, obs_matrices, action, obs, *, reg=1.0, steps: int = NEWTON_STEPS) -> LogisticState:
    """Adds one round's outcome and refits.

    Args:
      state: current statistics.
      obs_matrices: (K, m, d) the class's observation maps.
      action: () int, the action played.
      obs: (m,) its outcomes (0 or 1; 0 in padded entries).
      reg: the regulariser (the same as :func:`init`'s).
      steps: damped Newton steps from the previous estimate.
    """
    v_inv, logdet = ridge.add_rows(state.v_inv, state.logdet, obs_matrices[action])
    plays = state.plays.at[action].add(1.0)
    wins = state.wins.at[action].add(obs)
    f_hat = fit(state.f_hat, obs_matrices, plays, wins, reg, steps)
    return LogisticState(v_inv=v_inv, h_inv=hessian_inverse(f_hat, obs_matrices, plays, reg), f_hat=f_hat,
                         logdet=logdet, count=state.count + 1, plays=plays, wins=wins)


def min_slope(obs_matrices, bound):
    """kappa = sigma'(S L): the logistic slope at the largest logit |m^T f| the class allows
    (L the largest norm of an observation row, S = ``bound``)."""
    z = bound * jnp.max(jnp.linalg.norm(obs_matrices, axis=-1))
    p = jax.nn.sigmoid(z)
    return p * (1.0 - p)


def confidence_width(state: LogisticState, obs_matrices, bound, log_inv_delta, *, reg=1.0) -> jax.Array:
    """beta_t^{1/2} of the module docstring: the ridge width with sigma = 1/2, over kappa."""
    return ridge.confidence_width(state, 0.5, bound, log_inv_delta, reg=reg) / min_slope(obs_matrices, bound)
