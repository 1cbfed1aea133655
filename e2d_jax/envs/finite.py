"""Finite model classes (paper, Section 'Setting'; Appendix 'Online Density Estimation').

A finite model class M = {g_1, ..., g_M} over K actions is a reward table ``rewards[g, pi]`` =
r_g(pi) and, for every model and action, an observation distribution M_g(pi) on R^m from one
of two families:

* :class:`GaussianObs` - independent coordinates N(means[g, pi, j], sigma^2) with a known
  sigma (vector observations allowed);
* :class:`BernoulliObs` - independent coordinates Bernoulli(probs[g, pi, j]), 0 < p < 1.

The family is the *type* of the ``obs`` field, so it is part of the pytree structure: static
under ``jit``, and every function below dispatches on it in Python at trace time.

Observations have a fixed length m for every action. An action that observes fewer
coordinates has them switched off in ``obs_mask`` (K, m): masked entries of an observation are
exactly 0 and enter neither the likelihood nor the divergence, so padding is exact.

The true model f* is either a member of the class (``true_index`` >= 0) or given separately
(``true_index`` = -1, e.g. a misspecified instance); its parameters are stored in
``FiniteEnvParams`` with the model axis dropped.

Matrices (the paper views them as |Pi| x |M| matrices, rows = actions, columns = models):

* :func:`gap_matrix` - Delta(pi, g) = r_g(pi*_g) - r_g(pi) (Section 'Setting');
* :func:`gap_matrix_f` - Delta_f(pi, g) = r_g(pi*_g) - r_f(pi) (Section 'Certifying Upper Bounds');
* :func:`info_matrix` - I_f(pi, g) = KL(M_g(pi) || M_f(pi)) in closed form:
  Gaussian ``sum_j (m_g - m_f)^2 / (2 sigma^2)``, Bernoulli
  ``sum_j p log(p/q) + (1-p) log((1-p)/(1-q))`` with p = p_g, q = p_f.

Builders:

* :func:`finite_class` - from explicit arrays;
* :func:`multi_armed_bandit_class` - K-armed Gaussian bandit, M random mean vectors;
* :func:`multi_armed_bandit_grid` - K-armed Gaussian bandit, all mean vectors on a grid;
* :func:`revealing_class` - the finite analogue of the paper's revealing action: a costly
  action that is never optimal but observes every other arm's reward at once;
* :func:`bernoulli_bandit_class` - K-armed Bernoulli bandit, M random probability vectors.

The Gaussian bandit builders also attach a *linear view* (``FiniteModel.linear``, a
:class:`~e2d_jax.envs.linear.LinearModel` with phi_pi = e_pi and the same observation maps), so
the linear UCB and TS run on them unchanged (see :func:`e2d_jax.envs.family.as_linear_model`).
"""
from __future__ import annotations

from typing import NamedTuple, Union

import jax
import jax.numpy as jnp
import numpy as np

from e2d_jax import _checks as V
from e2d_jax.envs.linear import assemble_model
from e2d_jax.types import Environment


class GaussianObs(NamedTuple):
    """Gaussian observations N(means, sigma^2 I) with a known sigma."""

    means: jax.Array  # (M, K, m) float for a class; (K, m) for one model
    sigma: jax.Array  # () float > 0


class BernoulliObs(NamedTuple):
    """Independent Bernoulli observation coordinates."""

    probs: jax.Array  # (M, K, m) float in (0, 1) for a class; (K, m) for one model


ObsFamily = Union[GaussianObs, BernoulliObs]


class FiniteModel(NamedTuple):
    """The model class the learner knows.

    Attributes:
      rewards: (M, K) float, r_g(pi).
      obs: GaussianObs or BernoulliObs with a leading model axis (M, K, m).
      obs_mask: (K, m) bool, the coordinates each action observes.
      linear: optional :class:`~e2d_jax.envs.linear.LinearModel` with the same rewards and
        observations for every model (phi_pi = e_pi, f = r_g); ``None`` when the class has
        no linear structure. Used only by the linear UCB / TS baselines.
    """

    rewards: jax.Array
    obs: ObsFamily
    obs_mask: jax.Array
    linear: object = None

    @property
    def num_models(self) -> int:
        return self.rewards.shape[-2]

    @property
    def num_actions(self) -> int:
        return self.rewards.shape[-1]


class FiniteEnvParams(NamedTuple):
    """An instance: the model class and the true model f*.

    Attributes:
      model: the class.
      true_rewards: (K,) r_{f*}.
      true_obs: the family of ``model.obs`` with shape (K, m): the parameters of M_{f*}.
      true_index: () int32, the index of f* in the class, or -1 if given separately.
    """

    model: FiniteModel
    true_rewards: jax.Array
    true_obs: ObsFamily
    true_index: jax.Array


# --------------------------------------------------------------------------------------
# The environment


def _sample(key, obs: ObsFamily, dtype):
    """A draw from one model's observation distribution at one action, (m,)."""
    if isinstance(obs, GaussianObs):
        return obs.means + obs.sigma * jax.random.normal(key, obs.means.shape, dtype)
    return jax.random.bernoulli(key, obs.probs).astype(dtype)


def observe(key: jax.Array, params: FiniteEnvParams, action: jax.Array) -> jax.Array:
    """Samples y ~ M_{f*}(action); masked coordinates are exactly 0.

    Args:
      key: PRNG key.
      params: the instance.
      action: () int, the action played.

    Returns:
      (m,) observation, dtype of the reward table.
    """
    dtype = params.true_rewards.dtype
    at = jax.tree_util.tree_map(lambda x: x[action] if jnp.ndim(x) >= 2 else x, params.true_obs)
    y = _sample(key, at, dtype)
    return jnp.where(params.model.obs_mask[action], y, 0.0).astype(dtype)


def mean_rewards(params: FiniteEnvParams) -> jax.Array:
    """(K,) r_{f*}(pi)."""
    return params.true_rewards


def _model(params: FiniteEnvParams) -> FiniteModel:
    return params.model


ENVIRONMENT = Environment(observe=observe, mean_rewards=mean_rewards, model=_model)


# --------------------------------------------------------------------------------------
# Likelihoods, divergences and the gap / information matrices


def _at_action(obs: ObsFamily, action):
    """The family parameters of every model at one action: (M, m) leaves."""
    if isinstance(obs, GaussianObs):
        return GaussianObs(means=obs.means[:, action], sigma=obs.sigma)
    return BernoulliObs(probs=obs.probs[:, action])


def log_likelihood(model: FiniteModel, action: jax.Array, y: jax.Array) -> jax.Array:
    """log M_g(y | action) for every model g, (M,), summed over the observed coordinates.

    Gaussian constants that do not depend on g are dropped (EWA only needs differences).
    """
    mask = model.obs_mask[action]
    at = _at_action(model.obs, action)
    if isinstance(at, GaussianObs):
        ll = -0.5 * ((y - at.means) / at.sigma) ** 2
    else:
        p = at.probs
        ll = y * jnp.log(p) + (1.0 - y) * jnp.log1p(-p)
    return jnp.sum(jnp.where(mask, ll, 0.0), axis=-1)


def kl_divergence(g_obs: ObsFamily, f_obs: ObsFamily, mask) -> jax.Array:
    """KL(M_g || M_f) summed over the masked coordinates (last axis), closed form.

    ``g_obs`` and ``f_obs`` are the same family with broadcastable (..., m) parameters.
    """
    if isinstance(g_obs, GaussianObs):
        per = (g_obs.means - f_obs.means) ** 2 / (2.0 * g_obs.sigma**2)
    else:
        p, q = g_obs.probs, f_obs.probs
        # p log(p/q) + (1-p) log((1-p)/(1-q)), with p, q in (0, 1) (checked by the builders).
        per = p * (jnp.log(p) - jnp.log(q)) + (1.0 - p) * (jnp.log1p(-p) - jnp.log1p(-q))
        per = jnp.maximum(per, 0.0)  # rounding can make a zero KL slightly negative
    return jnp.sum(jnp.where(mask, per, 0.0), axis=-1)


def info_matrix(model: FiniteModel, f_obs: ObsFamily) -> jax.Array:
    """The information matrix I_f(pi, g) = KL(M_g(pi) || M_f(pi)), (K, M).

    Args:
      model: the class (its models are the columns g).
      f_obs: the reference model's observation parameters, same family with shape (K, m)
        (a member of the class from :func:`model_at`, or a mixture from :func:`mixture`).

    Returns:
      (K, M) nonnegative; the column of f itself (if f is in the class) is exactly 0.

    References:
      Kirschner et al. (2023), Section 'Regret Minimization via Saddle-Point Optimization'.
    """
    if isinstance(model.obs, GaussianObs):
        g = GaussianObs(means=jnp.swapaxes(model.obs.means, 0, 1), sigma=model.obs.sigma)  # (K, M, m)
        f = GaussianObs(means=f_obs.means[:, None, :], sigma=model.obs.sigma)
    else:
        g = BernoulliObs(probs=jnp.swapaxes(model.obs.probs, 0, 1))
        f = BernoulliObs(probs=f_obs.probs[:, None, :])
    return kl_divergence(g, f, model.obs_mask[:, None, :])


def optimal_rewards(rewards: jax.Array) -> jax.Array:
    """r_g(pi*_g) = max_pi r_g(pi) for every model, (M,)."""
    return jnp.max(rewards, axis=-1)


def gap_matrix(rewards: jax.Array) -> jax.Array:
    """Delta(pi, g) = r_g(pi*_g) - r_g(pi) as a (K, M) matrix (rows actions, columns models).

    Args:
      rewards: (M, K) reward table.
    """
    return (optimal_rewards(rewards)[:, None] - rewards).T


def gap_matrix_f(rewards: jax.Array, f_rewards: jax.Array) -> jax.Array:
    """Delta_f(pi, g) = r_g(pi*_g) - r_f(pi), (K, M) (Section 'Certifying Upper Bounds').

    Args:
      rewards: (M, K) reward table of the class.
      f_rewards: (K,) rewards of the reference model f.
    """
    return optimal_rewards(rewards)[None, :] - f_rewards[:, None]


def model_at(model: FiniteModel, index: jax.Array):
    """Member ``index`` of the class as ``(rewards (K,), obs (K, m))``."""
    if isinstance(model.obs, GaussianObs):
        obs = GaussianObs(means=model.obs.means[index], sigma=model.obs.sigma)
    else:
        obs = BernoulliObs(probs=model.obs.probs[index])
    return model.rewards[index], obs


def mixture(model: FiniteModel, weights: jax.Array):
    """The parameter average sum_g w_g g as ``(rewards (K,), obs (K, m))``.

    This is the EWA estimate "for convex classes" (Algorithm 2): the point of the convex hull
    of the class in the (rewards, observation-parameter) parametrisation. For Bernoulli
    coordinates it is exactly the mixture of the marginals; for Gaussians it is the Gaussian
    with the averaged mean (not the Gaussian mixture, which has no closed-form KL).
    """
    rewards = weights @ model.rewards
    if isinstance(model.obs, GaussianObs):
        obs = GaussianObs(means=jnp.einsum("g,gkm->km", weights, model.obs.means), sigma=model.obs.sigma)
    else:
        obs = BernoulliObs(probs=jnp.einsum("g,gkm->km", weights, model.obs.probs))
    return rewards, obs


# --------------------------------------------------------------------------------------
# Builders


def _default_dtype(dtype):
    return jnp.dtype(dtype) if dtype is not None else jax.dtypes.canonicalize_dtype(jnp.float64)


def _shape_of(x):
    return tuple(np.shape(x)) if V.is_concrete(x) else tuple(x.shape)


def _check_obs(obs, m_models, k, name="obs"):
    """Checks an observation family's shapes (always) and values (when concrete); returns m."""
    if isinstance(obs, GaussianObs):
        V.check_floating(f"{name}.means", obs.means)
        shape = _shape_of(obs.means)
        if len(shape) != 3 or shape[:2] != (m_models, k):
            raise ValueError(f"{name}.means must have shape (M, K, m) = ({m_models}, {k}, m), got {shape}")
        V.check_finite(f"{name}.means", obs.means)
        V.check_positive(f"{name}.sigma", obs.sigma)
        return shape[2]
    if isinstance(obs, BernoulliObs):
        V.check_floating(f"{name}.probs", obs.probs)
        shape = _shape_of(obs.probs)
        if len(shape) != 3 or shape[:2] != (m_models, k):
            raise ValueError(f"{name}.probs must have shape (M, K, m) = ({m_models}, {k}, m), got {shape}")
        if V.is_concrete(obs.probs):
            probs = np.asarray(obs.probs)
            if not np.all((probs > 0) & (probs < 1)):
                raise ValueError(
                    f"{name}.probs must lie strictly between 0 and 1 (a 0 or 1 makes the KL divergence "
                    f"infinite), got values in [{probs.min()}, {probs.max()}]"
                )
        return shape[2]
    raise ValueError(f"{name} must be a GaussianObs or BernoulliObs, got {type(obs).__name__}")


def _cast_obs(obs, dtype, name="obs"):
    """``obs`` in ``dtype``, checked again there: a probability that rounds to 0 or 1, or a
    sigma whose square underflows, in the working precision makes the KL infinite."""
    if isinstance(obs, GaussianObs):
        out = GaussianObs(means=jnp.asarray(obs.means, dtype), sigma=jnp.asarray(obs.sigma, dtype))
        if V.is_concrete(out.sigma):
            sig = np.asarray(out.sigma)
            with np.errstate(divide="ignore", over="ignore", under="ignore"):
                bad = not np.all(np.isfinite(1.0 / sig**2))
            if bad:
                raise ValueError(f"{name}.sigma must have a square that is positive and finite in {np.dtype(dtype).name} "
                                 f"(1/sigma^2 is the KL's scale), got sigma in [{sig.min()}, {sig.max()}]")
        return out
    out = BernoulliObs(probs=jnp.asarray(obs.probs, dtype))
    if V.is_concrete(out.probs):
        probs = np.asarray(out.probs)
        if not np.all((probs > 0) & (probs < 1)):
            raise ValueError(f"{name}.probs must lie strictly between 0 and 1 in {np.dtype(dtype).name} (the "
                             f"given values round to [{probs.min()}, {probs.max()}]; a 0 or 1 makes the KL "
                             "divergence infinite)")
    return out


def finite_class(rewards, obs: ObsFamily, *, obs_mask=None, true_model=0, linear_model=None,
                 dtype=None) -> FiniteEnvParams:
    """An instance from explicit arrays (NumPy or JAX; traced arrays are accepted, e.g. under
    ``jax.vmap``, and then only their shapes are checked).

    Args:
      rewards: (M, K) reward table r_g(pi), M >= 2 models, K >= 2 actions.
      obs: :class:`GaussianObs` (means (M, K, m), sigma > 0) or :class:`BernoulliObs`
        (probs (M, K, m) in (0, 1)).
      obs_mask: optional (K, m) bool; default all True.
      true_model: the index of f* in the class (int), or a tuple ``(rewards (K,), obs)`` with
        ``obs`` of the same family and shape (K, m) for an f* outside the class.
      linear_model: optional linear view (see :class:`FiniteModel`).
      dtype: float dtype (default: float64 if x64 is enabled, else float32).

    Returns:
      FiniteEnvParams.
    """
    if isinstance(rewards, (list, tuple)):
        rewards = np.asarray(rewards, np.float64)
    V.check_floating("rewards", rewards)
    shape = _shape_of(rewards)
    if len(shape) != 2:
        raise ValueError(f"rewards must have shape (M, K), got {shape}")
    m_models, k = shape
    if m_models < 2:
        raise ValueError(f"rewards must have M >= 2 rows (models), got M={m_models}")
    if k < 2:
        raise ValueError(f"rewards must have K >= 2 columns (actions), got K={k}")
    V.check_finite("rewards", rewards)
    m = _check_obs(obs, m_models, k)
    if obs_mask is None:
        obs_mask = np.ones((k, m), bool)
    V.check_shape("obs_mask", obs_mask, (k, m))
    dtype = _default_dtype(dtype)
    obs = _cast_obs(obs, dtype)
    model = FiniteModel(rewards=jnp.asarray(rewards, dtype), obs=obs,
                        obs_mask=jnp.asarray(obs_mask, bool), linear=linear_model)
    if isinstance(true_model, tuple):
        true_rewards, true_obs = true_model
        V.check_shape("true_model rewards", true_rewards, (k,))
        if type(true_obs) is not type(obs):
            raise ValueError(f"true_model obs must be a {type(obs).__name__} like obs, got {type(true_obs).__name__}")
        lifted = jax.tree_util.tree_map(lambda x: x[None] if jnp.ndim(x) == 2 else x, true_obs)
        _check_obs(lifted, 1, k, name="true_model obs")
        true_obs = _cast_obs(true_obs, dtype, name="true_model obs")
        if (isinstance(obs, GaussianObs) and V.is_concrete(true_obs.sigma) and V.is_concrete(obs.sigma)
                and not np.allclose(np.asarray(true_obs.sigma), np.asarray(obs.sigma))):
            raise ValueError("true_model obs.sigma must equal the class's known sigma")
        index = -1
        true_rewards = jnp.asarray(true_rewards, dtype)
    else:
        index = V.check_int("true_model", true_model, minimum=0)
        if index >= m_models:
            raise ValueError(f"true_model must be < M={m_models}, got {index}")
        true_rewards, true_obs = model_at(model, index)
    return FiniteEnvParams(model=model, true_rewards=true_rewards, true_obs=true_obs,
                           true_index=jnp.asarray(index, jnp.int32))


def _check_sizes(num_actions, num_models):
    V.check_int("num_actions", num_actions, minimum=2)
    V.check_int("num_models", num_models, minimum=2)


def _uniform(key, shape):
    """U[0, 1) draws generated in float32 whatever the x64 flag (the builders cast them and
    compute in their dtype), so an instance does not depend on the precision it is run in
    beyond that precision's rounding (traceable: the builders vmap over keys)."""
    return jax.random.uniform(key, shape, jnp.float32)


def _linear_view(rewards, obs_matrices, obs_mask, sigma, dtype):
    """The class as a linear model (phi_pi = e_pi, f = r_g) for the linear baselines; its
    radius is max_g ||r_g|| (known from the class). Traceable."""
    k = rewards.shape[1]
    eye = jnp.eye(k, dtype=dtype)
    radius = jnp.max(jnp.linalg.norm(jnp.asarray(rewards, dtype), axis=1))
    return assemble_model(eye, jnp.asarray(obs_matrices, dtype), jnp.asarray(obs_mask, bool), sigma, k, radius)


def _gaussian_bandit(means, sigma, true_model, dtype):
    """K-armed Gaussian bandit class: action pi observes N(r_g(pi), sigma^2).

    ``true_model`` is an index, or a (K,) mean vector for an f* outside the class.
    """
    k = means.shape[1]
    if not isinstance(true_model, (int, np.integer)):
        vec = jnp.asarray(true_model)
        V.check_shape("true_model", vec, (k,), what="an index or a (K,) mean vector")
        true_model = (vec, GaussianObs(vec[:, None], sigma))
    params = finite_class(means, GaussianObs(means[:, :, None], sigma), true_model=true_model, dtype=dtype)
    dt = params.true_rewards.dtype
    eye = jnp.eye(k, dtype=dt)
    view = _linear_view(params.model.rewards, eye[:, None, :], jnp.ones((k, 1), bool), sigma, dt)
    return params._replace(model=params.model._replace(linear=view))


def multi_armed_bandit_class(key: jax.Array, num_actions: int, num_models: int, *, sigma: float = 1.0,
                             true_model=0, dtype=None) -> FiniteEnvParams:
    """K-armed Gaussian bandit whose class is M random mean vectors.

    The mean vectors are i.i.d. uniform on [0, 1]^K (so every gap is <= 1, the setting of
    Table 1); action pi observes N(r_g(pi), sigma^2).

    Args:
      key: PRNG key for the mean vectors (``jax.vmap`` over keys gives a batch of classes).
      num_actions: K >= 2.
      num_models: M >= 2.
      sigma: known noise standard deviation (> 0).
      true_model: index of f* in the class (default 0), or a (K,) mean vector.
      dtype: float dtype.

    Returns:
      FiniteEnvParams with a linear view (radius max_g ||r_g||).
    """
    _check_sizes(num_actions, num_models)
    V.check_positive("sigma", sigma)
    dtype = _default_dtype(dtype)
    return _gaussian_bandit(_uniform(key, (num_models, num_actions)).astype(dtype), sigma, true_model, dtype)


def multi_armed_bandit_grid(num_actions: int, levels, *, sigma: float = 1.0, true_model=0,
                            dtype=None) -> FiniteEnvParams:
    """K-armed Gaussian bandit whose class is every mean vector on a grid.

    Args:
      num_actions: K >= 2.
      levels: the values each arm's mean may take (at least 2); the class has
        len(levels)^K models, ordered lexicographically (last arm fastest).
      sigma: known noise standard deviation (> 0).
      true_model: index of f* in the class, or a (K,) mean vector off the grid.
      dtype: float dtype.
    """
    V.check_int("num_actions", num_actions, minimum=2)
    levels = np.asarray(levels, np.float64).reshape(-1)
    if levels.size < 2:
        raise ValueError(f"levels must hold at least 2 values, got {levels.size}")
    V.check_positive("sigma", sigma)
    grid = np.stack(np.meshgrid(*([levels] * num_actions), indexing="ij"), -1).reshape(-1, num_actions)
    return _gaussian_bandit(grid, sigma, true_model, dtype)


def revealing_class(key: jax.Array, num_actions: int, num_models: int, *, sigma: float = 1.0,
                    reward_range=(0.5, 1.0), revealing_reward: float = 0.0, gain: float = 1.0,
                    true_model: int = 0, dtype=None) -> FiniteEnvParams:
    """The finite analogue of the paper's revealing action (Appendix 'Experiments').

    Actions 0, ..., K-2 are ordinary arms: under model g, arm pi has reward r_g(pi), drawn
    i.i.d. uniform on ``reward_range``, and observes N(r_g(pi), sigma^2). The last action
    pi_hat = K-1 is informative but costly: its reward is ``revealing_reward`` under every
    model (below every ordinary arm, so it is never optimal) and it observes the whole reward
    vector at once, amplified by ``gain``: N(gain * r_g, sigma^2 I_K) (equivalently, r_g with
    noise sigma / gain). Its information is gain^2 times the sum of the ordinary arms'
    informations, I_f(pi_hat, g) = gain^2 ||r_g - r_f||^2 / (2 sigma^2), at a regret of at
    least ``reward_range[0] - revealing_reward`` per play.

    No model makes pi_hat optimal, yet the linear-view UCB and TS do play it, rarely (their
    confidence sets are larger than the class). E2D plays it when the information is worth
    the regret, which is the effect the paper's Experiment 2 shows.

    Args:
      key: PRNG key for the reward table (``jax.vmap`` over keys gives a batch of classes).
      num_actions: K >= 3 (K-1 ordinary arms and pi_hat).
      num_models: M >= 2.
      sigma: known noise standard deviation (> 0).
      reward_range: (low, high) of the ordinary arms' rewards, ``revealing_reward < low < high``.
      revealing_reward: the reward of pi_hat.
      gain: >= 1, the amplification of pi_hat's observation (1: the paper's revealing action).
      true_model: index of f*.
      dtype: float dtype.

    Returns:
      FiniteEnvParams with m = K observation coordinates and a linear view (the revealing
      semi-bandit with phi_pi = e_pi and M_pi_hat = gain * I_K, radius max_g ||r_g||).
    """
    V.check_int("num_actions", num_actions, minimum=3)
    V.check_int("num_models", num_models, minimum=2)
    V.check_positive("sigma", sigma)
    lo, hi = (float(x) for x in reward_range)
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"reward_range must be (low, high) with low < high, got {reward_range}")
    if not revealing_reward < lo:
        raise ValueError(f"revealing_reward must be < reward_range[0]={lo}, got {revealing_reward}")
    V.check_positive("gain", gain)
    if gain < 1:
        raise ValueError(f"gain must be >= 1 (the reward must be observed, Example 2.2), got {gain}")
    k = num_actions
    dtype = _default_dtype(dtype)
    u = _uniform(key, (num_models, k - 1)).astype(dtype)
    rewards = jnp.concatenate([lo + (hi - lo) * u, jnp.full((num_models, 1), revealing_reward, u.dtype)], axis=1)
    rev = k - 1
    obs_mask = np.zeros((k, k), bool)
    obs_mask[:, 0] = True
    obs_mask[rev, :] = True
    is_rev = (np.arange(k) == rev)[None, :, None]
    first = (np.arange(k) == 0)[None, None, :]
    means = jnp.where(is_rev, gain * rewards[:, None, :], jnp.where(first, rewards[:, :, None], 0.0))
    params = finite_class(rewards, GaussianObs(means, sigma), obs_mask=obs_mask, true_model=true_model,
                          dtype=dtype)
    dt = params.true_rewards.dtype
    eye = np.eye(k)
    obs_matrices = np.zeros((k, k, k))
    obs_matrices[:, 0, :] = eye
    obs_matrices[rev] = gain * eye
    view = _linear_view(params.model.rewards, obs_matrices, obs_mask, sigma, dt)
    return params._replace(model=params.model._replace(linear=view))


def bernoulli_bandit_class(key: jax.Array, num_actions: int, num_models: int, *, low: float = 0.05,
                           high: float = 0.95, true_model: int = 0, dtype=None) -> FiniteEnvParams:
    """K-armed Bernoulli bandit: M probability vectors i.i.d. uniform on [low, high]^K.

    Action pi observes Bernoulli(r_g(pi)); the reward is the success probability. ``key`` may
    be a batch under ``jax.vmap``.
    """
    _check_sizes(num_actions, num_models)
    if not 0 < low < high < 1:
        raise ValueError(f"low and high must satisfy 0 < low < high < 1, got low={low}, high={high}")
    dtype = _default_dtype(dtype)
    u = _uniform(key, (num_models, num_actions)).astype(dtype)
    probs = low + (high - low) * u
    return finite_class(probs, BernoulliObs(probs[:, :, None]), true_model=true_model, dtype=dtype)
