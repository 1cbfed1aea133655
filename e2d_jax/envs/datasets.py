"""Real data: classification datasets as contextual bandits.

The construction of the contextual-bandit literature (Dudík, Langford and Li 2011; Bietti,
Agarwal and Langford 2021, *A Contextual Bandit Bake-off*): every row of a labelled dataset is
a context, every label an action, and playing the row's label has reward 1, any other label 0.
The learner sees the row's features and, after playing, the reward of the label it played
(bandit feedback); the round's regret is 1 minus that reward, so the cumulative regret counts
the mistakes and 1 - R_n / n is the average reward.

Datasets: those bundled inside scikit-learn (nothing is downloaded; the optional extra
``pip install 'e2d_jax[data]'``): ``digits`` (1,797 rows, 64 features, 10 labels), ``wine``
(178, 13, 3), ``breast-cancer`` (569, 30, 2), ``iris`` (150, 4, 3). A dataset is loaded and
transformed once per process (:func:`load`).

Features. Each row's features are standardised (zero mean, unit variance per column over the
dataset), projected on their first ``dims`` principal components (default
:data:`DEFAULT_DIMS`, or every column where there are fewer), a constant 1 is appended and the
vector scaled to unit norm: z(c) in R^p, p = dims + 1. Action a's features are x_a(c) = e_a
⊗ z(c) in R^d, d = K p (one linear model per label, the disjoint linear model of LinUCB), so
f* would hold one weight vector per label; the learner's model has noise sigma = 1/2 (a reward
in [0, 1] is 1/2-sub-Gaussian) and the bound S = sqrt(K) on ||f*|| (each label's weights of
norm at most 1: rewards in [0, 1] from unit-norm contexts). No linear model need fit the labels
exactly: the learner is misspecified, as on real data. A round's observable span is spanned by
the K feature vectors, which are orthogonal, so it is built in closed form (rank K).

Order. Each seed sees the rows in its own order, a uniformly random permutation drawn once from
the seed's key stream (:attr:`Environment.reset <e2d_jax.types.Environment>`), and round t
plays row ``order[(t - 1) mod N]`` (the rows are cycled when the horizon exceeds the
dataset). ``e2d_jax.sim.rollout.seed_instances(params, ...).order`` gives each seed's order,
so another implementation can replay the same data.
"""
from __future__ import annotations

import difflib
import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from e2d_jax import _checks as V
from e2d_jax.envs import linear
from e2d_jax.envs.linear import LinearModel, ObservableSpan
from e2d_jax.types import Environment

#: The datasets and the scikit-learn loader of each.
DATASETS = {"digits": "load_digits", "wine": "load_wine", "breast-cancer": "load_breast_cancer",
            "iris": "load_iris"}

#: Principal components kept by default (fewer where the dataset has fewer columns).
DEFAULT_DIMS = 8

#: The learner's noise level: rewards in [0, 1] are 1/2-sub-Gaussian.
REWARD_SIGMA = 0.5

#: What installs the datasets.
INSTALL = "pip install 'e2d_jax[data]'"


class Dataset(NamedTuple):
    """A dataset as loaded and transformed (NumPy, float64).

    Attributes:
      name: the dataset's name.
      contexts: (N, p) each row's context features z (unit norm, the last entry the constant).
      labels: (N,) int the row's label in [0, K).
      num_labels: K.
      explained: the share of the standardised features' variance the kept components hold.
    """

    name: str
    contexts: np.ndarray
    labels: np.ndarray
    num_labels: int
    explained: float


class DatasetParams(NamedTuple):
    """A classification dataset as a contextual bandit.

    Attributes:
      model: the model of row 0 (the shapes every round's model has); what the learner is
        given before the first round.
      contexts: (N, p) the rows' context features z.
      labels: (N,) int32 the rows' labels.
      order: (N,) int32 the order of the rows: 0, 1, ..., N - 1 as built, each seed's own
        permutation once :func:`reset` has drawn it.
    """

    model: LinearModel
    contexts: jax.Array
    labels: jax.Array
    order: jax.Array

    @property
    def num_rows(self) -> int:
        return self.labels.shape[-1]


class DatasetRound(NamedTuple):
    """One round of a dataset: the row's model and every action's reward (the one-hot label)."""

    model: LinearModel
    rewards: jax.Array  # (K,) 1 for the row's label, 0 otherwise


def _unknown(name, argument: str) -> V.ArgumentError:
    close = difflib.get_close_matches(str(name), list(DATASETS), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return V.ArgumentError(argument, f"{V.name(argument)}: unknown dataset {name!r}{hint}; the datasets are "
                                     f"{', '.join(DATASETS)}")


def _sklearn(name: str, argument: str):
    try:
        from sklearn import datasets, decomposition, preprocessing
    except ImportError:
        raise V.ArgumentError(argument, f"{V.name(argument)}: the dataset {name!r} is one of scikit-learn's "
                                        f"bundled datasets, and scikit-learn is not installed: {INSTALL}") from None
    return datasets, decomposition, preprocessing


@functools.lru_cache(maxsize=None)
def _load(name: str, dims: int, argument: str) -> Dataset:
    datasets, decomposition, preprocessing = _sklearn(name, argument)
    bunch = getattr(datasets, DATASETS[name])()
    x = preprocessing.StandardScaler().fit_transform(np.asarray(bunch.data, np.float64))
    dims = min(dims, x.shape[1])
    pca = decomposition.PCA(n_components=dims, svd_solver="full").fit(x)
    z = np.concatenate([pca.transform(x), np.ones((x.shape[0], 1))], axis=1)
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    labels = np.unique(bunch.target, return_inverse=True)[1].astype(np.int64)
    return Dataset(name=name, contexts=z, labels=labels, num_labels=int(labels.max()) + 1,
                   explained=float(np.sum(pca.explained_variance_ratio_)))


def load(name: str, *, dims: int = DEFAULT_DIMS, argument: str = "name") -> Dataset:
    """A dataset, loaded from scikit-learn and transformed once per process (see the module
    docstring). ``argument`` is the name the errors give the dataset's name (an unknown name,
    scikit-learn missing)."""
    if name not in DATASETS:
        raise _unknown(name, argument)
    dims = V.check_int("dims", dims, minimum=1)
    return _load(name, dims, argument)


def round_model(z: jax.Array, num_labels: int, dtype) -> LinearModel:
    """The model of a row with context features ``z`` (p,): x_a = e_a ⊗ z, bandit feedback,
    its observable span in closed form. Traceable."""
    z = jnp.asarray(z, dtype)
    eye = jnp.eye(num_labels, dtype=dtype)
    features = (eye[:, :, None] * z[None, None, :]).reshape(num_labels, num_labels * z.shape[0])
    norm = jnp.linalg.norm(z)
    basis = features.T / jnp.maximum(norm, jnp.finfo(dtype).tiny)  # (d, K), orthonormal columns
    span = ObservableSpan(features=norm * eye, grams=norm**2 * eye[:, :, None] * eye[:, None, :],
                          null_proj=jnp.zeros((num_labels, num_labels), dtype), basis=basis,
                          off_span=jnp.zeros((), dtype))
    return LinearModel(features=features, obs_matrices=features[:, None, :],
                       obs_mask=jnp.ones((num_labels, 1), bool),
                       grams=features[:, :, None] * features[:, None, :],
                       sigma=jnp.asarray(REWARD_SIGMA, dtype), radius=jnp.asarray(math.sqrt(num_labels), dtype),
                       span=span)


def reset(key: jax.Array, params: DatasetParams) -> DatasetParams:
    """The seed's instance: the rows in a uniformly random order drawn with ``key``."""
    return params._replace(order=jax.random.permutation(key, params.num_rows).astype(jnp.int32))


def round_instance(key: jax.Array, params: DatasetParams, t: jax.Array) -> DatasetRound:
    """Round t's instance: row ``order[(t - 1) mod N]``."""
    del key
    row = params.order[(t - 1) % params.num_rows]
    k = params.model.num_actions
    z = params.contexts[row]
    return DatasetRound(model=round_model(z, k, params.contexts.dtype),
                        rewards=jax.nn.one_hot(params.labels[row], k, dtype=params.contexts.dtype))


def observe(key: jax.Array, params: DatasetRound, action: jax.Array) -> jax.Array:
    """(1,) the reward of the label played: 1 if it is the row's label, else 0."""
    del key
    return params.rewards[action][None]


def mean_rewards(params: DatasetRound) -> jax.Array:
    """(K,) the round's rewards (the one-hot label)."""
    return params.rewards


def _model(params) -> LinearModel:
    return params.model


#: The environment of datasets: ``reset`` orders the rows, ``context`` takes round t's row.
ENVIRONMENT = Environment(observe=observe, mean_rewards=mean_rewards, model=_model, context=round_instance,
                          reset=reset)


def classification(name: str, *, dims: int = DEFAULT_DIMS, dtype=None, argument: str = "name") -> DatasetParams:
    """A classification dataset as a contextual bandit (see the module docstring).

    Args:
      name: one of :data:`DATASETS`.
      dims: the principal components kept (>= 1; every column where the dataset has fewer).
      dtype: float dtype (default float64 under x64, else float32).
      argument: the name errors give ``name`` (e.g. ``env`` where it came from one).

    Returns:
      :class:`DatasetParams`, the rows in their stored order (each seed draws its own).
    """
    data = load(name, dims=dims, argument=argument)
    dtype = linear.default_dtype(dtype)
    contexts = jnp.asarray(data.contexts, dtype)
    return DatasetParams(model=round_model(contexts[0], data.num_labels, dtype), contexts=contexts,
                         labels=jnp.asarray(data.labels, jnp.int32),
                         order=jnp.arange(data.labels.shape[0], dtype=jnp.int32))

