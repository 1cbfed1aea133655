"""Linear bandits with side observations (the paper's examples of Section 2; Appendix E, 'Experiments').

A model class is a set of features phi_pi (rows of ``features``, K x d) and observation maps
M_pi (m_pi x d). Playing pi under the true parameter f* gives the reward <phi_pi, f*> (never
observed directly) and the observation ``y = M_pi f* + sigma * xi`` with xi ~ N(0, I_{m_pi}).

Observation maps of different sizes are stored padded to a common m rows: rows past m_pi are
zero in ``obs_matrices`` and ``False`` in ``obs_mask``, and the padded observation entries are
exactly 0. Zero rows change nothing downstream: they add nothing to the Gram matrices
G_pi = M_pi^T M_pi, to the ridge statistics, or to the divergence ||M_pi (g - f)||^2, so the
padded form is exact and keeps every shape static for ``lax.scan`` and ``vmap``.

Builders:
  * :func:`semi_bandit` - the paper's experiments: reward-observing actions plus one
    *suboptimal* revealing action whose observation is the whole vector Phi f* + noise
    (the paper writes the noise as I_d; it is I_K, one coordinate per action).
  * :func:`linear_bandit` - M_pi = phi_pi^T.
  * :func:`multi_armed_bandit` - phi_pi = e_pi, d = K.
  * :func:`linear_side_observation` - any features and observation maps given as arrays.

Random instances (documented distribution): features are i.i.d. uniform on the unit sphere
S^{d-1}; f* is uniform on the unit sphere, so every mean reward lies in [-1, 1] and
||f*|| = 1; the revealing action is uniform among the suboptimal actions. For the
multi-armed bandit the means f*_pi are i.i.d. uniform on [0, 1].

All builders are pure functions of an explicit key with static sizes, so they can be
``vmap``-ed over keys to make a batch of instances.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from e2d_jax import _linalg
from e2d_jax import _checks as V
from e2d_jax.types import Environment


# --------------------------------------------------------------------------------------
# The observable span (computed once per instance by the builders below)


class ObservableSpan(NamedTuple):
    """The model class in an orthonormal basis U of the observable span S = range(sum_pi G_pi).

    Every divergence ||M_pi (g - f)||^2 depends on f only through its component in S, and so
    does every reward difference <phi_a - phi_b, f> of a globally observable game (every
    phi_a - phi_b in S; see :func:`observability`), so the DEC programs are solved exactly in
    these r <= d coordinates (``e2d_jax.dec.linear``). When the reward of every action is
    observed (phi_pi phi_pi^T <= G_pi, the paper's Example 'Linear Bandits with
    Side-Observations') S contains every phi_pi; in a game that observes reward differences
    only (duelling), the features share one component outside S, ``off_span`` is its norm,
    and the reward level <phi_pi, f> itself cannot be learned (the programs with gaps
    Delta_f are then infinite; those with gaps Delta are not). Basis directions that no
    observation reaches (numerically zero eigenvalues of sum_pi G_pi, only in degenerate
    instances) get an identity block in ``null_proj``; the features' components there count
    into ``off_span``.

    Attributes:
      features: (K, r) U^T phi_pi.
      grams: (K, r, r) U^T G_pi U.
      null_proj: (r, r) projector on unreached basis directions (usually 0).
      basis: (d, r) U.
      off_span: () the largest norm of a feature's component outside the reached part of S,
        relative to the largest ||phi_pi|| (0 up to rounding when every reward is observable).
      rows: (K, r) U^T m_pi, each action's observation row where every action observes one
        number (G_pi = m_pi m_pi^T: linear bandits, duelling), or where all but the few
        ``multi_actions`` do (their rows zero: the revealing semi-bandit), else None. The
        interior-point method's term-by-term products over its heaviest actions go through
        them where every action observes one number
        (:func:`e2d_jax.dec.interior_point.evaluate_factored`), the linear programs' sums over
        the Gram matrices on many actions wherever they are given
        (:func:`gram_sum`).
      multi_actions: (J,) int, the actions that observe more than one number where all the
        others observe one (None where every action does, or where ``rows`` is None); an index
        of K or more stands for none (an action a working set does not hold).
      multi_grams: (J, r, r) those actions' Gram matrices, so that
        G_pi = m_pi m_pi^T + sum_j [pi = multi_actions_j] multi_grams_j.
    """

    features: jax.Array
    grams: jax.Array
    null_proj: jax.Array
    basis: jax.Array
    off_span: jax.Array | float = 0.0
    rows: jax.Array | None = None
    multi_actions: jax.Array | None = None
    multi_grams: jax.Array | None = None

    @property
    def one_number(self) -> bool:
        """Whether every action observes one number (G_pi = m_pi m_pi^T; static)."""
        return self.rows is not None and self.multi_actions is None

    def take(self, actions) -> "ObservableSpan":
        """The span of the actions ``actions`` only (their features, Gram matrices and rows; the
        same basis): the programs of a working set of actions."""
        rows = None if self.rows is None else self.rows[actions]
        multi = self.multi_actions
        if multi is not None:
            # Each multi action's place among ``actions``, or len(actions) where it is not one.
            hit = jnp.asarray(actions)[:, None] == multi[None, :]
            multi = jnp.where(jnp.any(hit, axis=0), jnp.argmax(hit, axis=0), hit.shape[0])
        return self._replace(features=self.features[actions], grams=self.grams[actions], rows=rows,
                             multi_actions=multi)


def observable_span(features, grams, *, rank: int | None = None, basis=None, rows=None,
                    multi_actions=None) -> ObservableSpan:
    """Expresses a model class in an orthonormal basis of range(sum_pi G_pi).

    Args:
      features: (K, d).
      grams: (K, d, d).
      rank: number of basis vectors r (static). Default: the numerical rank of sum_pi G_pi
        (``e2d_jax._linalg.numerical_rank``) when the arrays are concrete, else d (exact either
        way; a smaller r is faster).
      basis: optional (d, r) orthonormal basis of (a superspace of) S to use as is.
      rows: optional (K, d) observation rows m_pi where every action observes one number
        (``grams`` = m_pi m_pi^T); kept in the basis as :attr:`ObservableSpan.rows`.
      multi_actions: optional (J,) int, the actions that observe more than one number where all
        the others observe one: ``rows`` then holds zeros for them (see
        :attr:`ObservableSpan.multi_actions`).
    """
    features = jnp.asarray(features)
    grams = jnp.asarray(grams, features.dtype)
    d = features.shape[-1]
    if basis is None:
        total = jnp.sum(grams, axis=0)
        if rank is None:
            rank = _linalg.numerical_rank(total) if V.is_concrete(total) else d
        _, vecs = jnp.linalg.eigh(total)
        basis = vecs[:, ::-1][:, :rank]
    basis = jnp.asarray(basis, features.dtype)
    full = jax.lax.Precision.HIGHEST  # the span test compares with 1e-4: no TF32 products on GPUs
    grams_r = jnp.einsum("ia,kij,jb->kab", basis, grams, basis, precision=full)
    ev, vecs = jnp.linalg.eigh(jnp.sum(grams_r, axis=0))
    tol = _linalg.rank_tolerance(jnp.max(ev), basis.shape[1], features.dtype)
    null = jnp.matmul(vecs * (ev <= tol), vecs.T, precision=full)
    feats_r = jnp.matmul(features, basis, precision=full)
    reached = feats_r - jnp.matmul(feats_r, null, precision=full)
    off = jnp.linalg.norm(features - jnp.matmul(reached, basis.T, precision=full), axis=-1)
    scale = jnp.max(jnp.linalg.norm(features, axis=-1))
    off_span = jnp.max(off) / jnp.maximum(scale, jnp.finfo(features.dtype).tiny)
    rows_r = None if rows is None else jnp.matmul(jnp.asarray(rows, features.dtype), basis, precision=full)
    multi_grams = None
    if multi_actions is not None:
        multi_actions = jnp.asarray(multi_actions, jnp.int32)
        multi_grams = grams_r[multi_actions]
    return ObservableSpan(features=feats_r, grams=grams_r, null_proj=null, basis=basis, off_span=off_span,
                          rows=rows_r, multi_actions=multi_actions, multi_grams=multi_grams)


def one_row(obs_matrices):
    """Each action's observation row (K, d) where every action observes one number, else None."""
    return obs_matrices[:, 0, :] if obs_matrices.shape[1] == 1 else None


#: The sums over the actions' Gram matrices (V(mu), <G_pi, P>, vech G_pi) go through the observation
#: rows where every action observes one number (G_pi = m_pi m_pi^T, ``ObservableSpan.rows``), or
#: all but a few do (their Gram matrices added: ``ObservableSpan.multi_actions``), and
#: the Gram matrices summed hold at least this many numbers (K r^2: 1 MiB in float32). Below
#: it the (K, r, r) array stays in the cache and one pass over it is the faster form; above it
#: reading it is the cost, and the products through the (K, r) rows are several times cheaper
#: (docs: Performance, 'Anytime-E2D at d = 30').
GRAM_ROWS_MIN_ENTRIES = 2 ** 18


def through_rows(s: ObservableSpan, num_actions: int) -> bool:
    """Whether sums over ``num_actions`` of ``s``'s Gram matrices go through its observation rows
    (static; see ``GRAM_ROWS_MIN_ENTRIES``)."""
    rank = s.features.shape[-1]
    return s.rows is not None and num_actions * rank * rank >= GRAM_ROWS_MIN_ENTRIES


def gram_sum(weights, s: ObservableSpan, active=None):
    """sum_pi weights_pi G_pi, (r, r), over every action or the actions ``active`` (weights
    (K,) or (m,) to match)."""
    if through_rows(s, weights.shape[-1]):
        rows = s.rows if active is None else s.rows[active]
        out = (rows.T * weights) @ rows
        if s.multi_actions is None:
            return out
        if active is None:
            coef = weights.at[s.multi_actions].get(mode="fill", fill_value=0.0)
        else:  # the multi actions' weights where the set holds them
            coef = weights @ (jnp.asarray(active)[:, None] == s.multi_actions[None, :]).astype(weights.dtype)
        return out + jnp.einsum("j,jab->ab", coef, s.multi_grams)
    grams = s.grams if active is None else s.grams[active]
    return jnp.einsum("k,kij->ij", weights, grams)


def gram_inner(s: ObservableSpan, p):
    """<G_pi, P> for every action pi: (K,) for one symmetric P (r, r), (K, j) for j of them
    (j, r, r)."""
    one = p.ndim == 2
    ps = p[None] if one else p
    k, rank = s.features.shape[-2:]
    if through_rows(s, k):
        # m_pi^T P m_pi: one product (K, r) x (r, j r), then a row-wise dot per P.
        t = (s.rows @ jnp.moveaxis(ps, 0, 1).reshape(rank, -1)).reshape(k, -1, rank)
        out = jnp.einsum("kjl,kl->kj", t, s.rows)
        if s.multi_actions is not None:
            extra = s.multi_grams.reshape(-1, rank * rank) @ ps.reshape(-1, rank * rank).T  # (J, j)
            out = out.at[s.multi_actions].add(extra, mode="drop")
        return out[:, 0] if one else out
    grams = s.grams.reshape(k, rank * rank)
    return grams @ p.reshape(rank * rank) if one else grams @ ps.reshape(-1, rank * rank).T


class LinearModel(NamedTuple):
    """The model class the learner knows (everything but f*).

    Attributes:
      features: (K, d) float, phi_pi as rows.
      obs_matrices: (K, m, d) float, M_pi padded with zero rows to m rows.
      obs_mask: (K, m) bool, True on the m_pi real rows of each M_pi.
      grams: (K, d, d) float, G_pi = M_pi^T M_pi.
      sigma: () float, noise standard deviation (known to the learner).
      radius: () float, S: the class's known bound ||f*|| <= S (UCB's confidence width uses
        it). 1 for the random semi-bandit and linear-bandit instances (f* on the unit sphere),
        sqrt(K) for the multi-armed bandit (means in [0, 1]^K), the given or the true norm
        for instances built from arrays.
      span: the model class in a basis of its observable span (see :class:`ObservableSpan`),
        precomputed once so that agents never redo it per round.
      available: None (every action may be played), or (K,) bool: the actions this round
        offers (a context's action set, :mod:`e2d_jax.envs.contextual`). An unavailable action
        carries a copy of the first available action's features and observation map
        (:func:`offer`), so every program over the K actions is the program over the available
        ones, and an agent maps its choice back with :func:`playable`; playing an unavailable
        action invalidates the seed.
    """

    features: jax.Array
    obs_matrices: jax.Array
    obs_mask: jax.Array
    grams: jax.Array
    sigma: jax.Array
    radius: jax.Array
    span: ObservableSpan
    available: jax.Array | None = None

    @property
    def num_actions(self) -> int:
        return self.features.shape[-2]

    @property
    def dim(self) -> int:
        return self.features.shape[-1]


class LinearEnvParams(NamedTuple):
    """A linear bandit instance: the model class and the true parameter f* (``theta``)."""

    model: LinearModel
    theta: jax.Array  # (d,) float, f*


def observe(key: jax.Array, params: LinearEnvParams, action: jax.Array) -> jax.Array:
    """Samples ``y = M_pi f* + sigma xi`` for ``pi = action``; padded entries are 0.

    Args:
      key: PRNG key.
      params: the instance.
      action: () int, the action played.

    Returns:
      (m,) observation.
    """
    model = params.model
    mat = model.obs_matrices[action]
    mask = model.obs_mask[action]
    noise = jax.random.normal(key, mask.shape, dtype=mat.dtype)
    return jnp.where(mask, mat @ params.theta + model.sigma * noise, 0.0)


def mean_rewards(params: LinearEnvParams) -> jax.Array:
    """(K,) expected rewards <phi_pi, f*>."""
    return params.model.features @ params.theta


def _model(params: LinearEnvParams) -> LinearModel:
    return params.model


ENVIRONMENT = Environment(observe=observe, mean_rewards=mean_rewards, model=_model)


def default_dtype(dtype):
    """``dtype``, or float64 when x64 is enabled and float32 otherwise."""
    return jnp.dtype(dtype) if dtype is not None else jax.dtypes.canonicalize_dtype(jnp.float64)


def assemble_model(features, obs_matrices, obs_mask, sigma, rank, radius, multi_actions=None) -> LinearModel:
    """A :class:`LinearModel` from padded arrays: the Gram matrices and the observable span
    (of dimension ``rank``, static) are computed here, once per instance. ``multi_actions``
    ((J,) int, optional) names the actions that observe more than one number where every other
    observes one, its first row (:attr:`ObservableSpan.multi_actions`). Traceable."""
    grams = jnp.einsum("kmi,kmj->kij", obs_matrices, obs_matrices)
    rows = one_row(obs_matrices)
    if multi_actions is not None:
        multi_actions = jnp.atleast_1d(jnp.asarray(multi_actions, jnp.int32))
        rows = obs_matrices[:, 0, :].at[multi_actions].set(0.0)
    return LinearModel(
        features=features,
        obs_matrices=obs_matrices,
        obs_mask=obs_mask,
        grams=grams,
        sigma=jnp.asarray(sigma, dtype=features.dtype),
        radius=jnp.asarray(radius, dtype=features.dtype),
        span=observable_span(features, grams, rank=rank, rows=rows, multi_actions=multi_actions),
    )


def offer(model: LinearModel, available) -> LinearModel:
    """The model of a round that offers only the actions ``available`` ((K,) bool, at least one
    True): every unavailable action gets the first available action's features, observation
    map and Gram matrix, and the observable span is taken again in the same basis.
    Traceable."""
    available = jnp.asarray(available, bool)
    first = jnp.argmax(available)
    source = jnp.where(available, jnp.arange(available.shape[0]), first)
    features, grams, obs_matrices = model.features[source], model.grams[source], model.obs_matrices[source]
    return model._replace(features=features, obs_matrices=obs_matrices,
                          obs_mask=model.obs_mask[source], grams=grams,
                          span=observable_span(features, grams, basis=model.span.basis, rows=one_row(obs_matrices)),
                          available=available)


def playable(model, action: jax.Array) -> jax.Array:
    """``action``, or the first available action where the model's round does not offer
    ``action`` (an unavailable action is a copy of that one, see :func:`offer`); ``action``
    itself for a model without an availability mask. What the library's agents play."""
    available = getattr(model, "available", None)
    if available is None:
        return action
    return jnp.where(available[action], action, jnp.argmax(available)).astype(action.dtype)


def _check_sizes(d, num_actions):
    V.check_int("d", d, minimum=1)
    V.check_int("num_actions", num_actions, minimum=2)


def _unit_sphere(key, shape, dtype):
    """Uniform on the unit sphere: the Gaussian draw is made in float32 whatever the x64 flag
    (then cast and normalised in ``dtype``), so an instance depends on its key only, not on
    the precision it is run in (up to that precision's rounding)."""
    x = jax.random.normal(key, shape, dtype=jnp.float32).astype(dtype)
    return x / jnp.linalg.norm(x, axis=-1, keepdims=True)


def semi_bandit(
    key: jax.Array,
    d: int,
    num_actions: int,
    *,
    sigma: float = 1.0,
    revealing_action: int | None = None,
    dtype=None,
) -> LinearEnvParams:
    """Semi-bandit with one revealing action (paper, Appendix 'Experiments').

    Every action pi observes its own reward, M_pi = phi_pi^T, except the revealing action
    pi_hat, which observes all of them: M_pi_hat = Phi (K x d), y = Phi f* + sigma xi with
    xi ~ N(0, I_K). The revealing action is suboptimal.

    Args:
      key: PRNG key for the random features, f* and revealing action (a batch of keys under
        ``jax.vmap`` gives a batch of instances).
      d: feature dimension (>= 1).
      num_actions: K (>= 2).
      sigma: noise standard deviation (> 0; may be traced).
      revealing_action: index of pi_hat; default uniform among the suboptimal actions. A
        given index is used as is (the caller is responsible for it being suboptimal).
      dtype: float dtype (default: float64 if x64 is enabled, else float32). The draws are
        made in float32 and cast, so the instance does not depend on the dtype.

    Returns:
      LinearEnvParams with m = K observation rows and ``model.radius`` = 1.
    """
    _check_sizes(d, num_actions)
    V.check_positive("sigma", sigma)
    if revealing_action is not None:
        V.check_int("revealing_action", revealing_action, minimum=0)
        if revealing_action >= num_actions:
            raise ValueError(
                f"revealing_action must be < num_actions={num_actions}, got {revealing_action}"
            )
    dtype = default_dtype(dtype)
    k_feat, k_theta, k_rev = jax.random.split(key, 3)
    features = _unit_sphere(k_feat, (num_actions, d), dtype)
    theta = _unit_sphere(k_theta, (d,), dtype)
    if revealing_action is None:
        best = jnp.argmax(features.astype(jnp.float32) @ theta.astype(jnp.float32))
        idx = jax.random.randint(k_rev, (), 0, num_actions - 1)
        rev = idx + (idx >= best)
    else:
        rev = jnp.asarray(revealing_action)
    return semi_bandit_from_features(features, theta, rev, sigma=sigma)


def semi_bandit_from_features(features, theta, revealing_action, *, sigma=1.0, radius=1.0) -> LinearEnvParams:
    """The revealing semi-bandit for given features (K, d), f* (d,) and revealing index.

    ``radius`` is the known bound S on ||f*|| (1: f* on the unit sphere).
    """
    features = jnp.asarray(features)
    num_actions, d = features.shape
    eye = jnp.eye(num_actions, dtype=bool)
    own = jnp.zeros((num_actions, num_actions, d), features.dtype).at[:, 0, :].set(features)
    reveal = (jnp.arange(num_actions) == revealing_action)[:, None, None]
    obs_matrices = jnp.where(reveal, features[None, :, :], own)
    first_row = jnp.zeros((num_actions, num_actions), bool).at[:, 0].set(True)
    obs_mask = jnp.where(reveal[:, :, 0], jnp.ones_like(eye), first_row)
    model = assemble_model(features, obs_matrices, obs_mask, sigma, min(d, num_actions), radius,
                           multi_actions=revealing_action)
    return LinearEnvParams(model=model, theta=jnp.asarray(theta, features.dtype))


def semi_bandit_authors(key: jax.Array, d: int, num_actions: int, *, sigma: float = 1.0, dtype=None) -> LinearEnvParams:
    """The revealing semi-bandit as the authors' code draws it (kirschnj/pm-ids, branch e2d,
    ``semi_bandit`` in ``pm/main.py``, default flags), the ``semi-bandit-authors`` preset.

    f* = e_1; features with i.i.d. N(0, 1) entries, *not* normalised (that code normalises the
    rows only when asked to, which its default does not), so ||phi_pi|| is about sqrt(d);
    action 0 is the revealing action, with no check that it is suboptimal (the paper's text
    says it is; on this distribution it is the optimal action with probability 1/K). The
    observation structure is :func:`semi_bandit`'s. ``model.radius`` = 1 (= ||f*||).

    The draws are made in float32 and cast, so the instance depends on its key only.
    """
    _check_sizes(d, num_actions)
    V.check_positive("sigma", sigma)
    dtype = default_dtype(dtype)
    features = jax.random.normal(key, (num_actions, d), dtype=jnp.float32).astype(dtype)
    theta = jnp.zeros((d,), dtype).at[0].set(1.0)
    return semi_bandit_from_features(features, theta, 0, sigma=sigma)


def revealing_is_optimal(params: LinearEnvParams) -> jax.Array:
    """Whether a semi-bandit's revealing action is an optimal action (bool; vmappable).

    The revealing action is the one whose observation matrix has more than one row."""
    rev = jnp.argmax(params.model.obs_mask.sum(-1))
    rewards = mean_rewards(params)
    return rewards[rev] >= rewards.max()


def linear_bandit(key, d: int, num_actions: int, *, sigma: float = 1.0, dtype=None) -> LinearEnvParams:
    """Plain linear bandit (Section 2, Example 'Linear Bandits'): M_pi = phi_pi^T, random instance as documented above."""
    _check_sizes(d, num_actions)
    V.check_positive("sigma", sigma)
    dtype = default_dtype(dtype)
    k_feat, k_theta = jax.random.split(key)
    features = _unit_sphere(k_feat, (num_actions, d), dtype)
    theta = _unit_sphere(k_theta, (d,), dtype)
    model = assemble_model(
        features, features[:, None, :], jnp.ones((num_actions, 1), bool), sigma, min(d, num_actions), 1.0
    )
    return LinearEnvParams(model=model, theta=theta)


def multi_armed_bandit(key, num_actions: int, *, sigma: float = 1.0, dtype=None) -> LinearEnvParams:
    """K-armed Gaussian bandit as a linear bandit with phi_pi = e_pi; means i.i.d. U[0, 1].

    The class is f in [0, 1]^K, so ``model.radius`` = sqrt(K) (UCB's bound on ||f*||).
    """
    V.check_int("num_actions", num_actions, minimum=2)
    V.check_positive("sigma", sigma)
    dtype = default_dtype(dtype)
    features = jnp.eye(num_actions, dtype=dtype)
    theta = jax.random.uniform(key, (num_actions,), dtype=jnp.float32).astype(dtype)
    model = assemble_model(
        features, features[:, None, :], jnp.ones((num_actions, 1), bool), sigma, num_actions,
        np.sqrt(num_actions),
    )
    return LinearEnvParams(model=model, theta=theta)


def pad_observations(obs_matrices) -> tuple[np.ndarray, np.ndarray]:
    """Observation maps of different sizes as one padded array and its mask.

    Args:
      obs_matrices: a sequence of K arrays, the k-th of shape (m_k, d) (or (d,): one row).

    Returns:
      ``(padded (K, m, d), mask (K, m))`` with m = max_k m_k: the rows past m_k are zero and
      False in the mask (padding is exact, see the module docstring).
    """
    if isinstance(obs_matrices, np.ndarray) or not hasattr(obs_matrices, "__len__"):
        raise ValueError("obs_matrices must be a sequence of (m_k, d) arrays, one per action")
    rows = [np.atleast_2d(np.asarray(m, np.float64)) for m in obs_matrices]
    if not rows:
        raise ValueError("obs_matrices must hold one (m_k, d) array per action, got none")
    d = rows[0].shape[1]
    for k, r in enumerate(rows):
        if r.ndim != 2 or r.shape[1] != d:
            raise ValueError(f"obs_matrices[{k}] must have shape (m_{k}, d) with d={d} columns like "
                             f"obs_matrices[0], got {r.shape}")
    m = max(r.shape[0] for r in rows)
    padded = np.zeros((len(rows), m, d))
    mask = np.zeros((len(rows), m), bool)
    for k, r in enumerate(rows):
        padded[k, :r.shape[0]] = r
        mask[k, :r.shape[0]] = True
    return padded, mask


#: Relative tolerance of the observability checks (float64, on the arrays as given).
OBSERVABILITY_TOL = 1e-6


def _rewards_observed(features, grams) -> bool:
    """phi_pi phi_pi^T <= G_pi for every action: phi in range(G) with phi^T G^+ phi <= 1."""
    for k in range(features.shape[0]):
        phi = features[k]
        sol, *_ = np.linalg.lstsq(grams[k], phi, rcond=None)
        resid = np.linalg.norm(grams[k] @ sol - phi)
        if resid > OBSERVABILITY_TOL * max(1.0, np.linalg.norm(phi)) or phi @ sol > 1 + OBSERVABILITY_TOL:
            return False
    return True


def _off_span(features, grams) -> np.ndarray:
    """(K, d) each feature's component outside S = range(sum_pi G_pi) (float64)."""
    total = grams.sum(0)
    ev, vecs = np.linalg.eigh(0.5 * (total + total.T))
    basis = vecs[:, ev > OBSERVABILITY_TOL * max(float(ev.max()), np.finfo(np.float64).tiny)]
    return features - (features @ basis) @ basis.T


def observability(features, grams) -> str:
    """How much of a linear game's reward the observations reveal (concrete arrays).

    Returns:
      ``"local"`` when every action observes its own reward, phi_pi phi_pi^T <= G_pi (the
      paper's Example 'Linear Bandits with Side-Observations'; every reward is then in the
      observable span S = range(sum_pi G_pi)); ``"global"`` when only the reward differences
      are, every phi_a - phi_b in S (duelling and preference feedback: the pair (a, b) observes
      <x_a - x_b, f>, the self-duel (a, a) nothing); the DEC programs with gaps Delta are then
      finite, and those with gaps Delta_f too when every phi_pi is in S.

    Raises:
      ValueError: naming ``obs_matrices`` and the actions whose reward differences to action 0
        no observation reveals, when the game is not even globally observable (no algorithm
        can learn which of those actions is better).
    """
    features = np.asarray(features, np.float64)
    grams = np.asarray(grams, np.float64)
    if _rewards_observed(features, grams):
        return "local"
    off = _off_span(features, grams)
    scale = max(1.0, float(np.linalg.norm(features, axis=-1).max()))
    bad = np.flatnonzero(np.linalg.norm(off - off[0], axis=-1) > OBSERVABILITY_TOL * scale)
    if bad.size:
        shown = ", ".join(str(int(b)) for b in bad[:10]) + (", ..." if bad.size > 10 else "")
        raise ValueError(
            f"obs_matrices: the game is not globally observable: the reward differences between action 0 and "
            f"action{'s' if bad.size > 1 else ''} {shown} ({bad.size} in all) are not in the span of what the "
            "actions observe (the range of sum_pi M_pi^T M_pi), so which of them is better cannot be learned")
    return "global"


def reward_level_observable(span: ObservableSpan, tol: float = 1e-4) -> bool:
    """Whether every reward <phi_pi, f> (not only the differences) lies in the observable span,
    from a concrete span's ``off_span`` (the largest over a batch of instances); what the ac-DEC
    and offset DEC with gaps Delta_f need to be finite. ``tol`` is relative to max ||phi_pi||."""
    return float(np.max(np.asarray(span.off_span))) <= tol


def check_gap_type(model: "LinearModel", gap_type: str, who: str = "gap_type") -> None:
    """Refuses gaps Delta_f on a concrete linear model whose reward level is not observable
    (a duelling game whose differences do not span R^d): there the programs with Delta_f are
    infinite (the max player raises every reward along a direction no action observes), and
    gaps Delta are what is finite. Traced models are not checked."""
    off = model.span.off_span
    if gap_type != "delta_f" or not V.is_concrete(off) or isinstance(off, jax.ShapeDtypeStruct):
        return
    if not reward_level_observable(model.span):
        _refuse_delta_f(who)


def check_gap_type_arrays(features, grams, gap_type: str, who: str = "gap_type") -> None:
    """:func:`check_gap_type` for a game given as concrete arrays (features (K, d), grams
    (K, d, d)); traced arrays are not checked."""
    if gap_type != "delta_f" or not (V.is_concrete(features) and V.is_concrete(grams)):
        return
    features = np.asarray(features, np.float64)
    off = np.linalg.norm(_off_span(features, np.asarray(grams, np.float64)), axis=-1)
    if off.max() > 1e-6 * max(1.0, float(np.linalg.norm(features, axis=-1).max())):
        _refuse_delta_f(who)


def _refuse_delta_f(who: str):
    raise V.ArgumentError(who, (
        f"{V.name(who)}='delta_f' needs every reward in the span of the observations, and the features leave it: "
        "either the game observes only reward differences (e.g. duelling feedback), where the DEC with gaps "
        "Delta_f is infinite (use gaps Delta, gap_type='delta'), or its observations are so ill-conditioned that "
        "their span is cut at this precision (compute in float64)"))


def _observations(features, obs_matrices, obs_mask, rank, dtype, concrete: bool):
    """``(obs, mask, rank)``: the observation maps with their padding rows zeroed, the mask and
    the observable span's dimension. Concrete arrays (also inside a trace, e.g. a builder of
    fixed arrays under vmap over keys) are checked (:func:`observability`: globally observable) and ranked
    in NumPy, in float64; traced ones take rank min(d, K m) unless given."""
    if concrete:
        obs_np = np.asarray(obs_matrices, np.float64)
        mask_np = np.any(obs_np != 0, axis=-1) if obs_mask is None else np.asarray(obs_mask, bool)
        obs_np = np.where(mask_np[..., None], obs_np, 0.0)
        grams = np.einsum("kmi,kmj->kij", obs_np, obs_np)
        observability(features, grams)
        if rank is None:
            rank = _linalg.numerical_rank(grams.sum(0).astype(dtype))
        return jnp.asarray(obs_np, dtype), jnp.asarray(mask_np), rank
    obs = jnp.asarray(obs_matrices, dtype)
    if obs_mask is None:
        mask = jnp.any(obs != 0, axis=-1)
    else:
        mask = jnp.asarray(obs_mask, bool)
        obs = jnp.where(mask[..., None], obs, 0.0)
    if rank is None:
        rank = min(obs.shape[-1], obs.shape[0] * obs.shape[1])
    return obs, mask, rank


def linear_side_observation(
    features, obs_matrices, theta, *, sigma: float = 1.0, obs_mask=None, radius=None, rank: int | None = None,
    dtype=None,
) -> LinearEnvParams:
    """An instance from explicit arrays (NumPy or JAX; traced arrays are accepted, e.g. under
    ``jax.vmap`` over theta or a key, and then only their shapes are checked).

    Args:
      features: (K, d) features, K >= 2.
      obs_matrices: (K, m, d) observation maps, padded with zero rows (or (K, d): one row
        each), or a list of K arrays of shapes (m_k, d), padded here
        (:func:`pad_observations`).
      theta: (d,) the true parameter f*.
      sigma: noise standard deviation (> 0).
      obs_mask: optional (K, m) bool; default: the rows that are not identically zero.
      radius: the known bound S >= ||theta|| of the class (UCB's width); default ||theta||.
      rank: the dimension of the observable span (static); default: the numerical rank of
        sum_pi M_pi^T M_pi for concrete arrays, min(d, K m) for traced ones (exact either way;
        a smaller rank is faster).
      dtype: float dtype (default: that of ``features`` if floating, else float64 when x64 is
        enabled and float32 otherwise).

    The paper's Example 'Linear Bandits with Side-Observations' assumes phi_pi phi_pi^T <=
    M_pi^T M_pi (every action observes its reward); games that observe reward differences
    only (linear partial monitoring: duelling, preferences) are accepted as long as they are
    globally observable, every phi_a - phi_b in the span of the observations. This is checked
    on concrete arrays (:func:`observability`); a game that is not is refused naming the
    actions whose rewards cannot be learned.
    """
    V.check_floating("features", features)
    shape = tuple(np.shape(features)) if V.is_concrete(features) else tuple(features.shape)
    if len(shape) != 2:
        raise ValueError(f"features must have shape (K, d), got {shape}")
    num_actions, d = shape
    _check_sizes(d, num_actions)
    if isinstance(obs_matrices, (list, tuple)) and len({np.shape(m)[:-1] for m in obs_matrices}) > 1:
        obs_matrices, padded_mask = pad_observations(obs_matrices)
        obs_mask = padded_mask if obs_mask is None else obs_mask
    obs_shape = tuple(np.shape(obs_matrices)) if V.is_concrete(obs_matrices) else tuple(obs_matrices.shape)
    if obs_shape == (num_actions, d):
        obs_matrices = obs_matrices[:, None, :]
        obs_shape = (num_actions, 1, d)
    V.check_shape("obs_matrices", np.empty(obs_shape), (num_actions, None, d), what="(K, m, d)")
    theta_shape = tuple(np.shape(theta)) if V.is_concrete(theta) else tuple(theta.shape)
    V.check_shape("theta", np.empty(theta_shape), (d,))
    V.check_positive("sigma", sigma)
    if dtype is None:
        dt = jnp.result_type(features)
        dtype = dt if jnp.issubdtype(dt, jnp.floating) else default_dtype(None)
    dtype = jnp.dtype(dtype)
    for name, arr in (("features", features), ("obs_matrices", obs_matrices), ("theta", theta)):
        V.check_finite(name, arr)
    concrete = all(V.is_concrete(x) for x in (features, obs_matrices, theta, obs_mask))
    if obs_mask is not None:
        V.check_shape("obs_mask", obs_mask, obs_shape[:2])
    obs, mask, rank = _observations(features, obs_matrices, obs_mask, rank, dtype, concrete)
    if rank is not None:
        V.check_int("rank", rank, minimum=1)
    theta = jnp.asarray(theta, dtype)
    if radius is None:
        radius = jnp.linalg.norm(theta)
    else:
        V.check_positive("radius", radius)
        if V.is_concrete(theta) and V.is_concrete(radius):
            norm = float(np.linalg.norm(np.asarray(theta, np.float64)))
            if float(radius) < norm * (1 - 1e-6):
                raise ValueError(f"radius must be >= ||theta|| = {norm:.6g}, got {radius}")
    model = assemble_model(jnp.asarray(features, dtype), obs, mask, sigma, rank, radius)
    return LinearEnvParams(model=model, theta=theta)


def gaps(params: LinearEnvParams) -> jax.Array:
    """(K,) Delta(pi, f*) = max_b r(b) - r(pi)."""
    r = mean_rewards(params)
    return jnp.max(r) - r
