"""Contextual linear bandits: a context drawn every round, and that round's model.

A contextual instance (:class:`ContextualParams`) holds L contexts, each a linear model of
its own (K actions with context-dependent features x_a(c) in R^d; bandit feedback: action a
observes <x_a(c), f*> + sigma xi), a distribution over the contexts and one f*. Every round
the environment draws a context c from the seed's key stream (:attr:`ENVIRONMENT.context
<e2d_jax.types.Environment>`, so a seed's trajectory stays independent of how many seeds run
beside it), and the round's instance is the linear instance of context c: the agent acts on its
model, the environment answers from it, and the round's regret is <x_{a*(c)}(c) - x_a(c), f*>,
the round's best action against the one played. f* is the same in every context, so each
agent's estimator (ridge regression on every observation) carries over from round to round;
the DEC agents solve the round's program at the round's model.

Builders:

* :func:`from_contexts`: given features (L, K, d), f* and optionally the context probabilities.
* :func:`random_contextual`: L contexts of N(0, I) features (optionally normalised), f* uniform
  on the unit sphere (the ``contextual-linear`` family).
* :func:`authors_contextual`: the authors' ``contextual_simple_bandit`` conventions: features
  N(0, 1), optionally normalised, f* = e_1, L contexts drawn uniformly (``contextual-authors``).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from e2d_jax import _checks as V
from e2d_jax.envs import linear
from e2d_jax.envs.linear import LinearEnvParams, LinearModel
from e2d_jax.types import Environment


class ContextualParams(NamedTuple):
    """A contextual linear instance.

    Attributes:
      model: the model of context 0, the shapes (K, d, m) every context shares; what the
        learner is given before the first round (agents' ``init``) and what the checks read.
      contexts: every context's :class:`~e2d_jax.envs.linear.LinearModel`, stacked (each leaf
        with a leading (L,) axis).
      probs: (L,) the context distribution.
      theta: (d,) f*, the same in every context.
    """

    model: LinearModel
    contexts: LinearModel
    probs: jax.Array
    theta: jax.Array

    @property
    def num_contexts(self) -> int:
        return self.probs.shape[-1]


def round_instance(key: jax.Array, params: ContextualParams) -> LinearEnvParams:
    """The round's instance: a context c ~ probs drawn with ``key``, and the linear instance of
    context c (its model, the common f*)."""
    c = jax.random.categorical(key, jnp.log(params.probs))
    model = jax.tree_util.tree_map(lambda x: x[c], params.contexts)
    return LinearEnvParams(model=model, theta=params.theta)


def context_instance(params: ContextualParams, c: int) -> LinearEnvParams:
    """The linear instance of context ``c`` (e.g. to look at one context's gaps)."""
    return LinearEnvParams(model=jax.tree_util.tree_map(lambda x: x[c], params.contexts), theta=params.theta)


def _model(params) -> LinearModel:
    return params.model


#: The environment of contextual instances: ``context`` draws the round's instance;
#: ``observe`` and ``mean_rewards`` are the linear environment's, applied to it.
ENVIRONMENT = Environment(observe=linear.observe, mean_rewards=linear.mean_rewards, model=_model,
                          context=round_instance)


def _bandit_model(features, sigma, radius) -> LinearModel:
    """One context's model with bandit feedback (each action observes its own reward), its
    observable span of dimension d (static, so every context's model has the same shapes)."""
    k, d = features.shape
    return linear.assemble_model(features, features[:, None, :], jnp.ones((k, 1), bool), sigma, d, radius)


def from_contexts(features, theta, *, probs=None, sigma=1.0, radius=None, dtype=None) -> ContextualParams:
    """A contextual instance from arrays.

    Args:
      features: (L, K, d) every context's action features.
      theta: (d,) f*.
      probs: (L,) the context distribution (default uniform); non-negative, summing to 1.
      sigma: the noise standard deviation (> 0).
      radius: S, the known bound on ||f*|| (default ||f*||).
      dtype: float dtype (default float64 under x64, else float32).

    Returns:
      :class:`ContextualParams`.
    """
    dtype = linear.default_dtype(dtype)
    features = jnp.asarray(features, dtype)
    theta = jnp.asarray(theta, dtype)
    if features.ndim != 3:
        raise V.ArgumentError("features", f"{V.name('features')} must be (contexts L, actions K, dimension d), "
                                          f"got shape {tuple(features.shape)}")
    num_contexts, k, d = features.shape
    if k < 2:
        raise V.ArgumentError("features", f"{V.name('features')} needs at least 2 actions per context, got {k}")
    if theta.shape != (d,):
        raise V.ArgumentError("theta", f"{V.name('theta')} must have shape ({d},) to match the features, got "
                                       f"{tuple(theta.shape)}")
    for name, x in (("features", features), ("theta", theta)):
        if V.is_concrete(x) and not bool(jnp.all(jnp.isfinite(x))):
            raise V.ArgumentError(name, f"{V.name(name)} must be finite (no NaN or inf)")
    if probs is None:
        probs = jnp.full((num_contexts,), 1.0 / num_contexts, dtype)
    else:
        probs = jnp.asarray(probs, dtype)
        if probs.shape != (num_contexts,):
            raise V.ArgumentError("probs", f"{V.name('probs')} must have shape ({num_contexts},), one probability "
                                           f"per context, got {tuple(probs.shape)}")
        if V.is_concrete(probs) and not (bool(jnp.all(probs >= 0)) and abs(float(jnp.sum(probs)) - 1.0) < 1e-6):
            raise V.ArgumentError("probs", f"{V.name('probs')} must be non-negative and sum to 1")
    V.check_positive("sigma", sigma)
    radius = jnp.linalg.norm(theta) if radius is None else V.check_positive("radius", radius)
    contexts = jax.vmap(lambda x: _bandit_model(x, sigma, radius))(features)
    model = jax.tree_util.tree_map(lambda x: x[0], contexts)
    return ContextualParams(model=model, contexts=contexts, probs=probs, theta=theta)


def _gaussian_features(key, num_contexts, num_actions, d, normalize, dtype):
    x = jax.random.normal(key, (num_contexts, num_actions, d), dtype)
    if normalize:
        x = x / jnp.linalg.norm(x, axis=-1, keepdims=True)
    return x


def _check_sizes(d, num_actions, num_contexts):
    V.check_int("d", d, minimum=1)
    V.check_int("num_actions", num_actions, minimum=2)
    V.check_int("num_contexts", num_contexts, minimum=1)


def random_contextual(key: jax.Array, d: int, num_actions: int, num_contexts: int, *, normalize: bool = True,
                      sigma: float = 1.0, dtype=None) -> ContextualParams:
    """L = ``num_contexts`` contexts of ``num_actions`` actions with N(0, I) features in R^d
    (on the unit sphere with ``normalize``), f* uniform on the unit sphere (S = 1), contexts
    uniform."""
    _check_sizes(d, num_actions, num_contexts)
    dtype = linear.default_dtype(dtype)
    k_x, k_theta = jax.random.split(key)
    theta = jax.random.normal(k_theta, (d,), dtype)
    theta = theta / jnp.linalg.norm(theta)
    features = _gaussian_features(k_x, num_contexts, num_actions, d, normalize, dtype)
    return from_contexts(features, theta, sigma=sigma, radius=1.0, dtype=dtype)


def authors_contextual(key: jax.Array, d: int, num_actions: int, num_contexts: int, *, normalize: bool = False,
                       sigma: float = 1.0, dtype=None) -> ContextualParams:
    """The authors' ``contextual_simple_bandit``: L contexts of N(0, 1) features (normalised
    with ``normalize``), f* = e_1, contexts uniform; S = 1."""
    _check_sizes(d, num_actions, num_contexts)
    dtype = linear.default_dtype(dtype)
    theta = jnp.zeros((d,), dtype).at[0].set(1.0)
    features = _gaussian_features(key, num_contexts, num_actions, d, normalize, dtype)
    return from_contexts(features, theta, sigma=sigma, radius=1.0, dtype=dtype)
