"""The few types every part of e2d_jax shares. Read this file first.

The data flow is one way (see README):

    instance builder -> EnvParams --+
                                    +--> rollout (lax.scan over rounds) --> vmap over seeds
    agent factory -> Agent ---------+

* An :class:`Environment` is a tuple of pure functions over an ``EnvParams`` pytree
  (gymnax style: the key comes first, the params are an argument so they can be vmapped).
  Bandit environments have no dynamic state: a round is ``observe(key, params, action)``.
  ``params.model`` is the model class the learner knows (features, observation maps, noise);
  the rest of ``params`` (the true model f*) is hidden from the agent.
* An :class:`Agent` is a tuple of pure functions (optax style) over a ``NamedTuple`` state.
  The model class is passed to every call rather than stored in the state, so that under
  ``vmap`` over seeds it is broadcast once instead of copied per seed, and under ``vmap``
  over instances it is mapped (the same convention as gymnax's ``params``).
* Solvers return a :class:`DecResult` whose ``status`` is a result code, never an exception,
  so one bad problem in a batch of ten thousand cannot abort the others.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax

PyTree = Any

# Result codes shared by every solver and agent (``status`` fields, int32).
STATUS_OK = 0  # converged: certified gap within tolerance
STATUS_MAX_ITER = 1  # iteration budget used up before the tolerance was met (answer still valid)
STATUS_NONFINITE = 2  # a non-finite value appeared; the answer must not be trusted
STATUS_NAMES = {STATUS_OK: "ok", STATUS_MAX_ITER: "max_iter", STATUS_NONFINITE: "nonfinite"}
NUM_STATUS = len(STATUS_NAMES)


class Environment(NamedTuple):
    """Pure functions of a (stateless) bandit environment.

    Attributes:
      observe: ``(key, params, action) -> observation``; the observation has a fixed shape
        for every action (padded where actions observe different amounts).
      mean_rewards: ``params -> (K,)`` expected reward of every action under the true model.
      model: ``params -> model class`` the part of ``params`` the learner may know.
    """

    observe: Callable[[jax.Array, PyTree, jax.Array], jax.Array]
    mean_rewards: Callable[[PyTree], jax.Array]
    model: Callable[[PyTree], PyTree]


class Agent(NamedTuple):
    """Pure functions of a learner (Algorithm 1 and the baselines).

    Attributes:
      init: ``(key, model) -> state``.
      act: ``(key, state, model) -> (action, state, info)``; ``action`` is an int32 scalar,
        ``state`` may carry what the decision computed (e.g. a solver's warm start), and
        ``info`` is a NamedTuple with at least an int32 ``status`` field (see ``STATUS_*``).
      update: ``(state, action, observation, model) -> state``.
    """

    init: Callable[[jax.Array, PyTree], PyTree]
    act: Callable[[jax.Array, PyTree, PyTree], tuple[jax.Array, PyTree, PyTree]]
    update: Callable[[PyTree, jax.Array, jax.Array, PyTree], PyTree]


class ActInfo(NamedTuple):
    """Per-round diagnostics of agents that solve no optimisation problem."""

    status: jax.Array  # () int32, a STATUS_* code


class E2DInfo(NamedTuple):
    """Per-round diagnostics of the E2D agents of both model families (one convention).

    ``value`` and ``gap`` are in units of regret (the DEC value does not depend on how the
    divergence is scaled: rescaling I by s rescales eps^2 and 1/lambda by s and leaves the
    program's value unchanged); ``lam`` and ``eps2`` are in the agent's own divergence
    convention (the Gaussian KL by default; ``divergence="squared"`` for ||M (g - f)||^2 on
    linear models).
    """

    status: jax.Array  # () int32 STATUS_* of the round's DEC solve
    value: jax.Array  # () float, the DEC value at (lam, mu_t), regret units
    lam: jax.Array  # () float, the lambda of the round (agent's convention)
    gap: jax.Array  # () float, the solve's certified duality gap, regret units
    iterations: jax.Array  # () int32 solver iterations this round
    eps2: jax.Array  # () float, eps_t^2 (agent's convention; 0 for fixed-horizon E2D)


class DecResult(NamedTuple):
    """Answer of a DEC solver, with its certificate.

    Attributes:
      mu: (K,) the sampling distribution (on the simplex).
      lam: () the multiplier lambda returned with ``mu``.
      value: () the objective honestly evaluated at the returned ``(lam, mu)``.
      lower_bound: () a certified lower bound on the optimal value of the program.
      gap: () ``value - lower_bound`` (>= 0 up to rounding): the duality-gap certificate.
      iterations: () int32 iterations used by the solver.
      status: () int32 ``STATUS_*`` code.
      omega: (N,) the max-player's mixture returned by saddle-point solvers (over actions for
        the linear DEC, over models for finite classes); useful for warm starts.
    """

    mu: jax.Array
    lam: jax.Array
    value: jax.Array
    lower_bound: jax.Array
    gap: jax.Array
    iterations: jax.Array
    status: jax.Array
    omega: jax.Array
