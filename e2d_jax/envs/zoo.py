"""Instances the paper argues from, and partial-monitoring games, as named builders.

Linear models with side observations (the arrays of the authors' code, pm-ids, branch e2d):

* :func:`end_of_optimism` - Lattimore and Szepesvari's "The end of optimism?" (2017): three
  actions in R^2, phi = M = [(1, 0), (1 - eps, 8 alpha eps), (0, 1)], f* = (1, 0). The second
  action is eps-suboptimal; the third, with gap 1, is the one that tells the first two apart
  cheaply. Optimistic algorithms (UCB, TS) discard it and pay ~ log(n) / eps for telling them
  apart; an algorithm that plays it pays ~ log(n) times a constant (the asymptotically optimal
  rate depends on the structure, not only on the gaps).
* :func:`hard_semi_bandit` - the revealing action has zero reward: phi_0 = 0, phi_i = e_i
  (i = 1..d), f* = 1 / sqrt(d) + (d / 31) e_2; action 0 observes every other action's reward,
  action i its own.
* :func:`large_gaps` - a bandit with large gaps in R^2 (K = 4).
* :func:`heteroscedastic` - observation noise that differs between actions: 2^d unit sign
  vectors b twice, the first copy paying b . f* with noise sigma / rho, the second paying
  (1 - eps) b . f* with noise sigma (the authors' ``noise_example`` with rho_i = rho);
  f* uniform on the sphere.
* :func:`simple_bandit` - a linear bandit with i.i.d. N(0, 1) features (not normalised) and
  f* = e_1, as the authors' code draws it.
* :func:`laser` - the authors' ``laser`` game: an unknown function on [-1, 1]^2 in the span of
  25 Gaussian bumps on a 5 x 5 grid (f* = the 19th bump); 9 invasive measurements (no reward;
  observe the function at the 9 points of a 3 x 3 stencil shifted by the action) and 9
  integrated ones (reward and observation: the stencil's mean). Their variant in which the
  integrated measurements observe nothing (their laser_indirect option) is not built: its observations
  span R^25 only up to a condition number of about 10^10 (ΣG's eigenvalues), below the
  tolerance of :func:`e2d_jax.envs.linear.observability`, which refuses it.

Finite partial-monitoring games (finite classes over a grid of outcome distributions; the
true model is one of them, drawn from the key):

* :func:`apple_tasting` - accept (observe the apple: reward 1 if good) or reject (reward 1 if
  bad, observe nothing). Locally observable: minimax regret Theta(sqrt(n)).
* :func:`label_efficient` - predict 0, predict 1 (reward 1 if right, observe nothing) or query
  (reward 0, observe the outcome). Globally but not locally observable: minimax regret
  Theta(n^(2/3)).
* :func:`dynamic_pricing` - post one of K prices; a buyer with a random valuation v buys when
  v is at least the price p; the loss is the buyer's surplus v - p left on the table when
  it buys, and a constant c when it does not; the seller observes only whether it sold.
  Globally but not locally observable: minimax regret Theta(n^(2/3)).

(The classification and the rates: Bartok, Foster, Pal, Rakhlin and Szepesvari, "Partial
monitoring - classification, regret bounds, and algorithms", 2014; Lattimore and Szepesvari,
"Bandit Algorithms", 2020, Chapter 37.)

Every builder takes a key first (the fixed instances ignore it) and is traceable in it.
"""
from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

from e2d_jax import _checks as V
from e2d_jax.envs.finite import BernoulliObs, FiniteEnvParams, finite_class
from e2d_jax.envs.linear import LinearEnvParams, assemble_model, linear_side_observation

#: Observability and minimax rate of each game (for tables and figures).
OBSERVABILITY = {
    "apple-tasting": ("locally observable", "sqrt(n)"),
    "label-efficient": ("globally, not locally observable", "n^(2/3)"),
    "dynamic-pricing": ("globally, not locally observable", "n^(2/3)"),
}


def _dtype(dtype):
    return jnp.dtype(dtype) if dtype is not None else jax.dtypes.canonicalize_dtype(jnp.float64)


def _bandit(features, theta, sigma, radius, dtype):
    """A linear bandit (M_pi = phi_pi^T) from concrete arrays."""
    features = np.asarray(features, np.float64)
    return linear_side_observation(features, features[:, None, :], np.asarray(theta, np.float64), sigma=sigma,
                                   radius=radius, dtype=_dtype(dtype))


def end_of_optimism(key=None, *, eps: float = 0.01, alpha: float = 1.0, sigma: float = 1.0, dtype=None) -> LinearEnvParams:
    """The end-of-optimism instance (see the module docstring); ``key`` is ignored.

    Args:
      eps: the second action's gap (0 < eps < 1).
      alpha: scales the second action's second coordinate, 8 alpha eps.
      sigma: noise standard deviation.
    """
    del key
    V.check_positive("eps", eps)
    V.check_positive("alpha", alpha)
    if not float(eps) < 1:
        raise ValueError(f"eps must be in (0, 1), got {eps}")
    features = np.array([[1.0, 0.0], [1.0 - eps, 8.0 * alpha * eps], [0.0, 1.0]])
    return _bandit(features, [1.0, 0.0], sigma, 1.0, dtype)


def hard_semi_bandit(key=None, *, d: int = 3, sigma: float = 1.0, dtype=None) -> LinearEnvParams:
    """The hard semi-bandit (see the module docstring); ``key`` is ignored. K = d + 1."""
    del key
    d = V.check_int("d", d, minimum=2)
    features = np.vstack([np.zeros((1, d)), np.eye(d)])
    theta = np.full(d, 1.0 / np.sqrt(d))
    theta[1] += d / 31.0
    k = d + 1
    obs = np.zeros((k, k, d))
    obs[0, 1:] = np.eye(d)  # action 0 observes every other action's reward
    for i in range(1, k):
        obs[i, 0] = features[i]
    mask = np.zeros((k, k), bool)
    mask[0, 1:] = True
    mask[1:, 0] = True
    # Action 0's reward (always 0) is not observed; the observation condition holds since phi_0 = 0.
    return linear_side_observation(features, obs, theta, sigma=sigma, obs_mask=mask, radius=float(np.linalg.norm(theta)),
                                   dtype=_dtype(dtype))


def large_gaps(key=None, *, sigma: float = 1.0, dtype=None) -> LinearEnvParams:
    """A linear bandit in R^2 with large gaps (K = 4); ``key`` is ignored."""
    del key
    features = np.array([[0.97, 0.23], [0.09, -0.9], [-0.09, 0.9], [-0.8, 0.5]])
    return _bandit(features, [1.0, 0.0], sigma, 1.0, dtype)


def laser(key=None, *, sigma: float = 1.0, dtype=None) -> LinearEnvParams:
    """The authors' ``laser`` game (see the module docstring): d = 25, K = 18 (9 invasive
    measurements, then 9 integrated ones), observation maps of 9 rows (padded)."""
    del key
    V.check_positive("sigma", sigma)
    grid = np.arange(-1.0, 1.1, 0.5)
    centres = np.array(np.meshgrid(grid, grid)).T.reshape(-1, 2)  # (25, 2): the bumps
    stencil = np.array(np.meshgrid([-0.5, 0.0, 0.5], [-0.5, 0.0, 0.5])).T.reshape(-1, 2)  # (9, 2)
    bumps = lambda points: np.exp(-((points[:, None, :] - centres[None]) ** 2).sum(-1))  # noqa: E731
    invasive = np.stack([bumps(stencil + x) for x in stencil])  # (9, 9, 25): the function at the stencil
    integrated = np.stack([bumps(stencil + x).mean(0) for x in stencil])  # (9, 25): the stencil's mean
    features = np.concatenate([np.zeros((9, centres.shape[0])), integrated])
    own = np.zeros((9, 9, centres.shape[0]))
    own[:, 0] = integrated
    obs = np.concatenate([invasive, own])
    mask = np.concatenate([np.ones((9, 9), bool), np.zeros((9, 9), bool)])
    mask[9:, 0] = True
    theta = np.zeros(centres.shape[0])
    theta[18] = 1.0
    return linear_side_observation(features, obs, theta, sigma=sigma, obs_mask=mask, dtype=_dtype(dtype))


def _sign_vectors(d):
    b = np.array(list(itertools.product([-1.0, 1.0], repeat=d)))
    return b / np.linalg.norm(b, axis=1, keepdims=True)


def heteroscedastic(key, *, d: int = 3, rho: float = 0.5, eps: float = 0.1, sigma: float = 1.0,
                    dtype=None) -> LinearEnvParams:
    """Two copies of the 2^d unit sign vectors b (K = 2^(d+1)): the first pays b . f* and is
    observed with noise sigma / rho, the second pays (1 - eps) b . f* and is observed with
    noise sigma. f* is uniform on the unit sphere (drawn from ``key``; traceable).

    Built as a model of noise sigma / rho in which the second copy's observation map is
    b / rho (so its reward is observed with noise sigma, as the paper's assumption
    phi phi^T <= M^T M requires)."""
    d = V.check_int("d", d, minimum=1)
    V.check_positive("rho", rho)
    if not float(rho) <= 1:
        raise ValueError(f"rho must be in (0, 1] (the first copy is the noisier one), got {rho}")
    if not 0 <= float(eps) < 1:
        raise ValueError(f"eps must be in [0, 1), got {eps}")
    V.check_positive("sigma", sigma)
    dtype = _dtype(dtype)
    b = _sign_vectors(d)
    features = jnp.asarray(np.vstack([b, (1.0 - eps) * b]), dtype)
    obs = jnp.asarray(np.vstack([b, b / rho])[:, None, :], dtype)
    x = jax.random.normal(key, (d,), dtype=jnp.float32).astype(dtype)
    theta = x / jnp.linalg.norm(x)
    model = assemble_model(features, obs, jnp.ones((features.shape[0], 1), bool), sigma / rho, d, 1.0)
    return LinearEnvParams(model=model, theta=theta)


def simple_bandit(key, *, d: int = 3, arms: int = 10, sigma: float = 1.0, dtype=None) -> LinearEnvParams:
    """A linear bandit with i.i.d. N(0, 1) features (not normalised; drawn from ``key``) and
    f* = e_1, as the authors' code draws its ``simple_bandit`` (traceable)."""
    d = V.check_int("d", d, minimum=1)
    arms = V.check_int("arms", arms, minimum=2)
    V.check_positive("sigma", sigma)
    dtype = _dtype(dtype)
    features = jax.random.normal(key, (arms, d), dtype=jnp.float32).astype(dtype)
    theta = jnp.zeros((d,), dtype).at[0].set(1.0)
    model = assemble_model(features, features[:, None, :], jnp.ones((arms, 1), bool), sigma, min(d, arms), 1.0)
    return LinearEnvParams(model=model, theta=theta)


# --------------------------------------------------------------------------------------
# Partial-monitoring games


def _grid(low: float, high: float, num: int) -> np.ndarray:
    return np.linspace(low, high, num)


def _game(key, rewards, probs, mask, dtype) -> FiniteEnvParams:
    """A finite class with Bernoulli observations whose true model is drawn from ``key``
    (traceable): every model of the class is a candidate."""
    dtype = _dtype(dtype)
    params = finite_class(rewards, BernoulliObs(probs), obs_mask=mask, true_model=0, dtype=dtype)
    index = jax.random.randint(key, (), 0, rewards.shape[0])
    model = params.model
    return FiniteEnvParams(model=model, true_rewards=model.rewards[index],
                           true_obs=BernoulliObs(model.obs.probs[index]), true_index=index.astype(jnp.int32))


def apple_tasting(key, *, models: int = 19, dtype=None) -> FiniteEnvParams:
    """Apple tasting over a grid of ``models`` probabilities q of a good apple in [0.05, 0.95].

    Actions: 0 accept (reward q; observes whether the apple was good), 1 reject (reward 1 - q;
    observes nothing). Locally observable: minimax regret Theta(sqrt(n))."""
    models = V.check_int("models", models, minimum=2)
    q = _grid(0.05, 0.95, models)
    rewards = np.stack([q, 1.0 - q], axis=1)
    probs = np.stack([q, np.full_like(q, 0.5)], axis=1)[:, :, None]  # reject's coordinate is masked
    mask = np.array([[True], [False]])
    return _game(key, rewards, probs, mask, dtype)


def label_efficient(key, *, models: int = 19, dtype=None) -> FiniteEnvParams:
    """Label-efficient prediction over a grid of ``models`` probabilities q of outcome 1 in
    [0.05, 0.95].

    Actions: 0 predict 0 (reward 1 - q), 1 predict 1 (reward q), neither observing anything;
    2 query (reward 0; observes the outcome). Globally but not locally observable: minimax
    regret Theta(n^(2/3))."""
    models = V.check_int("models", models, minimum=2)
    q = _grid(0.05, 0.95, models)
    rewards = np.stack([1.0 - q, q, np.zeros_like(q)], axis=1)
    probs = np.stack([np.full_like(q, 0.5), np.full_like(q, 0.5), q], axis=1)[:, :, None]
    mask = np.array([[False], [False], [True]])
    return _game(key, rewards, probs, mask, dtype)


def dynamic_pricing(key, *, prices: int = 4, levels: int = 4, smoothing: float = 0.1, no_sale: float = 1.0,
                    dtype=None) -> FiniteEnvParams:
    """Dynamic pricing: K = ``prices`` prices 1/K, 2/K, ..., 1; a buyer's valuation v takes one
    of the K + 1 values 0, 1/K, ..., 1 with a distribution from a grid (every distribution
    whose probabilities are multiples of 1 / ``levels``, mixed with ``smoothing`` of the
    uniform so that no sale probability is 0 or 1). The loss of price p is v - p when the
    buyer buys (v >= p) and ``no_sale`` (c) when not; the reward is minus the loss. The seller
    observes whether the buyer bought. Globally but not locally observable: minimax regret
    Theta(n^(2/3))."""
    k = V.check_int("prices", prices, minimum=2)
    levels = V.check_int("levels", levels, minimum=1)
    if not 0 < float(smoothing) < 1:
        raise ValueError(f"smoothing must be in (0, 1), got {smoothing}")
    price = np.arange(1, k + 1) / k
    compositions = [c for c in itertools.product(range(levels + 1), repeat=k + 1) if sum(c) == levels]
    dist = (1 - smoothing) * np.asarray(compositions, np.float64) / levels + smoothing / (k + 1)  # P(v = j / K)
    sell = np.cumsum(dist[:, ::-1], axis=1)[:, ::-1][:, 1:]  # P(v >= price_i), i = 1..K
    values = np.arange(0, k + 1) / k
    loss = np.where(values[None, :] >= price[:, None] - 1e-12, values[None, :] - price[:, None], no_sale)  # (K, K+1)
    rewards = -dist @ loss.T
    return _game(key, rewards, sell[:, :, None], np.ones((k, 1), bool), dtype)
