"""Rollouts: one run is a ``lax.scan`` over rounds; seeds are ``vmap``-ed; batches of seeds
are sharded over the available devices.

Randomness: seed ``i`` of a simulation with master seed ``s`` uses the key
``fold_in(key(s), i)``; round ``t`` (1-based) of that run uses ``fold_in(key_rounds, t)``
split into ``(key_act, key_obs)``. So a seed's trajectory depends only on ``(s, i)``, never on
how many seeds run beside it or how they are batched.

Regret is the cumulative pseudo-regret sum_t Delta(pi_t, f*) of the actions played (the
quantity the paper plots), summed with Kahan compensation so float32 runs of 10^5+ rounds do
not drift.

Memory: only every ``record_every``-th round is recorded, so 10,000 seeds x 10,000 rounds
with ``record_every=100`` keeps 10^6 numbers per recorded field.
"""
from __future__ import annotations

import math
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from e2d_jax import _validation as V
from e2d_jax.types import STATUS_NONFINITE, Agent, Environment, PyTree


class RolloutResult(NamedTuple):
    """One run (or, with a leading seed axis, many).

    Attributes:
      regret: (R,) float cumulative pseudo-regret after each recorded round.
      action_counts: (K,) int32 how often each action was played.
      nonfinite_rounds: () int32 rounds in which the agent reported STATUS_NONFINITE.
      info: the agent's per-round diagnostics (its ``act`` info) at the recorded rounds,
        each leaf with a leading (R,) axis.
    """

    regret: jax.Array
    action_counts: jax.Array
    nonfinite_rounds: jax.Array
    info: PyTree


def record_rounds(horizon: int, record_every: int) -> np.ndarray:
    """The 1-based rounds after which a rollout records: k, 2k, ..., and the horizon."""
    rounds = np.arange(record_every, horizon + 1, record_every)
    if rounds.size == 0 or rounds[-1] != horizon:
        rounds = np.append(rounds, horizon)
    return rounds.astype(np.int64)


def check_run_args(horizon, record_every) -> tuple[int, int]:
    horizon = V.check_int("horizon", horizon, minimum=1)
    record_every = V.check_int("record_every", record_every, minimum=1)
    return horizon, min(record_every, horizon)


def rollout(
    key: jax.Array,
    env_params: PyTree,
    env: Environment,
    agent: Agent,
    horizon: int,
    record_every: int = 1,
) -> RolloutResult:
    """Runs one agent on one instance for ``horizon`` rounds (one ``lax.scan`` per block).

    Args:
      key: the run's PRNG key.
      env_params: the instance (model class and true model).
      env: the environment's functions.
      agent: the agent's functions.
      horizon: number of rounds n (static).
      record_every: record every k-th round (static); the last round is always recorded.

    Returns:
      RolloutResult (see its docstring).
    """
    horizon, record_every = check_run_args(horizon, record_every)
    key_init, key_rounds = jax.random.split(key)
    model = env.model(env_params)
    means = env.mean_rewards(env_params)
    gap = jnp.max(means) - means
    state = agent.init(key_init, model)
    zero = jnp.zeros((), gap.dtype)
    carry = (state, zero, zero, jnp.zeros(gap.shape, jnp.int32), jnp.zeros((), jnp.int32))

    def step(carry, t):
        state, total, comp, counts, bad = carry
        key_act, key_obs = jax.random.split(jax.random.fold_in(key_rounds, t))
        action, state, info = agent.act(key_act, state, model)
        obs = env.observe(key_obs, env_params, action)
        state = agent.update(state, action, obs, model)
        # Kahan summation of the per-round gaps.
        y = gap[action] - comp
        new_total = total + y
        comp = (new_total - total) - y
        counts = counts.at[action].add(1)
        bad = bad + (info.status == STATUS_NONFINITE).astype(jnp.int32)
        return (state, new_total, comp, counts, bad), info

    def block(carry, ts):
        carry, infos = lax.scan(step, carry, ts)
        last = jax.tree_util.tree_map(lambda x: x[-1], infos)
        return carry, (carry[1], last)

    n_blocks, rest = divmod(horizon, record_every)
    ts = jnp.arange(1, n_blocks * record_every + 1, dtype=jnp.int32).reshape(n_blocks, record_every)
    carry, (regret, info) = lax.scan(block, carry, ts)
    if rest:
        tail = jnp.arange(n_blocks * record_every + 1, horizon + 1, dtype=jnp.int32)
        carry, (reg_tail, info_tail) = block(carry, tail)
        regret = jnp.concatenate([regret, reg_tail[None]])
        info = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b[None]]), info, info_tail)
    _, _, _, counts, bad = carry
    return RolloutResult(regret=regret, action_counts=counts, nonfinite_rounds=bad, info=info)


def seed_keys(seed: int, indices) -> jax.Array:
    """Keys ``fold_in(key(seed), i)`` for the given seed indices."""
    master = jax.random.key(seed)
    return jax.vmap(lambda i: jax.random.fold_in(master, i))(jnp.asarray(indices, jnp.uint32))


class Simulation(NamedTuple):
    """Result of :func:`simulate`, as NumPy arrays with a leading seed axis."""

    result: RolloutResult
    rounds: np.ndarray  # (R,) the recorded rounds (1-based)
    seed_indices: np.ndarray  # (S,) the seed indices that were run
    compile_seconds: float
    run_seconds: float


def make_batched_rollout(env, agent, horizon, record_every, batch_size, devices=None):
    """A jitted ``(keys (B,), env_params) -> RolloutResult`` over a batch of seeds.

    With several devices the seed axis is sharded across them (``batch_size`` must then be
    a multiple of the device count) and the instance is replicated.
    """
    fn = jax.vmap(
        lambda k, p: rollout(k, p, env, agent, horizon, record_every), in_axes=(0, None)
    )
    devices = list(devices) if devices is not None else jax.devices()
    if len(devices) > 1 and batch_size % len(devices) == 0:
        mesh = jax.sharding.Mesh(np.array(devices), ("seeds",))
        seeds = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("seeds"))
        repl = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
        return jax.jit(fn, in_shardings=(seeds, repl), out_shardings=seeds)
    return jax.jit(fn)


def simulate(
    env: Environment,
    env_params: PyTree,
    agent: Agent,
    *,
    horizon: int,
    num_seeds: int,
    seed: int = 0,
    record_every: int = 1,
    batch_size: int | None = None,
    first_seed: int = 0,
    devices=None,
) -> Simulation:
    """Runs seeds ``first_seed, ..., first_seed + num_seeds - 1`` in batches of ``batch_size``.

    Every batch has the same shape (the last is padded and the padding discarded), so the
    rollout compiles once. ``compile_seconds`` is measured apart from ``run_seconds``.
    """
    horizon, record_every = check_run_args(horizon, record_every)
    num_seeds = V.check_int("num_seeds", num_seeds, minimum=1)
    batch = num_seeds if batch_size is None else V.check_int("batch_size", batch_size, minimum=1)
    batch = min(batch, num_seeds)
    n_dev = len(list(devices) if devices is not None else jax.devices())
    if n_dev > 1:
        batch = int(math.ceil(batch / n_dev) * n_dev)
    fn = make_batched_rollout(env, agent, horizon, record_every, batch, devices)
    indices = np.arange(first_seed, first_seed + num_seeds)
    n_batches = int(math.ceil(num_seeds / batch))
    padded = np.resize(indices, n_batches * batch) if n_batches * batch != num_seeds else indices
    padded = np.concatenate([indices, indices[: n_batches * batch - num_seeds]])

    t0 = time.perf_counter()
    compiled = fn.lower(seed_keys(seed, padded[:batch]), env_params).compile()
    compile_seconds = time.perf_counter() - t0

    t0 = time.perf_counter()
    outs = []
    for b in range(n_batches):
        keys = seed_keys(seed, padded[b * batch : (b + 1) * batch])
        outs.append(jax.device_get(compiled(keys, env_params)))
    run_seconds = time.perf_counter() - t0
    stacked = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs)[:num_seeds], *outs)
    return Simulation(
        result=stacked,
        rounds=record_rounds(horizon, record_every),
        seed_indices=indices,
        compile_seconds=compile_seconds,
        run_seconds=run_seconds,
    )
