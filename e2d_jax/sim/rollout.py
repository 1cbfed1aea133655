"""One run: a ``lax.scan`` over rounds of one agent on one instance.

Randomness (:func:`run_keys`): seed ``i`` of a simulation with master seed ``s`` uses the key
``fold_in(fold_in(key(s), RUN_STREAM), i)``; round ``t`` (1-based) of that run uses
``fold_in(key_rounds, t)`` split into ``(key_act, key_obs)`` (derived for ``KEY_BLOCK``
rounds at once, the same keys). Random instances are drawn from
``instance_key(s) = fold_in(key(s), INSTANCE_STREAM)``, a different stream, so an instance
seed and a run seed of the same value never share keys. A seed's trajectory depends only on
``(s, i)``, never on how many seeds run beside it or how they are batched.

Regret is the cumulative pseudo-regret sum_t Delta(pi_t, f*) of the actions played (the
quantity the paper plots), summed with Kahan compensation so float32 runs of 10^5+ rounds do
not drift.

Contexts: an environment with ``context`` (:class:`~e2d_jax.types.Environment`) draws round
t's instance from ``fold_in(key_obs, CONTEXT_STREAM)`` and t; the agent acts and updates on
that instance's model and the round's gap is the played action's in it, against the round's
best available action (a linear model's ``available`` mask, :class:`~e2d_jax.envs.linear.LinearModel`);
an action the round's model marks unavailable is recorded as a round with
``Status.INVALID_ACTION``. An environment with ``reset`` draws the seed's instance once, from
``fold_in(key_init, RESET_STREAM)``, before the first round. Without ``context`` and ``reset``
a round runs exactly as it did before contexts existed (the same keys, the same program).

The interaction contract (:class:`~e2d_jax.types.Agent`) is checked twice. Before anything
runs, :func:`check_agent` traces one round abstractly (``jax.eval_shape``) and refuses, with
the argument and what was expected, an action that is not an integer scalar, an info without
an integer ``status``, or a state whose structure changes between rounds. While the run goes
on, an action outside [0, K) is recorded as a round with ``Status.INVALID_ACTION`` (the
environment sees the action clipped into range; the seed is invalid and left out of every
summary), never clamped silently.

Per-seed solver statistics (:class:`SolverStats`), over *every* round, not only the
recorded ones: the number of rounds per status code, and for agents whose info has ``gap``
and ``value`` a histogram of the relative certified gap gap / |value| on fixed log-spaced
bins (``GAP_BIN_EDGES``), from which :func:`e2d_jax.sim.summaries.solver_summary` reads
per-seed medians and 90th percentiles.

Invalid seeds: a round whose status is ``NONFINITE`` or ``INVALID_ACTION`` is counted in
``invalid_rounds``; such a seed is *invalid* (:func:`e2d_jax.sim.summaries.valid_seeds`), and
the summaries leave it out of means and say so. Other seeds are untouched (vmap keeps seeds
independent).

Memory: only every ``record_every``-th round is recorded, so 10,000 seeds x 10,000 rounds
with ``record_every=100`` keeps 10^6 numbers per recorded field.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from e2d_jax import _checks as V
from e2d_jax.envs.family import environment_of
from e2d_jax.types import NUM_STATUS, Agent, Environment, PyTree, Status

#: Stream tags folded into a seed's root key (see the module docstring).
RUN_STREAM = 0x52554E  # "RUN"
INSTANCE_STREAM = 0x494E5354  # "INST"

#: The tag folded into a round's observation key to draw the round's context (environments
#: with ``context``; see :class:`~e2d_jax.types.Environment`).
CONTEXT_STREAM = 0x43545854  # "CTXT"
#: The tag folded into a run's init key to draw the seed's instance (environments with
#: ``reset``).
RESET_STREAM = 0x52535400  # "RST"

#: Rounds whose keys are derived together (see ``rollout``).
KEY_BLOCK = 32

#: Bin edges of the relative certified gap: 4 per decade from 1e-8 to 1e2. Bin 0 holds gaps
#: below 1e-8, bin j (1 <= j <= 40) [edge j-1, edge j), the last bin >= 1e2 or non-finite.
GAP_BIN_EDGES = np.logspace(-8, 2, 41)
NUM_GAP_BINS = GAP_BIN_EDGES.size + 1


def run_keys(seed: int, indices) -> jax.Array:
    """Keys of runs ``indices`` under master seed ``seed`` (see the module docstring)."""
    root = jax.random.fold_in(jax.random.key(seed), RUN_STREAM)
    return jax.vmap(lambda i: jax.random.fold_in(root, i))(jnp.asarray(indices, jnp.uint32))


def instance_key(instance_seed: int) -> jax.Array:
    """The key a random instance with seed ``instance_seed`` is drawn from."""
    return jax.random.fold_in(jax.random.key(instance_seed), INSTANCE_STREAM)


def instance_keys(instance_seeds) -> jax.Array:
    """A batch of :func:`instance_key` (for ``jax.vmap`` over an instance builder)."""
    return jnp.stack([instance_key(int(s)) for s in np.asarray(instance_seeds).reshape(-1)])


class SolverStats(NamedTuple):
    """Per-seed statistics of the agent's per-round status and certified gap (all rounds)."""

    status_counts: jax.Array  # (NUM_STATUS,) int32 rounds per Status code
    gap_hist: jax.Array  # (NUM_GAP_BINS,) int32 rounds per relative-gap bin (0s if no gap)


class RolloutResult(NamedTuple):
    """One run (or, with leading seed / instance / hyperparameter axes, many).

    Attributes:
      regret: (R,) float cumulative pseudo-regret after each recorded round.
      action_counts: (K,) int32 how often each action was played.
      invalid_rounds: () int32 rounds whose status was ``NONFINITE`` or ``INVALID_ACTION``
        (the seed is invalid when it is > 0; ``solver.status_counts`` says which).
      solver: :class:`SolverStats` over all rounds.
      info: the agent's per-round diagnostics (its ``act`` info) at the recorded rounds,
        each leaf with a leading (R,) axis.
    """

    regret: jax.Array
    action_counts: jax.Array
    invalid_rounds: jax.Array
    solver: SolverStats
    info: PyTree


def record_rounds(horizon: int, record_every: int) -> np.ndarray:
    """The 1-based rounds after which a rollout records: k, 2k, ..., and the horizon."""
    rounds = np.arange(record_every, horizon + 1, record_every)
    if rounds.size == 0 or rounds[-1] != horizon:
        rounds = np.append(rounds, horizon)
    return rounds.astype(np.int64)


def seed_instances(params: PyTree, num_seeds: int, *, seed: int = 0, first_seed: int = 0,
                   env: Environment | None = None) -> PyTree:
    """The instance each of seeds ``first_seed, ..., first_seed + num_seeds - 1`` of a
    simulation with master seed ``seed`` runs on: ``env.reset``'s draw from the seed's key
    stream (e.g. the order of a dataset's rows), stacked along a leading seed axis; ``params``
    itself for every seed of an environment without ``reset``."""
    env = environment_of(params, env)
    keys = run_keys(seed, np.arange(first_seed, first_seed + V.check_int("num_seeds", num_seeds, minimum=1)))

    def one(key):
        key_init, _ = jax.random.split(key)
        if env.reset is None:
            return params
        return env.reset(jax.random.fold_in(key_init, RESET_STREAM), params)

    return jax.vmap(one)(keys)


def check_run_args(horizon, record_every) -> tuple[int, int]:
    horizon = V.check_int("horizon", horizon, minimum=1)
    record_every = V.check_int("record_every", record_every, minimum=1)
    return horizon, min(record_every, horizon)


def _gap_bin(info, dtype):
    if not (hasattr(info, "gap") and hasattr(info, "value")):
        return None
    rel = info.gap / jnp.maximum(jnp.abs(info.value), jnp.finfo(dtype).tiny)
    edges = jnp.asarray(GAP_BIN_EDGES, dtype)
    # One comparison against all 41 edges: the default binary search is a while loop, which
    # costs a handful of kernel launches every round.
    idx = jnp.searchsorted(edges, rel, side="right", method="compare_all")
    return jnp.where(jnp.isfinite(rel), idx, NUM_GAP_BINS - 1)


def _describe(x) -> str:
    if x is None:
        return "None"
    if hasattr(x, "dtype") and hasattr(x, "shape"):
        return f"an array of shape {tuple(x.shape)} and dtype {x.dtype}"
    return f"a {type(x).__name__}"


def check_step_outputs(action, info, who: str = "agent.act") -> None:
    """Refuses (ValueError) an action that is not an integer scalar or an info without an
    integer scalar ``status``; works on tracers and abstract values (trace time)."""
    if not (hasattr(action, "dtype") and jnp.issubdtype(action.dtype, jnp.integer) and tuple(action.shape) == ()):
        raise ValueError(f"{who} must return an integer scalar action (int32, in [0, K)) first, got "
                         f"{_describe(action)}")
    status = getattr(info, "status", None)
    if not (hasattr(status, "dtype") and jnp.issubdtype(status.dtype, jnp.integer) and tuple(status.shape) == ()):
        raise ValueError(f"{who} must return (action, state, info) with an info that has an int32 scalar 'status' "
                         f"field (e.g. e2d_jax.types.ActInfo(status=...)); info is {_describe(info)}"
                         + ("" if info is None else f" and its status {_describe(status)}"))


def check_agent(agent, params: PyTree, env: Environment | None = None, hparams: dict | None = None) -> None:
    """Checks the interaction contract on one abstract round (``jax.eval_shape``: nothing is
    computed): an :class:`~e2d_jax.types.Agent`, an integer scalar action, an info with an
    integer ``status``, and a state whose structure, shapes and dtypes stay the same across a
    round. With ``hparams`` (``{name: value}``), ``agent`` is a factory called with them as
    traced values, as in a grid. Raises a ValueError naming what is wrong."""
    env = environment_of(params, env)

    def one_round(key, params, hp):
        made = agent(**hp) if hparams is not None else agent
        if not isinstance(made, Agent):
            raise ValueError(f"agent must be an e2d_jax.Agent (from a factory such as e2d_jax.ucb()), got "
                             f"{type(made).__name__}")
        key_init, key_act, key_obs = jax.random.split(key, 3)
        if env.reset is not None:
            params = _check_reset(params, env.reset(jax.random.fold_in(key_init, RESET_STREAM), params))
        model = env.model(params)
        state = made.init(key_init, model)
        if env.context is not None:
            params = env.context(jax.random.fold_in(key_obs, CONTEXT_STREAM), params, jnp.ones((), jnp.int32))
            model = _check_round_model(model, env.model(params))
        action, new_state, info = made.act(key_act, state, model)
        check_step_outputs(action, info)
        obs = env.observe(key_obs, params, jnp.clip(action, 0, None))
        after = made.update(new_state, action, obs, model)
        return state, new_state, after

    states = jax.eval_shape(one_round, jax.random.key(0), params, hparams or {})
    signature = [jax.tree_util.tree_structure(s) for s in states]
    first = [(x.shape, x.dtype) for x in jax.tree_util.tree_leaves(states[0])]
    for name, sig, s in zip(("agent.act", "agent.update"), signature[1:], states[1:]):
        leaves = [(x.shape, x.dtype) for x in jax.tree_util.tree_leaves(s)]
        if sig != signature[0] or leaves != first:
            raise ValueError(f"{name} must return a state with the structure, shapes and dtypes of agent.init's "
                             f"(lax.scan carries it): init gave {signature[0]} {first}, {name} gave {sig} {leaves}")


def _check_reset(params, seed_params):
    """The seed's instance from ``env.reset``, if it has the structure, shapes and dtypes of
    ``params``; a ValueError otherwise."""
    sig = [jax.tree_util.tree_structure(p) for p in (params, seed_params)]
    leaves = [[(x.shape, x.dtype) for x in jax.tree_util.tree_leaves(p)] for p in (params, seed_params)]
    if sig[0] != sig[1] or leaves[0] != leaves[1]:
        raise ValueError(f"env.reset must return an instance with the structure, shapes and dtypes of params: "
                         f"params is {sig[0]} {leaves[0]}, env.reset gave {sig[1]} {leaves[1]}")
    return seed_params


def _check_round_model(model, round_model):
    """The round's model of an environment with contexts, if it has the structure, shapes and
    dtypes of ``env.model(params)`` (what the agent was initialised with); a ValueError otherwise."""
    sig = [jax.tree_util.tree_structure(m) for m in (model, round_model)]
    leaves = [[(x.shape, x.dtype) for x in jax.tree_util.tree_leaves(m)] for m in (model, round_model)]
    if sig[0] != sig[1] or leaves[0] != leaves[1]:
        raise ValueError(f"env.context must return a round's instance whose model has the structure, shapes and "
                         f"dtypes of env.model(params) (the agent is initialised with it): env.model(params) is "
                         f"{sig[0]} {leaves[0]}, the round's model {sig[1]} {leaves[1]}")
    return round_model


class _RoundCarry(NamedTuple):
    """What a run carries from round to round."""

    state: PyTree  # the agent's state
    regret: jax.Array  # () the cumulative pseudo-regret (a Kahan sum)
    compensation: jax.Array  # () the Kahan sum's compensation
    counts: jax.Array  # (K,) int32 plays per action
    stats: SolverStats  # per-status round counts and the certified-gap histogram


def available_actions(model) -> jax.Array | None:
    """The (K,) bool mask of the actions a model lets the agent play this round (a linear
    model's ``available``), or None when every action is."""
    return getattr(model, "available", None)


def action_gaps(means: jax.Array, model) -> jax.Array:
    """(K,) the round's gaps: the best available action's mean reward minus each action's."""
    available = available_actions(model)
    if available is None:
        return jnp.max(means) - means
    return jnp.max(jnp.where(available, means, -jnp.inf)) - means


def _play(agent: Agent, env: Environment, params, model, gap, carry: _RoundCarry, round_):
    """One round: the agent acts, the environment answers, the agent updates; the round's gap
    is added to the regret and its status and certified gap counted. Returns ``(carry, info)``."""
    _, (key_act, key_obs) = round_
    num_actions = gap.shape[0]
    action, state, info = agent.act(key_act, carry.state, model)
    check_step_outputs(action, info)
    # An action outside [0, K), or one the round does not offer, invalidates the seed (its
    # status says why); the environment and the bookkeeping see it clipped so that no index is
    # out of range.
    out_of_range = (action < 0) | (action >= num_actions)
    action = jnp.clip(action, 0, num_actions - 1).astype(jnp.int32)
    available = available_actions(model)
    if available is not None:
        out_of_range = out_of_range | ~available[action]
    status = jnp.where(out_of_range, Status.INVALID_ACTION, info.status)
    obs = env.observe(key_obs, params, action)
    state = agent.update(state, action, obs, model)
    # Kahan summation of the per-round gaps.
    y = gap[action] - carry.compensation
    total = carry.regret + y
    compensation = (total - carry.regret) - y
    stats = carry.stats
    status_counts = stats.status_counts.at[jnp.clip(status, 0, NUM_STATUS - 1)].add(1)
    bin_ = _gap_bin(info, gap.dtype)
    hist = stats.gap_hist if bin_ is None else stats.gap_hist.at[bin_].add(1)
    return _RoundCarry(state, total, compensation, carry.counts.at[action].add(1),
                       SolverStats(status_counts, hist)), info


def _play_in_context(agent: Agent, env: Environment, params, carry: _RoundCarry, round_):
    """One round of an environment with contexts: round t's instance is drawn from t and the
    round's observation key (folded with ``CONTEXT_STREAM``), then :func:`_play` on it, its
    regret against the round's best available action."""
    t, (_, key_obs) = round_
    round_params = env.context(jax.random.fold_in(key_obs, CONTEXT_STREAM), params, t)
    model = env.model(round_params)
    return _play(agent, env, round_params, model, action_gaps(env.mean_rewards(round_params), model), carry,
                 round_)


def _recorded_blocks(play, key_rounds, carry, horizon: int, record_every: int):
    """The rounds 1..horizon in blocks of ``record_every`` (and a last shorter one): the carry
    after the last round, the regret after each block and the info of each block's last round."""

    def rounds(carry, ts):
        # The keys of up to KEY_BLOCK rounds in one batched draw (the same keys as one round at
        # a time: threefry hashes each counter on its own), so a round runs no key derivation.
        keys = jax.vmap(lambda t: tuple(jax.random.split(jax.random.fold_in(key_rounds, t))))(ts)
        carry, infos = lax.scan(play, carry, (ts, keys))
        return carry, jax.tree_util.tree_map(lambda x: x[-1], infos)

    def block(carry, ts):
        # Rounds in chunks of KEY_BLOCK, so that the keys and infos held at once stay bounded
        # however long the block.
        if ts.shape[0] <= KEY_BLOCK:
            carry, last = rounds(carry, ts)
        else:
            n_chunks, rest = divmod(ts.shape[0], KEY_BLOCK)
            whole = ts[:n_chunks * KEY_BLOCK].reshape(n_chunks, KEY_BLOCK)
            carry, lasts = lax.scan(rounds, carry, whole)
            last = jax.tree_util.tree_map(lambda x: x[-1], lasts)
            if rest:
                carry, last = rounds(carry, ts[n_chunks * KEY_BLOCK:])
        return carry, (carry.regret, last)

    n_blocks, rest = divmod(horizon, record_every)
    ts = jnp.arange(1, n_blocks * record_every + 1, dtype=jnp.int32).reshape(n_blocks, record_every)
    carry, (regret, info) = lax.scan(block, carry, ts)
    if rest:
        tail = jnp.arange(n_blocks * record_every + 1, horizon + 1, dtype=jnp.int32)
        carry, (reg_tail, info_tail) = block(carry, tail)
        regret = jnp.concatenate([regret, reg_tail[None]])
        info = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b[None]]), info, info_tail)
    return carry, regret, info


def rollout(
    key: jax.Array,
    params: PyTree,
    agent: Agent,
    *,
    horizon: int,
    record_every: int = 1,
    env: Environment | None = None,
) -> RolloutResult:
    """Runs one agent on one instance for ``horizon`` rounds (one ``lax.scan`` per block).

    Args:
      key: the run's PRNG key.
      params: the instance (model class and true model).
      agent: the agent's functions.
      horizon: number of rounds n (static).
      record_every: record every k-th round (static); the last round is always recorded.
      env: the environment's functions; inferred from the type of ``params`` when None.

    Returns:
      RolloutResult (see its docstring).
    """
    horizon, record_every = check_run_args(horizon, record_every)
    env = environment_of(params, env)
    key_init, key_rounds = jax.random.split(key)
    if env.reset is not None:
        params = env.reset(jax.random.fold_in(key_init, RESET_STREAM), params)
    model = env.model(params)
    if env.context is None:
        gap = action_gaps(env.mean_rewards(params), model)
        play = functools.partial(_play, agent, env, params, model, gap)
    else:
        # The rounds' rewards have one shape and dtype (check_agent checks the rounds' models).
        gap = jax.eval_shape(lambda: env.mean_rewards(env.context(key_rounds, params, jnp.ones((), jnp.int32))))
        play = functools.partial(_play_in_context, agent, env, params)
    zero = jnp.zeros((), gap.dtype)
    stats = SolverStats(jnp.zeros((NUM_STATUS,), jnp.int32), jnp.zeros((NUM_GAP_BINS,), jnp.int32))
    carry = _RoundCarry(agent.init(key_init, model), zero, zero, jnp.zeros(gap.shape, jnp.int32), stats)
    carry, regret, info = _recorded_blocks(play, key_rounds, carry, horizon, record_every)
    invalid = carry.stats.status_counts[Status.NONFINITE] + carry.stats.status_counts[Status.INVALID_ACTION]
    return RolloutResult(regret=regret, action_counts=carry.counts, invalid_rounds=invalid, solver=carry.stats,
                         info=info)
