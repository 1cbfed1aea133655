"""The few types every part of e2d_jax shares. Read this file first.

The data flow is one way::

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
* Solvers return a :class:`DecResult` whose ``status`` is a :class:`Status` code, never an
  exception, so one bad problem in a batch of ten thousand cannot abort the others. Every
  ``solve_*`` function of ``e2d_jax.dec`` (the traceable solvers the agents call) returns the
  pair ``(DecResult, carry)``: the answer and what the next call takes to continue from it
  (a :class:`WarmStart`, or a search's memory), in the manner of optax's ``(updates, state)``.
"""
from __future__ import annotations

import enum
from collections.abc import Hashable
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

PyTree = Any


class Status(enum.IntEnum):
    """Result codes of every solver, agent and round (``status`` fields, int32 arrays).

    Inside ``jit`` a status is an int32 array; ``Status(int(result.status))`` names it and
    ``.message`` explains it.
    """

    OK = 0
    MAX_ITER = 1
    NONFINITE = 2
    INVALID_ACTION = 3

    @property
    def message(self) -> str:
        return _STATUS_MESSAGES[self]

    @classmethod
    def describe(cls, code) -> str:
        """``"max_iter: the iteration budget ..."`` for a status code (int or 0-d array)."""
        status = cls(int(np.asarray(code)))
        return f"{status.name.lower()}: {status.message}"


_STATUS_MESSAGES = {
    Status.OK: "converged: the certified duality gap is within the tolerance",
    Status.MAX_ITER: "the iteration budget was used up before the tolerance was met; the answer is valid and "
                     "its certified gap says how far from optimal it may be",
    Status.NONFINITE: "a non-finite value appeared; the answer must not be trusted (the seed is invalid)",
    Status.INVALID_ACTION: "the agent returned an action outside [0, K); the seed is invalid",
}

#: Number of status codes (the length of per-seed status counts).
NUM_STATUS = len(Status)

#: The two gap types of the paper (Section 3.3, 'Certifying Upper Bounds'):
#: ``"delta_f"`` is Delta_f(pi, g) = r_g(pi*_g) - r_f(pi) (the paper's experiments), ``"delta"``
#: is Delta(pi, g) = r_g(pi*_g) - r_g(pi) (Algorithm 1 as stated).
GAP_TYPES = ("delta_f", "delta")

#: Divergence conventions of linear models with Gaussian noise: ``"squared"`` is
#: I_f(pi, g) = ||M_pi (g - f)||^2 (the library's default: the linear-DEC lemma's form and the
#: authors' code), ``"kl"`` the Gaussian KL ||M_pi (g - f)||^2 / (2 sigma^2) (the paper's text).
DIVERGENCES = ("squared", "kl")


class Environment(NamedTuple):
    """Pure functions of a (stateless) bandit environment.

    Attributes:
      observe: ``(key, params, action) -> observation``; the observation has a fixed shape
        for every action (padded where actions observe different amounts).
      mean_rewards: ``params -> (K,)`` expected reward of every action under the true model.
      model: ``params -> model class``, the part of ``params`` the learner may know.
      context: None for an environment without contexts (the same instance every round), or
        ``(key, params, t) -> round_params``: round t's instance (``t`` an int32 scalar, 1 for
        the first round), e.g. a context and the model that goes with it; ``key`` is the
        round's own, from the seed's key stream. ``observe``, ``mean_rewards`` and ``model``
        then apply to the round's instance (the agent acts on ``model(round_params)``, the
        regret counts ``mean_rewards(round_params)`` against the round's best available
        action), and ``model(params)``, what the agent is initialised with, must have the
        structure and shapes of every round's model (:mod:`e2d_jax.envs.contextual`).
      reset: None, or ``(key, params) -> params``: the seed's own instance, drawn once before
        its first round from the seed's key stream (e.g. the order in which a dataset's rows
        arrive, :mod:`e2d_jax.envs.datasets`); ``params`` keeps its structure and shapes.
    """

    observe: Callable[[jax.Array, PyTree, jax.Array], jax.Array]
    mean_rewards: Callable[[PyTree], jax.Array]
    model: Callable[[PyTree], PyTree]
    context: Callable[[jax.Array, PyTree, jax.Array], PyTree] | None = None
    reset: Callable[[jax.Array, PyTree], PyTree] | None = None


class Agent(NamedTuple):
    """Pure functions of a learner (Algorithm 1 and the baselines).

    Attributes:
      init: ``(key, model) -> state``.
      act: ``(key, state, model) -> (action, state, info)``; ``action`` is an int32 scalar in
        [0, K), ``state`` may carry what the decision computed (e.g. a solver's warm start),
        and ``info`` is a NamedTuple with at least an int32 ``status`` field (a
        :class:`Status` code; :class:`ActInfo` is the smallest such info).
      update: ``(state, action, observation, model) -> state``.
      config: what the agent is, for the simulator: an :class:`AgentSpec` (the library's
        factories set one, from the resolved arguments with the defaults filled in; a
        :class:`ByFamily` of them for the agents that pick their implementation by model
        family), any other hashable description (two agents with equal ``config`` compute the
        same thing and share a compiled rollout), or None (an agent written by hand: its
        compiled rollout is kept for that object only).
    """

    init: Callable[[jax.Array, PyTree], PyTree]
    act: Callable[[jax.Array, PyTree, PyTree], tuple[jax.Array, PyTree, PyTree]]
    update: Callable[[PyTree, jax.Array, jax.Array, PyTree], PyTree]
    config: Hashable | None = None


class AgentSpec(NamedTuple):
    """A library agent's configuration, resolved: the factory that builds it and its arguments.

    ``spec.build()`` is the agent again, ``factory(**dict(static), **dict(numbers))``. The
    ``numbers`` are the agent's numeric hyperparameters; everything else is ``static``
    (names, solver values, callables). The simulator always compiles an agent as
    ``factory(**static, **numbers)`` with the numbers as *traced* inputs, so every way of
    asking for the same agent (the agent object, a grid of one or several values, a name on
    the command line or in a sweep file) runs the same compiled program on the same numbers
    and gives the same bits, and agents that differ only in numbers are one program.

    Attributes:
      factory: the family's factory, ``factory(**kwargs) -> Agent``.
      static: sorted ``((name, value), ...)``: the arguments that shape the program.
      numbers: sorted ``((name, float), ...)``: the numeric hyperparameters.
    """

    factory: Callable[..., "Agent"]
    static: tuple
    numbers: tuple

    @classmethod
    def of(cls, factory, numbers: tuple = (), **arguments) -> "AgentSpec | None":
        """The spec of ``factory(**arguments)``: the arguments named in ``numbers`` whose value
        is a number are numbers, the others static. None when a value is traced (an agent built
        inside a compiled program needs no spec) or cannot be hashed."""
        nums, static = [], []
        for key, value in sorted(arguments.items()):
            if isinstance(value, jax.core.Tracer):
                return None
            if key in numbers and _is_number(value):
                nums.append((key, float(np.asarray(value))))
                continue
            try:
                hash(value)
            except TypeError:
                return None
            static.append((key, value))
        return cls(factory, tuple(static), tuple(nums))

    @property
    def name(self) -> str:
        """The factory's name (``anytime_e2d``)."""
        return getattr(self.factory, "__name__", "agent")

    @property
    def program(self) -> tuple:
        """What identifies the compiled program: the factory, the static arguments and the
        names of the numbers (not their values)."""
        return (self.factory, self.static, tuple(k for k, _ in self.numbers))

    def build(self, **numbers) -> "Agent":
        """The agent with some numbers replaced (values may be traced)."""
        unknown = sorted(set(numbers) - {k for k, _ in self.numbers})
        if unknown:
            raise ValueError(f"{self.name} has no numeric hyperparameter {', '.join(unknown)} "
                             f"(its numbers: {', '.join(k for k, _ in self.numbers) or 'none'})")
        return self.factory(**dict(self.static), **{**dict(self.numbers), **numbers})


def _is_number(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float, np.integer, np.floating)):
        return True
    return isinstance(value, (np.ndarray, jax.Array)) and np.ndim(value) == 0 and \
        np.issubdtype(np.asarray(value).dtype, np.number)


class ByFamily(NamedTuple):
    """The ``config`` of an agent that picks its implementation by model family (the
    library's ``anytime_e2d``, ``ids``, ...): the :class:`AgentSpec` of each family's agent, so
    that on a given family it is the same agent as that family's own factory with the same
    resolved arguments (and shares its compiled rollout)."""

    configs: tuple  # ((family, AgentSpec), ...) sorted by family

    def for_family(self, family: str | None) -> Hashable | None:
        """The configuration on ``family``, or None where it is unknown."""
        return dict(self.configs).get(family)


class ActInfo(NamedTuple):
    """Per-round diagnostics of agents that solve no optimisation problem."""

    status: jax.Array  # () int32, a Status code


class E2DInfo(NamedTuple):
    """Per-round diagnostics of the E2D agents of both model families (one convention).

    ``value`` and ``gap`` are in units of regret (the DEC value does not depend on how the
    divergence is scaled: rescaling I by s rescales eps^2 and 1/lambda by s and leaves the
    program's value unchanged); ``lam`` and ``eps2`` are in the agent's own divergence
    convention (``divergence="squared"`` by default on linear models, the KL on finite
    classes).
    """

    status: jax.Array  # () int32 Status of the round's DEC solve
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
      status: () int32 :class:`Status` code.
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

    def __repr__(self) -> str:
        if isinstance(self.status, jax.core.Tracer) or np.ndim(self.status) != 0:
            return "DecResult(" + ", ".join(f"{k}={v!r}" for k, v in self._asdict().items()) + ")"

        def num(x):
            return f"{float(np.asarray(x)):.6g}"

        mu = np.array2string(np.asarray(self.mu), precision=4, suppress_small=True)
        return (f"DecResult(value={num(self.value)}, lower_bound={num(self.lower_bound)}, gap={num(self.gap)}, "
                f"lam={num(self.lam)}, status={Status(int(np.asarray(self.status))).name}, "
                f"iterations={int(np.asarray(self.iterations))}, mu={mu})")


class WarmStart(NamedTuple):
    """What a DEC solve hands to the next one (the next round's, or the next lambda's).

    Attributes:
      mu: (K,) the min player's mixture over actions.
      omega: (N,) the max player's mixture (over actions for the linear DEC, over models for
        finite classes).
      step: () the mirror-prox step the solve ended with (<= 0: chosen automatically).
    """

    mu: jax.Array
    omega: jax.Array
    step: jax.Array

    @classmethod
    def cold(cls, num_actions: int, num_omega: int | None = None, dtype=np.float32) -> "WarmStart":
        """Uniform mixtures and an automatic step: the start of a first solve. ``num_omega``
        defaults to ``num_actions`` (the linear DEC's max player plays over actions)."""
        num_omega = num_actions if num_omega is None else num_omega
        return cls(jnp.full((num_actions,), 1.0 / num_actions, dtype),
                   jnp.full((num_omega,), 1.0 / num_omega, dtype), jnp.zeros((), dtype))
