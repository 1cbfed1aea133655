"""Exponential weights for online density estimation (paper, Appendix 'Online Density
Estimation', Algorithm 2 (EWA)).

With the log-loss L_t(f) = -sum_{s<=t} log M_f(y_s | pi_s), EWA keeps the weights
p_t(f) proportional to exp(-eta L_t(f)) over the finite class and returns either

* the mixture sum_f p_t(f) f, "for convex classes" (here: the point of the class's convex
  hull in its parametrisation, ``e2d_jax.envs.finite.mixture``), or
* a sample f ~ p_t, otherwise.

With eta = 1 (the default) p_t is the Bayesian posterior under a uniform prior and the
estimation error satisfies Est_n <= log |M| (Cesa-Bianchi and Lugosi, 2006, Prop. 3.1).

Numerics: the state holds the *normalised* log-weights log p_t(f); each update adds
eta * log-likelihood and subtracts the log-sum-exp, so the largest log-weight stays near 0
and nothing overflows or underflows however long the run (a model whose weight underflows
exp() still keeps a finite log-weight and can recover). Normalising each round also keeps
float32 log-weights within a few units of 0 for the models that matter.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from e2d_jax import _checks as V
from e2d_jax.envs import finite


class EWAState(NamedTuple):
    log_weights: jax.Array  # (M,) float, normalised log p_t(f): logsumexp = 0
    count: jax.Array  # () int32, observations absorbed


def init(num_models: int, *, dtype=jnp.float32) -> EWAState:
    """Uniform weights over ``num_models`` >= 2 models (the prior)."""
    num_models = V.check_int("num_models", num_models, minimum=2)
    return EWAState(
        log_weights=jnp.full((num_models,), -jnp.log(float(num_models)), dtype),
        count=jnp.zeros((), jnp.int32),
    )


def update(state: EWAState, log_likelihood: jax.Array, *, eta: float = 1.0) -> EWAState:
    """Absorbs one observation: log p(f) += eta * log M_f(y | pi), renormalised.

    Args:
      state: current weights.
      log_likelihood: (M,) log M_f(y_t | pi_t) for every model (constants common to all
        models may be dropped).
      eta: learning rate (> 0; 1 in Algorithm 2; may be traced).

    Returns:
      The new state.
    """
    logits = state.log_weights + eta * log_likelihood.astype(state.log_weights.dtype)
    return EWAState(log_weights=jax.nn.log_softmax(logits), count=state.count + 1)


def posterior(state: EWAState) -> jax.Array:
    """(M,) the weights p_t."""
    return jnp.exp(state.log_weights)


def sample(key: jax.Array, state: EWAState) -> jax.Array:
    """An index f ~ p_t, () int32 (Algorithm 2 for non-convex classes)."""
    return jax.random.categorical(key, state.log_weights).astype(jnp.int32)


def estimate(key: jax.Array, state: EWAState, model, *, convex: bool = False):
    """The EWA estimate as a model ``(rewards (K,), obs (K, m))`` and its weights.

    Args:
      key: PRNG key (used only when ``convex`` is False).
      state: EWA weights.
      model: the finite class (``e2d_jax.envs.finite.FiniteModel``).
      convex: True returns the mixture sum_f p(f) f; False a sample f ~ p.

    Returns:
      ``(rewards (K,), obs, weights (M,))`` where ``weights`` is the one-hot vector of the
      sample or p itself for the mixture.
    """
    m = state.log_weights.shape[0]
    if convex:
        weights = posterior(state)
        rewards, obs = finite.mixture(model, weights)
    else:
        index = sample(key, state)
        weights = jax.nn.one_hot(index, m, dtype=state.log_weights.dtype)
        rewards, obs = finite.model_at(model, index)
    return rewards, obs, weights
