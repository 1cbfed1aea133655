"""Agents that act on a regression oracle's predictions: the practitioners' baselines.

Both keep the estimator of the other linear agents (ridge regression on every observation, or
logistic maximum likelihood for preference feedback; :mod:`e2d_jax.agents.estimation`) and
predict the round's rewards y_a = <phi_a, f_hat_t>; b = argmax_a y_a among the actions the
round offers (ties to the lowest index).

* Inverse gap weighting, SquareCB (Foster and Rakhlin, 2020, Algorithm 1): with K_t actions
  offered and the learning rate gamma_t,

      p_a = 1 / (K_t + gamma_t (y_b - y_a))  for a != b,   p_b = 1 - sum_{a != b} p_a,

  the distribution that solves the offset DEC of the square loss for K-armed classes up to a
  constant. gamma_t = ``gamma_scale`` sqrt(t), the anytime rate of Vowpal Wabbit's
  ``--squarecb`` (its default scale 10), in place of the paper's sqrt(K n / log(|F| / delta))
  for a known horizon n.
* epsilon-greedy: b with probability 1 - epsilon, an action offered uniformly at random
  otherwise (epsilon fixed; Vowpal Wabbit's default 0.05).

Their one hyperparameter each (``gamma_scale``, ``epsilon``) is a number that may be traced, so
a grid of values is one compiled program. Finite classes with a linear view run through it, as
UCB and TS do.

References:
  Foster and Rakhlin (2020), Beyond UCB: optimal and efficient contextual bandits with
  regression oracles, ICML.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from e2d_jax import _checks as V
from e2d_jax.agents import estimation
from e2d_jax.envs.family import as_linear_model
from e2d_jax.estimators import logistic, ridge
from e2d_jax.types import ActInfo, Agent, AgentSpec, Status


class OracleState(NamedTuple):
    estimate: ridge.RidgeState | logistic.LogisticState  # by the model's feedback (agents.estimation)
    t: jax.Array  # () int32 rounds played


def _offered(model) -> jax.Array:
    available = getattr(model, "available", None)
    return jnp.ones((model.num_actions,), bool) if available is None else available


def _predictions(state, model):
    """(predicted rewards (K,), the mask of offered actions (K,), the greedy action, status)."""
    y = model.features @ state.estimate.f_hat
    offered = _offered(model)
    best = jnp.argmax(jnp.where(offered, y, -jnp.inf)).astype(jnp.int32)
    status = jnp.where(jnp.all(jnp.isfinite(y)), Status.OK, Status.NONFINITE).astype(jnp.int32)
    return y, offered, best, status


def _agent(name, factory, probabilities, numbers: dict, reg) -> Agent:
    def init(key, model):
        del key
        model = as_linear_model(model, name)
        return OracleState(estimation.init(model, reg), jnp.zeros((), jnp.int32))

    def act(key, state, model):
        model = as_linear_model(model, name)
        t = state.t + 1
        y, offered, best, status = _predictions(state, model)
        p = probabilities(y, offered, best, t.astype(y.dtype))
        action = jax.random.categorical(key, jnp.log(jnp.maximum(p, 0.0))).astype(jnp.int32)
        # A non-finite prediction leaves the greedy action (the status invalidates the seed).
        action = jnp.where(status == Status.OK, action, best)
        return action, state._replace(t=t), ActInfo(status=status)

    def update(state, action, obs, model):
        model = as_linear_model(model, name)
        return state._replace(estimate=estimation.update(state.estimate, model, action, obs, reg))

    return Agent(init=init, act=act, update=update,
                 config=AgentSpec.of(factory, (*numbers, "reg"), **numbers, reg=reg))


def inverse_gap_weights(y: jax.Array, offered: jax.Array, gamma) -> jax.Array:
    """(K,) SquareCB's distribution: p_a = 1 / (K_t + gamma (y_b - y_a)) on the offered actions
    a != b, the rest on b = argmax of ``y`` among the offered ones (ties to the lowest index),
    0 on actions not offered.

    Args:
      y: (K,) predicted rewards.
      offered: (K,) bool, the actions offered (at least one).
      gamma: the learning rate gamma >= 0.
    """
    best = jnp.argmax(jnp.where(offered, y, -jnp.inf))
    k = jnp.sum(offered).astype(y.dtype)
    p = jnp.where(offered, 1.0 / (k + gamma * jnp.maximum(y[best] - y, 0.0)), 0.0)
    p = p.at[best].set(0.0)
    return p.at[best].set(1.0 - jnp.sum(p))


def squarecb(*, gamma_scale=10.0, reg=1.0) -> Agent:
    """Inverse gap weighting with a least-squares oracle (SquareCB; see the module docstring).

    Args:
      gamma_scale: c > 0 in gamma_t = c sqrt(t) (may be traced; default 10).
      reg: the ridge regulariser, V_0 = reg I (> 0; may be traced).

    Returns:
      Agent whose ``act`` info is :class:`~e2d_jax.types.ActInfo`.
    """
    V.check_positive("gamma_scale", gamma_scale)
    V.check_positive("reg", reg)

    def probabilities(y, offered, best, t):
        del best
        return inverse_gap_weights(y, offered, gamma_scale * jnp.sqrt(t))

    return _agent("squarecb", squarecb, probabilities, {"gamma_scale": gamma_scale}, reg)


def epsilon_greedy(*, epsilon=0.05, reg=1.0) -> Agent:
    """epsilon-greedy on a least-squares oracle (see the module docstring).

    Args:
      epsilon: the exploration probability in [0, 1] (may be traced; default 0.05).
      reg: the ridge regulariser, V_0 = reg I (> 0; may be traced).

    Returns:
      Agent whose ``act`` info is :class:`~e2d_jax.types.ActInfo`.
    """
    if V.is_concrete(epsilon):
        try:
            value = float(epsilon)
        except (TypeError, ValueError):
            raise V.ArgumentError("epsilon", f"{V.name('epsilon')} must be a number in [0, 1], got "
                                             f"{epsilon!r}") from None
        if not 0.0 <= value <= 1.0:
            raise V.ArgumentError("epsilon", f"{V.name('epsilon')} must be in [0, 1], got {value}")
    V.check_positive("reg", reg)

    def probabilities(y, offered, best, t):
        del t
        k = jnp.sum(offered).astype(y.dtype)
        p = jnp.where(offered, epsilon / k, 0.0)
        return p.at[best].add(1.0 - epsilon)

    return _agent("epsilon_greedy", epsilon_greedy, probabilities, {"epsilon": epsilon}, reg)
