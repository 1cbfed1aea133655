"""Contextual linear bandits: a context drawn every round, and that round's model.

A contextual instance holds one f* and a way to draw a context every round; each context is a
linear model of its own (K actions with context-dependent features x_a(c) in R^d and
observation maps M_a(c); with bandit feedback action a observes <x_a(c), f*> + sigma xi), and
it may offer only some of the K actions (an availability mask,
:attr:`~e2d_jax.envs.linear.LinearModel.available`). The simulator draws round t's context
from the seed's key stream (:attr:`Environment.context <e2d_jax.types.Environment>`, so a
seed's trajectory stays independent of how many seeds run beside it); the agent acts on the
context's model, the environment answers from it, and the round's regret is
<x_{a*(c)}(c) - x_a(c), f*>, the round's best available action against the one played. f* is
the same in every context, so each agent's estimator carries over from round to round; the DEC
agents solve the round's program at the round's model.

Two kinds of context distributions:

* a finite set of L contexts with probabilities (:class:`ContextualParams`): every context's
  model, with its observable span, is computed once when the instance is built, and a round
  picks one by index (:func:`from_contexts`, :func:`random_contextual`,
  :func:`authors_contextual`, :func:`revealing_contextual`);
* any distribution of one's own (:class:`DrawnContextParams`, :func:`from_draw`): a function
  draws every round's instance, e.g. a continuous distribution that draws new action features
  every round and assembles their model (:func:`fresh_contextual`: x_a ~ N(0, I_d), on the
  unit sphere with ``normalize``).

Builders:

* :func:`from_contexts`: given features (L, K, d), f*, optionally observation maps, an
  availability mask and the context probabilities.
* :func:`random_contextual`: L contexts of N(0, I) features (optionally normalised), f* uniform
  on the unit sphere (the ``contextual-linear`` family; ``contexts=0``: :func:`fresh_contextual`).
* :func:`authors_contextual`: the authors' ``contextual_simple_bandit`` conventions: features
  N(0, 1), optionally normalised, f* = e_1, L contexts drawn uniformly (``contextual-authors``).
* :func:`revealing_contextual`: contexts in some of which an informative but costly revealing
  action is offered (``contextual-revealing``).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from e2d_jax import _checks as V
from e2d_jax.envs import linear
from e2d_jax.envs.linear import LinearEnvParams, LinearModel
from e2d_jax.types import Environment


class ContextualParams(NamedTuple):
    """A contextual linear instance with a finite set of contexts.

    Attributes:
      model: the model of context 0, the shapes (K, d, m) every context shares; what the
        learner is given before the first round (agents' ``init``) and what the checks read.
      contexts: every context's :class:`~e2d_jax.envs.linear.LinearModel`, stacked (each leaf
        with a leading (L,) axis); the noise level and the bound S are ``model``'s, the same
        in every context.
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


def draw_context(key: jax.Array, probs: jax.Array) -> jax.Array:
    """A context c ~ ``probs`` (L,) by the inverse of its distribution function at one uniform
    of 24 bits, u = k 2^-24: c = #{i < L - 1 : u >= P(c <= i)}. One hash of the key, where a
    categorical draw would take L (each context's probability is met to 2^-24)."""
    u = (jax.random.bits(key, (), jnp.uint32) >> 8).astype(probs.dtype) * jnp.asarray(2.0**-24, probs.dtype)
    return jnp.sum(u >= jnp.cumsum(probs)[:-1]).astype(jnp.int32)


def round_instance(key: jax.Array, params: ContextualParams, t: jax.Array) -> LinearEnvParams:
    """Round t's instance: a context c ~ probs drawn with the round's ``key``
    (:func:`draw_context`), and the linear instance of context c (its model, the common f*)."""
    del t
    c = draw_context(key, params.probs)
    model = jax.tree_util.tree_map(lambda x: x[c], params.contexts)
    # The noise level and the bound on ||f*|| are every context's: no gather for them.
    model = model._replace(sigma=params.model.sigma, radius=params.model.radius)
    return LinearEnvParams(model=model, theta=params.theta)


def context_instance(params: ContextualParams, c: int) -> LinearEnvParams:
    """The linear instance of context ``c`` (e.g. to look at one context's gaps)."""
    return LinearEnvParams(model=jax.tree_util.tree_map(lambda x: x[c], params.contexts), theta=params.theta)


def _model(params) -> LinearModel:
    return params.model


#: The environment of instances with a finite set of contexts: ``context`` draws the round's
#: instance; ``observe`` and ``mean_rewards`` are the linear environment's, applied to it.
ENVIRONMENT = Environment(observe=linear.observe, mean_rewards=linear.mean_rewards, model=_model,
                          context=round_instance)


def _context_model(features, obs_matrices, obs_mask, available, sigma, radius) -> LinearModel:
    """One context's model; its observable span of dimension d (static, so every context's
    model has the same shapes), restricted to the actions it offers where a mask is given."""
    d = features.shape[-1]
    model = linear.assemble_model(features, obs_matrices, obs_mask, sigma, d, radius)
    return model if available is None else linear.offer(model, available)


def _shape(x) -> tuple:
    return tuple(np.shape(x)) if V.is_concrete(x) else tuple(x.shape)


def _check_finite(name: str, x) -> None:
    if V.is_concrete(x) and not bool(jnp.all(jnp.isfinite(x))):
        raise V.ArgumentError(name, f"{V.name(name)} must be finite (no NaN or inf)")


def _check_available(available, num_contexts: int, num_actions: int):
    available = jnp.asarray(available)
    if _shape(available) != (num_contexts, num_actions) or not (
            available.dtype == bool or jnp.issubdtype(available.dtype, jnp.integer)):
        raise V.ArgumentError("available", f"{V.name('available')} must be a (contexts L, actions K) = "
                                           f"({num_contexts}, {num_actions}) bool mask, got "
                                           f"{_shape(available)} {available.dtype}")
    available = available.astype(bool)
    if V.is_concrete(available):
        empty = np.flatnonzero(~np.asarray(available).any(axis=1))
        if empty.size:
            raise V.ArgumentError("available", f"{V.name('available')}: context {', '.join(map(str, empty[:5]))} "
                                               f"offers no action (every context needs at least one)")
    return available


def _check_probs(probs, num_contexts: int, dtype):
    if probs is None:
        return jnp.full((num_contexts,), 1.0 / num_contexts, dtype)
    probs = jnp.asarray(probs, dtype)
    if probs.shape != (num_contexts,):
        raise V.ArgumentError("probs", f"{V.name('probs')} must have shape ({num_contexts},), one probability "
                                       f"per context, got {tuple(probs.shape)}")
    if V.is_concrete(probs) and not (bool(jnp.all(probs >= 0)) and abs(float(jnp.sum(probs)) - 1.0) < 1e-6):
        raise V.ArgumentError("probs", f"{V.name('probs')} must be non-negative and sum to 1")
    return probs


def from_contexts(features, theta, *, probs=None, obs_matrices=None, obs_mask=None, available=None, sigma=1.0,
                  radius=None, dtype=None) -> ContextualParams:
    """A contextual instance from arrays.

    Args:
      features: (L, K, d) every context's action features.
      theta: (d,) f*.
      probs: (L,) the context distribution (default uniform); non-negative, summing to 1.
      obs_matrices: (L, K, m, d) every context's observation maps, padded with zero rows
        (default: bandit feedback, M_a(c) = x_a(c)^T).
      obs_mask: (L, K, m) bool, the real rows of the maps (default: the rows that are not
        identically zero).
      available: (L, K) bool, the actions each context offers (default: all); every context
        offers at least one.
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
    if obs_matrices is None:
        obs_matrices = features[:, :, None, :]
    obs_matrices = jnp.asarray(obs_matrices, dtype)
    if obs_matrices.ndim != 4 or obs_matrices.shape[:2] != (num_contexts, k) or obs_matrices.shape[3] != d:
        raise V.ArgumentError("obs_matrices", f"{V.name('obs_matrices')} must be (contexts L, actions K, rows m, "
                                              f"dimension d) = ({num_contexts}, {k}, m, {d}), got "
                                              f"{tuple(obs_matrices.shape)}")
    if obs_mask is None:
        obs_mask = jnp.any(obs_matrices != 0, axis=-1)
    obs_mask = jnp.asarray(obs_mask, bool)
    if obs_mask.shape != obs_matrices.shape[:3]:
        raise V.ArgumentError("obs_mask", f"{V.name('obs_mask')} must have shape {obs_matrices.shape[:3]}, got "
                                          f"{tuple(obs_mask.shape)}")
    for name, x in (("features", features), ("theta", theta), ("obs_matrices", obs_matrices)):
        _check_finite(name, x)
    if available is not None:
        available = _check_available(available, num_contexts, k)
    probs = _check_probs(probs, num_contexts, dtype)
    V.check_positive("sigma", sigma)
    radius = jnp.linalg.norm(theta) if radius is None else V.check_positive("radius", radius)
    contexts = jax.vmap(lambda x, m, mask, av: _context_model(x, m, mask, av, sigma, radius),
                        in_axes=(0, 0, 0, None if available is None else 0))(
        features, obs_matrices, obs_mask, available)
    model = jax.tree_util.tree_map(lambda x: x[0], contexts)
    return ContextualParams(model=model, contexts=contexts, probs=probs, theta=theta)


def _gaussian_features(key, num_contexts, num_actions, d, normalize, dtype):
    x = jax.random.normal(key, (num_contexts, num_actions, d), dtype)
    if normalize:
        x = x / jnp.linalg.norm(x, axis=-1, keepdims=True)
    return x


def _check_sizes(d, num_actions, num_contexts, minimum_contexts=1):
    V.check_int("d", d, minimum=1)
    V.check_int("num_actions", num_actions, minimum=2)
    V.check_int("num_contexts", num_contexts, minimum=minimum_contexts)


def random_contextual(key: jax.Array, d: int, num_actions: int, num_contexts: int, *, normalize: bool = True,
                      sigma: float = 1.0, dtype=None) -> ContextualParams | DrawnContextParams:
    """L = ``num_contexts`` contexts of ``num_actions`` actions with N(0, I) features in R^d
    (on the unit sphere with ``normalize``), f* uniform on the unit sphere (S = 1), contexts
    uniform; ``num_contexts=0``: a continuous context distribution, new features every round
    (:func:`fresh_contextual`)."""
    _check_sizes(d, num_actions, num_contexts, minimum_contexts=0)
    if num_contexts == 0:
        return fresh_contextual(key, d, num_actions, normalize=normalize, sigma=sigma, dtype=dtype)
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


def revealing_contextual(key: jax.Array, d: int, num_actions: int, num_contexts: int, *, share: float = 0.5,
                         sigma: float = 1.0, dtype=None) -> ContextualParams:
    """Contexts in some of which an informative but costly action is offered.

    Every context has K - 1 ordinary actions with unit-norm N(0, I) features and bandit
    feedback, and the revealing action 0: its reward is that of the context's worst ordinary
    action (the costliest play of the round) and it observes every action's reward, M_0(c) =
    X(c) (the revealing semi-bandit's action, Appendix 'Experiments', in each context). It is
    offered in the first ceil(``share`` L) contexts only; contexts are uniform and f* uniform on
    the unit sphere (S = 1). The DEC weighs what the revealing action teaches against its cost
    where it is offered; an optimistic index never picks it, as its reward is the round's
    lowest.

    Args:
      key: PRNG key.
      d: dimension (>= 1).
      num_actions: K (>= 3): the revealing action and K - 1 ordinary ones.
      num_contexts: L (>= 1).
      share: the share of contexts that offer the revealing action, in (0, 1].
      sigma: the noise standard deviation (> 0).
      dtype: float dtype.
    """
    _check_sizes(d, num_actions, num_contexts)
    if num_actions < 3:
        raise V.ArgumentError("num_actions", f"{V.name('num_actions')} must be >= 3 (the revealing action and "
                                             f"two ordinary ones), got {num_actions}")
    share = float(share)
    if not 0.0 < share <= 1.0:
        raise V.ArgumentError("share", f"{V.name('share')} must be in (0, 1], got {share}")
    dtype = linear.default_dtype(dtype)
    k_x, k_theta = jax.random.split(key)
    theta = jax.random.normal(k_theta, (d,), dtype)
    theta = theta / jnp.linalg.norm(theta)
    ordinary = _gaussian_features(k_x, num_contexts, num_actions - 1, d, True, dtype)
    worst = jnp.argmin(ordinary @ theta, axis=1)
    revealing = jnp.take_along_axis(ordinary, worst[:, None, None], axis=1)
    features = jnp.concatenate([revealing, ordinary], axis=1)  # (L, K, d)
    own = jnp.zeros((num_contexts, num_actions, num_actions, d), dtype).at[:, :, 0, :].set(features)
    obs_matrices = own.at[:, 0].set(features)
    offered = math.ceil(share * num_contexts)
    available = jnp.ones((num_contexts, num_actions), bool).at[offered:, 0].set(False)
    return from_contexts(features, theta, obs_matrices=obs_matrices, available=available, sigma=sigma, radius=1.0,
                         dtype=dtype)


@jax.tree_util.register_pytree_node_class
class DrawnContextParams:
    """A contextual linear instance whose round is drawn by a function of one's own.

    Attributes:
      model: a round's model (the first round's draw with a fixed key), the shapes every
        round's model has; what the learner is given before the first round.
      data: a pytree of arrays the draw reads (f*, a context distribution's parameters, ...).
      draw: ``draw(key, data, t) -> LinearEnvParams``, round t's instance (static: part of the
        compiled program, not an array).
    """

    def __init__(self, model: LinearModel, data, draw):
        self.model, self.data, self.draw = model, data, draw

    def tree_flatten(self):
        return (self.model, self.data), self.draw

    @classmethod
    def tree_unflatten(cls, draw, children):
        return cls(*children, draw)

    def __repr__(self) -> str:
        return f"DrawnContextParams(draw={getattr(self.draw, '__name__', self.draw)!r}, model=..., data=...)"


def drawn_round(key: jax.Array, params: DrawnContextParams, t: jax.Array) -> LinearEnvParams:
    """Round t's instance: ``params.draw(key, params.data, t)``."""
    return params.draw(key, params.data, t)


#: The environment of instances drawn by a function of one's own (:func:`from_draw`).
DRAWN_ENVIRONMENT = Environment(observe=linear.observe, mean_rewards=linear.mean_rewards, model=_model,
                                context=drawn_round)


def from_draw(draw, data=None, *, key: jax.Array | None = None) -> DrawnContextParams:
    """A contextual linear instance from a function that draws each round's instance.

    Args:
      draw: ``draw(key, data, t) -> LinearEnvParams``: round t's instance (t an int32 scalar,
        1 for the first round) drawn with the round's ``key`` (the seed's key stream), e.g. new
        action features and their model (:func:`e2d_jax.envs.linear.assemble_model`, or
        :func:`e2d_jax.linear_side_observation`) with f*; a round that offers only some actions
        passes its model through :func:`e2d_jax.envs.linear.offer`. Every round's instance
        must have the same structure, shapes and dtypes. Traceable (``jax.random``,
        ``jax.numpy``).
      data: a pytree of arrays ``draw`` reads (default None).
      key: the key of the round that gives the shapes (default ``jax.random.key(0)``).

    Returns:
      :class:`DrawnContextParams`; ``e2d_jax.simulate`` and the command line (a builder that
      returns it, by ``module:attribute``) run it like the library's own.
    """
    if not callable(draw):
        raise V.ArgumentError("draw", f"{V.name('draw')} must be a function (key, data, t) -> LinearEnvParams, got "
                                      f"{type(draw).__name__}")
    key = jax.random.key(0) if key is None else key
    first = draw(key, data, jnp.ones((), jnp.int32))
    if not isinstance(first, LinearEnvParams):
        raise V.ArgumentError("draw", f"{V.name('draw')} must return a round's instance, an "
                                      f"e2d_jax.envs.linear.LinearEnvParams (a model and f*), got "
                                      f"{type(first).__name__}")
    model = first.model
    _check_finite("draw", model.features)
    available = model.available
    if available is not None and V.is_concrete(available) and not bool(jnp.any(available)):
        raise V.ArgumentError("draw", f"{V.name('draw')} returned a round that offers no action (its model's "
                                      f"available mask is all False)")
    return DrawnContextParams(model, data, draw)


def _fresh_features(key, num_actions, d, normalize, dtype):
    x = jax.random.normal(key, (num_actions, d), dtype)
    return jnp.where(normalize, x / jnp.linalg.norm(x, axis=-1, keepdims=True), x)


def _bandit_model(features, sigma, radius) -> LinearModel:
    """A round's model with bandit feedback; its observable span of dimension d (static)."""
    k, d = features.shape
    return linear.assemble_model(features, features[:, None, :], jnp.ones((k, 1), bool), sigma, d, radius)


def _fresh_round(key, data, t):
    """New N(0, I) features (``data["normalize"]``: on the unit sphere), bandit feedback."""
    del t
    theta = data["theta"]
    features = _fresh_features(key, data["num_actions"].shape[0], theta.shape[0], data["normalize"], theta.dtype)
    return LinearEnvParams(model=_bandit_model(features, data["sigma"], jnp.ones((), theta.dtype)), theta=theta)


def fresh_contextual(key: jax.Array, d: int, num_actions: int, *, normalize: bool = True, sigma: float = 1.0,
                     dtype=None) -> DrawnContextParams:
    """A contextual linear bandit with a continuous context distribution: every round has new
    N(0, I_d) action features (unit norm with ``normalize``), bandit feedback, f* uniform on
    the unit sphere (S = 1). An instance of :func:`from_draw`."""
    _check_sizes(d, num_actions, 1)
    V.check_positive("sigma", sigma)
    dtype = linear.default_dtype(dtype)
    k_x, k_theta = jax.random.split(key)
    theta = jax.random.normal(k_theta, (d,), dtype)
    data = {"theta": theta / jnp.linalg.norm(theta), "normalize": jnp.asarray(bool(normalize)),
            "sigma": jnp.asarray(sigma, dtype),
            "num_actions": jnp.zeros((num_actions,), bool)}  # K as a static shape the draw reads
    return from_draw(_fresh_round, data, key=k_x)
