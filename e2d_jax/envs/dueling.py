"""Linear duelling bandits: partial monitoring in which no action observes its own reward.

The learner picks an ordered pair (a, b) of base arms x_1, ..., x_k in R^d. The pair's reward
is <x_a + x_b, f*> (the value of both arms played), what it observes is the duel's outcome
<x_a - x_b, f*> + sigma xi: the preference feedback that ranking and RLHF collect. A pair action
has features phi_(a,b) = x_a + x_b and the one-row observation map M_(a,b) = (x_a - x_b)^T; the
self-duel (a, a) observes nothing but noise (M = 0). So phi_pi phi_pi^T <= M_pi^T M_pi (the
paper's Example 'Linear Bandits with Side-Observations') fails for every action, and the game
is only *globally* observable (:func:`e2d_jax.envs.linear.observability`): every reward
difference phi_(a,b) - phi_(c,d) = (x_a - x_c) + (x_b - x_d) is a sum of observed directions.

This is where optimism fails. UCB and Thompson sampling rank actions by their (optimistic or
sampled) reward, and the best reward is a self-duel (a*, a*), which reveals nothing: once they
settle there they learn nothing more, and their regret grows linearly. The E2D agents weigh
what a pair reveals against what it costs and keep playing informative pairs.

Builders (the conventions of the authors' code, kirschnj/pm-ids, branch e2d, ``random_dueling``
and ``localized_dueling`` in ``pm/main.py``):

* :func:`random_dueling` - k base arms with i.i.d. N(0, 1) entries (optionally normalised to the unit
  sphere), f* = e_1, all k^2 ordered pairs (pair (a, b) is action a k + b). With k > d the
  differences span R^d, so every reward is learnable through differences; with k <= d only the
  differences are (then use gaps Delta: ``gap_type="delta"``).
* :func:`localized_dueling` - the base arms e_1, ..., e_d, f* = e_1 + (1 - min_gap) e_d, the
  d - 1 neighbour pairs (i, i + 1) and the d self-duels: the optimal action (1, 1) reveals
  nothing, each neighbour pair one difference, and the reward level itself is never observed
  (gaps Delta only).
* :func:`from_base_arms` - the pairs of given base arms (the authors' instance of a seed).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from e2d_jax import _checks as V
from e2d_jax.envs.linear import LinearEnvParams, assemble_model, default_dtype, linear_side_observation


def pairs(base):
    """The k^2 ordered pairs of base arms ``base`` (k, d): (features (k^2, d), observation maps
    (k^2, 1, d)); pair (a, b) is row a k + b, with phi = x_a + x_b and M = (x_a - x_b)^T."""
    k = base.shape[0]
    first, second = np.repeat(np.arange(k), k), np.tile(np.arange(k), k)
    return base[first] + base[second], (base[first] - base[second])[:, None, :]


def check_base_arms(base, theta=None):
    """``(base, theta)`` as float64 arrays: ``base`` (k, d) with k >= 2 finite base arms, ``theta``
    (default e_1); a ValueError naming the argument otherwise (theta's shape and finiteness are
    checked with the instance, :func:`e2d_jax.envs.linear.linear_side_observation`)."""
    base = np.asarray(base, np.float64)
    if base.ndim != 2 or base.shape[0] < 2:
        raise V.ArgumentError("base", f"{V.name('base')} must have shape (k, d) with k >= 2 base arms, got {base.shape}")
    V.check_finite("base", base)
    theta = np.eye(base.shape[1])[0] if theta is None else np.asarray(theta, np.float64)
    return base, theta


def pair_of(action, num_arms: int):
    """The base arms (a, b) of pair action ``action`` of :func:`random_dueling` (ints or arrays)."""
    return action // num_arms, action % num_arms


def random_dueling(key: jax.Array, d: int, num_arms: int, *, normalize: bool = False, sigma: float = 1.0,
            dtype=None) -> LinearEnvParams:
    """The linear duelling bandit with random base arms (the authors' ``random_dueling``).

    Args:
      key: PRNG key for the base arms (a batch of keys under ``jax.vmap`` gives a batch).
      d: dimension (>= 1).
      num_arms: k base arms (>= 2); the game has K = k^2 pair actions.
      normalize: scale each base arm to unit norm (the authors' normalize_actions option).
      sigma: noise standard deviation of a duel's outcome (> 0).
      dtype: float dtype (default float64 under x64, else float32); the draw is made in
        float32 and cast, so the instance depends on its key only.

    Returns:
      LinearEnvParams with K = k^2 actions, one observation row each, f* = e_1 and
      ``model.radius`` = 1. The observable span has dimension min(d, k - 1) (base arms in
      general position, which holds with probability 1).
    """
    V.check_int("d", d, minimum=1)
    V.check_int("num_arms", num_arms, minimum=2)
    V.check_positive("sigma", sigma)
    dtype = default_dtype(dtype)
    base = jax.random.normal(key, (num_arms, d), dtype=jnp.float32).astype(dtype)
    if normalize:
        base = base / jnp.linalg.norm(base, axis=-1, keepdims=True)
    features, obs = pairs(base)
    mask = jnp.ones((num_arms * num_arms, 1), bool)
    model = assemble_model(features, obs, mask, sigma, min(d, num_arms - 1), 1.0)
    return LinearEnvParams(model=model, theta=jnp.zeros((d,), dtype).at[0].set(1.0))


def from_base_arms(base, theta=None, *, sigma: float = 1.0, radius=None, dtype=None) -> LinearEnvParams:
    """The duelling game of given base arms (all k^2 ordered pairs, as :func:`random_dueling`),
    e.g. the arms of the authors' ``random_dueling`` instance, ``np.random.seed(seed);
    np.random.normal(size=d * k).reshape(k, d)``.

    Args:
      base: (k, d) base arms, k >= 2, finite.
      theta: (d,) f* (default e_1).
      sigma: noise standard deviation of a duel's outcome (> 0).
      radius: the known bound on ||f*|| (default ||theta||).
      dtype: float dtype (default float64 under x64, else float32).

    The game is checked for global observability (:func:`e2d_jax.envs.linear.observability`).
    """
    base, theta = check_base_arms(base, theta)
    features, obs = pairs(base)
    return linear_side_observation(features, obs, theta, sigma=sigma, obs_mask=np.ones(obs.shape[:2], bool),
                                   radius=radius, dtype=default_dtype(dtype))


def localized_dueling(d: int = 3, *, min_gap: float = 0.1, sigma: float = 1.0, dtype=None) -> LinearEnvParams:
    """The localized duelling bandit (the authors' ``localized_dueling``): base arms e_1..e_d,
    f* = e_1 + (1 - min_gap) e_d; actions the d - 1 neighbour pairs (i, i + 1) (phi = e_i +
    e_{i+1}, M = (e_i - e_{i+1})^T), then the d self-duels (phi = 2 e_i, M = 0). The optimal
    action is the self-duel of arm 1 (reward 2), which observes nothing. ``model.radius`` is
    ||f*||.

    Args:
      d: number of base arms and dimension (>= 2); K = 2 d - 1 actions.
      min_gap: f*'s last coordinate is 1 - min_gap (0 < min_gap < 1).
      sigma: noise standard deviation (> 0).
      dtype: as in :func:`random_dueling`.
    """
    V.check_int("d", d, minimum=2)
    V.check_positive("min_gap", min_gap)
    if not float(min_gap) < 1.0:
        raise V.ArgumentError("min_gap", f"{V.name('min_gap')} must be < 1, got {min_gap!r}")
    V.check_positive("sigma", sigma)
    dtype = default_dtype(dtype)
    eye = np.eye(d)
    features = np.concatenate([eye[:-1] + eye[1:], 2.0 * eye])
    obs = np.concatenate([eye[:-1] - eye[1:], np.zeros((d, d))])[:, None, :]
    theta = np.zeros(d)
    theta[0], theta[-1] = 1.0, 1.0 - float(min_gap)
    model = assemble_model(jnp.asarray(features, dtype), jnp.asarray(obs, dtype), jnp.ones((2 * d - 1, 1), bool),
                           sigma, d - 1, float(np.linalg.norm(theta)))
    return LinearEnvParams(model=model, theta=jnp.asarray(theta, dtype))


def informative(params: LinearEnvParams, actions) -> jax.Array:
    """Whether each action played observes anything (a non-zero observation map): for duelling,
    a pair of two different arms rather than a self-duel. ``actions`` any int array."""
    nonzero = jnp.any(params.model.obs_matrices != 0, axis=(-2, -1))
    return nonzero[jnp.asarray(actions)]
