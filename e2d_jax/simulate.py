"""Rollouts: one run is a ``lax.scan`` over rounds; seeds are ``vmap``-ed, ``CPU_LANES`` (64)
trajectories per compiled call and device (see ``lanes_for``), each seed with its own copy of the instance; several devices
each run the one-device program on their share (:class:`PerDeviceRollout`); instances and
hyperparameter grids are further ``vmap``-ed axes of the same compiled function. A seed's
bits therefore do not depend on the seeds, chunks or devices beside it (see ``CPU_LANES``).

Randomness (``run_keys``): seed ``i`` of a simulation with master seed ``s`` uses the key
``fold_in(fold_in(key(s), RUN_STREAM), i)``; round ``t`` (1-based) of that run uses
``fold_in(key_rounds, t)`` split into ``(key_act, key_obs)``. Random instances are drawn from
``instance_key(s) = fold_in(key(s), INSTANCE_STREAM)``, a different stream, so an instance
seed and a run seed of the same value never share keys. A seed's trajectory depends only on
``(s, i)``, never on how many seeds run beside it or how they are batched.

Regret is the cumulative pseudo-regret sum_t Delta(pi_t, f*) of the actions played (the
quantity the paper plots), summed with Kahan compensation so float32 runs of 10^5+ rounds do
not drift.

Per-seed solver statistics (:class:`SolverStats`), over *every* round, not only the
recorded ones: the number of rounds per status code, and for agents whose info has ``gap``
and ``value`` a histogram of the relative certified gap gap / |value| on fixed log-spaced
bins (``GAP_BIN_EDGES``), from which :func:`solver_summary` reads per-seed medians and 90th
percentiles (as the upper edge of the bin: an upper bound within a factor 10^(1/4)).

Non-finite decisions: a round whose agent reports STATUS_NONFINITE is counted in
``nonfinite_rounds``; such a seed is *invalid* (:func:`valid_seeds`), and the library's
summaries (the CLI, the experiment layer) leave it out of means and say so. Other seeds are
untouched (vmap keeps seeds independent).

Memory: only every ``record_every``-th round is recorded, so 10,000 seeds x 10,000 rounds
with ``record_every=100`` keeps 10^6 numbers per recorded field.

Compilation: :func:`simulate` keeps the compiled function of each (environment, agent,
shapes, devices) in memory, so calling it again with the same objects does not compile again.
"""
from __future__ import annotations

import collections
import concurrent.futures
import math
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from e2d_jax import _validation as V
from e2d_jax.types import NUM_STATUS, STATUS_MAX_ITER, STATUS_NONFINITE, Agent, Environment, PyTree

#: Stream tags folded into a seed's root key (see the module docstring).
RUN_STREAM = 0x52554E  # "RUN"
INSTANCE_STREAM = 0x494E5354  # "INST"

#: Bin edges of the relative certified gap: 4 per decade from 1e-8 to 1e2. Bin 0 holds gaps
#: below 1e-8, bin j (1 <= j <= 40) [edge j-1, edge j), the last bin >= 1e2 or non-finite.
GAP_BIN_EDGES = np.logspace(-8, 2, 41)
NUM_GAP_BINS = GAP_BIN_EDGES.size + 1


def run_keys(seed: int, indices) -> jax.Array:
    """Keys of runs ``indices`` under master seed ``seed`` (see the module docstring)."""
    root = jax.random.fold_in(jax.random.key(seed), RUN_STREAM)
    return jax.vmap(lambda i: jax.random.fold_in(root, i))(jnp.asarray(indices, jnp.uint32))


seed_keys = run_keys  # the name used by earlier versions


def instance_key(instance_seed: int) -> jax.Array:
    """The key a random instance with seed ``instance_seed`` is drawn from."""
    return jax.random.fold_in(jax.random.key(instance_seed), INSTANCE_STREAM)


def instance_keys(instance_seeds) -> jax.Array:
    """A batch of :func:`instance_key` (for ``jax.vmap`` over an instance builder)."""
    return jnp.stack([instance_key(int(s)) for s in np.asarray(instance_seeds).reshape(-1)])


class SolverStats(NamedTuple):
    """Per-seed statistics of the agent's per-round status and certified gap (all rounds)."""

    status_counts: jax.Array  # (NUM_STATUS,) int32 rounds per STATUS_* code
    gap_hist: jax.Array  # (NUM_GAP_BINS,) int32 rounds per relative-gap bin (0s if no gap)


class RolloutResult(NamedTuple):
    """One run (or, with leading seed / instance / hyperparameter axes, many).

    Attributes:
      regret: (R,) float cumulative pseudo-regret after each recorded round.
      action_counts: (K,) int32 how often each action was played.
      nonfinite_rounds: () int32 rounds in which the agent reported STATUS_NONFINITE.
      solver: :class:`SolverStats` over all rounds.
      info: the agent's per-round diagnostics (its ``act`` info) at the recorded rounds,
        each leaf with a leading (R,) axis.
    """

    regret: jax.Array
    action_counts: jax.Array
    nonfinite_rounds: jax.Array
    solver: SolverStats
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


def _gap_bin(info, dtype):
    if not (hasattr(info, "gap") and hasattr(info, "value")):
        return None
    rel = info.gap / jnp.maximum(jnp.abs(info.value), jnp.finfo(dtype).tiny)
    edges = jnp.asarray(GAP_BIN_EDGES, dtype)
    # One comparison against all 41 edges: the default binary search is a while loop, which
    # on the CPU costs a handful of kernel launches every round.
    idx = jnp.searchsorted(edges, rel, side="right", method="compare_all")
    return jnp.where(jnp.isfinite(rel), idx, NUM_GAP_BINS - 1)


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
    stats = SolverStats(jnp.zeros((NUM_STATUS,), jnp.int32), jnp.zeros((NUM_GAP_BINS,), jnp.int32))
    carry = (state, zero, zero, jnp.zeros(gap.shape, jnp.int32), stats)

    def step(carry, t):
        state, total, comp, counts, stats = carry
        key_act, key_obs = jax.random.split(jax.random.fold_in(key_rounds, t))
        action, state, info = agent.act(key_act, state, model)
        obs = env.observe(key_obs, env_params, action)
        state = agent.update(state, action, obs, model)
        # Kahan summation of the per-round gaps.
        y = gap[action] - comp
        new_total = total + y
        comp = (new_total - total) - y
        counts = counts.at[action].add(1)
        status_counts = stats.status_counts.at[jnp.clip(info.status, 0, NUM_STATUS - 1)].add(1)
        bin_ = _gap_bin(info, gap.dtype)
        hist = stats.gap_hist if bin_ is None else stats.gap_hist.at[bin_].add(1)
        return (state, new_total, comp, counts, SolverStats(status_counts, hist)), info

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
    _, _, _, counts, stats = carry
    return RolloutResult(regret=regret, action_counts=counts, nonfinite_rounds=stats.status_counts[STATUS_NONFINITE],
                         solver=stats, info=info)


# --------------------------------------------------------------------------------------
# Summaries of results


def valid_seeds(result: RolloutResult) -> np.ndarray:
    """Boolean mask (leading axes of ``result``): seeds without a non-finite round."""
    return np.asarray(result.nonfinite_rounds) == 0


def _hist_quantile(hist: np.ndarray, q: float) -> np.ndarray:
    """Upper bin edge at quantile q of per-seed histograms (..., NUM_GAP_BINS); NaN if empty."""
    hist = np.asarray(hist, np.int64)
    total = hist.sum(-1)
    cum = np.cumsum(hist, -1)
    idx = np.argmax(cum >= np.maximum(np.ceil(q * total), 1)[..., None], axis=-1)
    upper = np.concatenate([GAP_BIN_EDGES, [np.inf]])  # bin j holds values below edge j
    return np.where(total > 0, upper[idx], np.nan)


def solver_summary(stats: SolverStats) -> dict:
    """Per-seed solver statistics as NumPy arrays (leading axes of ``stats``).

    Returns:
      dict with ``max_iter_rounds``, ``nonfinite_rounds`` (int counts) and
      ``rel_gap_median``, ``rel_gap_p90`` (upper bounds from the histogram; NaN for agents
      without a certified gap).
    """
    counts = np.asarray(stats.status_counts)
    hist = np.asarray(stats.gap_hist)
    return {
        "max_iter_rounds": counts[..., STATUS_MAX_ITER],
        "nonfinite_rounds": counts[..., STATUS_NONFINITE],
        "rel_gap_median": _hist_quantile(hist, 0.5),
        "rel_gap_p90": _hist_quantile(hist, 0.9),
    }


def hparam_grid(**axes) -> dict:
    """The Cartesian product of hyperparameter values, flattened into cells.

    ``hparam_grid(eps2_scale=[0.1, 1.0], reg=[1.0, 2.0])`` gives 4 cells:
    ``{"eps2_scale": array([0.1, 0.1, 1, 1]), "reg": array([1, 2, 1, 2])}``, ready for
    ``simulate(..., hparams=...)``.
    """
    if not axes:
        raise ValueError("hparam_grid needs at least one axis, e.g. hparam_grid(eps2_scale=[0.1, 1])")
    names = list(axes)
    values = [np.asarray(v, np.float64).reshape(-1) for v in axes.values()]
    for name, v in zip(names, values):
        if v.size == 0:
            raise ValueError(f"hparam_grid: axis {name!r} has no values")
    mesh = np.meshgrid(*values, indexing="ij")
    return {n: m.reshape(-1) for n, m in zip(names, mesh)}


# --------------------------------------------------------------------------------------
# Batched, compiled runs


class Simulation(NamedTuple):
    """Result of :func:`simulate`, as NumPy arrays.

    ``result`` leaves have leading axes (H, I, S): hyperparameter cells (only with
    ``hparams``), instances (only with ``instances=True``) and seeds.
    """

    result: RolloutResult
    rounds: np.ndarray  # (R,) the recorded rounds (1-based)
    seed_indices: np.ndarray  # (S,) the seed indices that were run
    compile_seconds: float  # 0 when the compiled function came from the in-memory cache
    run_seconds: float


def make_batched_rollout(env, agent, horizon, record_every, batch_size, devices=None, *,
                         instances: bool = False, hparams: tuple = ()):
    """A jitted ``(keys (B,), env_params, hparams) -> RolloutResult`` over a batch of seeds.

    ``agent`` is an Agent, or with ``hparams`` (the names of the hyperparameters) a factory
    called as ``agent(**{name: traced value})``. With ``instances`` the params carry a leading
    instance axis. The output axes are (H, I, B) for the axes present. With several devices
    the seed axis is sharded across them (``batch_size`` must then be a multiple of the
    device count) and the rest is replicated.
    """
    def one(key, params, hp):
        ag = agent(**hp) if hparams else agent
        return rollout(key, params, env, ag, horizon, record_every)

    def per_seed_rollouts(keys, params, hp):
        # Every seed gets its own copy of the instance, so that no matrix product of the
        # round has an operand shared across the seed axis. A product of a shared matrix with
        # per-seed vectors becomes one matrix-matrix product over the batch, whose kernel
        # (blocking, vector width, FMA use) XLA picks by the batch's size: per-seed results
        # then changed with the batch size and the device count (measured: 6-14 of 100 seeds
        # of Anytime-E2D and E2D differed between batches of 100, 40, 7 and 1). With per-seed
        # copies every product is batched with a fixed per-seed shape, and every seed's bits
        # are the same in any batch, chunk and device layout (tests/test_invariance.py). The
        # barrier keeps XLA from folding the broadcast back into a shared operand. Cost: the
        # instance's memory times the batch (``runner.estimate_memory`` counts it); no loss
        # of speed was measured (Anytime-E2D, Exp. 1, 1,000 seeds, rounds 200-400, one run:
        # 67k seed-rounds/s with the copies, 65k with the shared instance).
        per_seed = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (keys.shape[0],) + jnp.shape(x)), params)
        per_seed = lax.optimization_barrier(per_seed)
        return jax.vmap(one, in_axes=(0, 0, None))(keys, per_seed, hp)

    fn = per_seed_rollouts
    if instances:
        fn = jax.vmap(fn, in_axes=(None, 0, None))
    if hparams:
        fn = jax.vmap(fn, in_axes=(None, None, 0))
    devices = list(devices) if devices is not None else jax.devices()
    if len(devices) > 1 and batch_size % len(devices) == 0:
        return PerDeviceRollout(jax.jit(fn), devices, int(bool(hparams)) + int(instances))
    return jax.jit(fn)


class PerDeviceRollout:
    """The seed axis split over several devices, each running the *one-device* program on its
    slice (dispatched asynchronously, so the devices work at once).

    Not ``jit`` with sharded inputs, nor ``shard_map``: their partitioned programs were
    measured to round some values differently from the one-device program (1 ulp in the
    DEC's value, every seed, on 2 forced host devices), so a seed's bits changed with the
    device count. The one-device program on each device gives every seed the same bits on any
    number of devices (``tests/test_invariance.py``); each device is driven from its own
    thread (JAX releases the GIL while a computation runs). Same interface as a jitted function:
    ``.lower(keys, params, hp).compile()`` then call; outputs are NumPy arrays.
    """

    def __init__(self, jitted, devices, seed_axis: int, compiled=None, sequential=False):
        self.jitted, self.devices, self.seed_axis, self.compiled = jitted, list(devices), seed_axis, compiled
        self.sequential = sequential

    def _slices(self, keys, params, hp):
        n = len(self.devices)
        per = keys.shape[0] // n
        for i, dev in enumerate(self.devices):
            put = lambda x, dev=dev: jax.device_put(x, dev)
            yield dev, put(keys[i * per:(i + 1) * per]), jax.tree_util.tree_map(put, params), \
                jax.tree_util.tree_map(put, hp)

    def lower(self, keys, params, hp):
        self._lowered = [self.jitted.lower(k, p, h) for _, k, p, h in self._slices(keys, params, hp)]
        # Two LAPACK calls at once on two forced host devices were measured to deadlock (TS at
        # d = 30, the Cholesky of a 30 x 30 matrix): such programs run one device at a time.
        self._sequential = (self.devices[0].platform == "cpu"
                            and "lapack" in self._lowered[0].as_text().lower())
        return self

    def compile(self):
        return PerDeviceRollout(self.jitted, self.devices, self.seed_axis,
                                [lowered.compile() for lowered in self._lowered], self._sequential)

    def __call__(self, keys, params, hp):
        fns = self.compiled or [self.jitted] * len(self.devices)
        if self.sequential:
            outs = [jax.device_get(fn(*args[1:])) for fn, args in zip(fns, self._slices(keys, params, hp))]
            return jax.tree_util.tree_map(lambda *xs: np.concatenate(xs, axis=self.seed_axis), *outs)
        # One thread per device: XLA's CPU client runs a computation in the calling thread,
        # so dispatching from one thread would run the devices one after the other.
        with concurrent.futures.ThreadPoolExecutor(len(fns)) as pool:
            futures = [pool.submit(lambda fn, a: jax.device_get(fn(*a[1:])), fn, args)
                       for fn, args in zip(fns, self._slices(keys, params, hp))]
            outs = [f.result() for f in futures]
        return jax.tree_util.tree_map(lambda *xs: np.concatenate(xs, axis=self.seed_axis), *outs)


#: Trajectories per compiled call and device on CPUs: seeds x instances x hyperparameter
#: cells. A call gives every device ``lanes_for(device, per_seed)`` seeds, where ``per_seed``
#: is the number of trajectories one seed stands for (instances x cells; 1 for a plain run), so
#: a sweep's batch of 20 instances x 8 cells runs 1 seed per device and call, not 64. Every
#: call of :func:`simulate` runs exactly that many seeds on each device (the last group is
#: padded), so every seed is computed by the same program whatever the number of seeds, the
#: chunk size or the device count. That is what makes per-seed results the same bits in every
#: layout: XLA's CPU code for a batch depends on the batch's size (measured: Anytime-E2D's DEC
#: value differed by one ulp between batches of 4 or 8 and batches of 1, 2, 3, 6 or 12 seeds
#: at d=6, K=4). Measured on the 2-core CPU, Exp. 1 shape, plain runs of 2,048 seeds
#: (seed-rounds/s at 64 / 256 / 1,024 lanes): Anytime-E2D 50k / 46k / 48k, UCB 567k / 597k /
#: 620k, TS 417k / 804k / 735k. Batches of 20 instances x 8 cells, n = 2000, 2 devices
#: (a sensitivity sweep unit): 160 / 640 / 2,560 / 5,120 trajectories per device and call
#: gave 171k / 143k / 138k / 55k seed-rounds/s; the cliff past a few thousand is why the width
#: counts trajectories. 64 keeps the E2D agents at their best and a 12-seed test run at 5x,
#: not 20x, padding; TS pays for it.
CPU_LANES = 64
#: The same on accelerators, which need wide batches to be busy. Measured on one NVIDIA H200
#: (jax 0.11.2, float32, Anytime-E2D, n = 200, one call; benchmarks/results/h200): 2,048 /
#: 32,768 seeds per call ran 2.4M / 26.5M seed-rounds/s on the Exp. 1 shape (a call's time is
#: nearly flat: the rounds are launch-latency bound) and 2.0M / 4.3M on Exp. 2 (d = 30),
#: UCB 11.5M / 243M. Small runs pay for the padding (a 1,000-seed Exp. 2 run takes ~7x
#: longer than at 2,048 lanes: seconds); large runs gain what one wide call gains, 2-11x
#: (measured per call, not yet end to end through a sweep at this width).
ACCELERATOR_LANES = 32768


def lanes_for(device, per_seed: int = 1) -> int:
    """Seeds per compiled call on ``device``: ``CPU_LANES`` (or ``ACCELERATOR_LANES``)
    trajectories divided among the ``per_seed`` trajectories (instances x cells) of one seed,
    at least 1."""
    lanes = CPU_LANES if device.platform == "cpu" else ACCELERATOR_LANES
    return max(1, lanes // max(1, int(per_seed)))


_COMPILED: "collections.OrderedDict" = collections.OrderedDict()
_CACHE_SIZE = 32


def _check_inputs(env, env_params, agent, hparams):
    if not isinstance(env, Environment):
        if isinstance(env_params, Environment):
            raise ValueError("simulate(env, env_params, agent): env and env_params look swapped; "
                             "pass the Environment (e.g. e2d_jax.linear.ENVIRONMENT) first")
        raise ValueError(f"env must be an e2d_jax.Environment (e.g. e2d_jax.linear.ENVIRONMENT or "
                         f"e2d_jax.finite.ENVIRONMENT), got {type(env).__name__}")
    if not hasattr(env_params, "model"):
        raise ValueError(f"env_params must be an instance from a builder (e.g. e2d_jax.semi_bandit(key, 3, 10)), "
                         f"got {type(env_params).__name__}")
    if hparams:
        if isinstance(agent, Agent) or not callable(agent):
            raise ValueError("with hparams, agent must be a factory called with the hyperparameters, "
                             "e.g. simulate(..., e2d_jax.anytime_e2d, hparams={'eps2_scale': [0.1, 1.0]})")
        return
    if isinstance(agent, Agent):
        return
    if callable(agent):
        name = getattr(agent, "__name__", "the factory")
        raise ValueError(f"agent must be an Agent; got the factory {name!r} itself: call it, e.g. {name}()")
    raise ValueError(f"agent must be an e2d_jax.Agent (from a factory such as e2d_jax.ucb()), got {type(agent).__name__}")


def _hparams_arrays(hparams, dtype):
    if not hparams:
        return {}, 0
    out, size = {}, None
    for name, values in hparams.items():
        arr = np.asarray(values, np.float64).reshape(-1) if not isinstance(values, jax.Array) else values
        if arr.ndim != 1 or arr.shape[0] == 0:
            raise ValueError(f"hparams[{name!r}] must be a non-empty 1-D sequence of values, got shape {np.shape(values)}")
        if size is None:
            size = arr.shape[0]
        elif arr.shape[0] != size:
            raise ValueError(f"hparams: every axis needs the same number of cells (use hparam_grid for a "
                             f"product); {name!r} has {arr.shape[0]}, others {size}")
        out[name] = jnp.asarray(arr, dtype)
    return out, size


def _signature(tree):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, tuple((tuple(np.shape(x)), str(jnp.result_type(x))) for x in leaves)


def simulate(
    env: Environment,
    env_params: PyTree,
    agent,
    *,
    horizon: int,
    num_seeds: int,
    seed: int = 0,
    record_every: int = 1,
    batch_size: int | None = None,
    first_seed: int = 0,
    devices=None,
    instances: bool = False,
    hparams: dict | None = None,
    lanes: int | None = None,
) -> Simulation:
    """Runs seeds ``first_seed, ..., first_seed + num_seeds - 1``, ``lanes`` seeds per device
    and compiled call.

    Args:
      env: the environment's functions (e.g. ``e2d_jax.linear.ENVIRONMENT``).
      env_params: the instance; with ``instances=True`` a batch of instances with a leading
        axis (e.g. ``jax.vmap(lambda k: e2d_jax.semi_bandit(k, 3, 10))(keys)``).
      agent: an :class:`~e2d_jax.types.Agent`; with ``hparams``, its factory (e.g.
        ``e2d_jax.anytime_e2d``), called inside the compiled function with traced values.
      horizon: rounds n.
      num_seeds: seeds per (instance, cell).
      seed: master seed (see ``run_keys``); every instance and cell uses the same seeds.
      record_every: record every k-th round (and the last).
      batch_size: accepted for compatibility; it changes nothing. Every compiled call runs
        ``lanes`` seeds per device (the last call padded; the padding is run and discarded),
        so results, memory and the compile do not depend on it.
      lanes: seeds per call and device (default :func:`lanes_for`: ``CPU_LANES`` trajectories
        on CPU, divided among the instances x cells of one seed).
        Per-seed results are the same bits for every number of seeds, ``first_seed`` and
        device count at one ``lanes`` value; another value may change the last bits.
      first_seed: index of the first seed.
      devices: devices to shard the seed axis over (default: all of ``jax.devices()``; only the
        first ceil(num_seeds / lanes) of them are used).
      instances: whether ``env_params`` has a leading instance axis.
      hparams: ``{name: values (H,)}`` hyperparameter cells (see :func:`hparam_grid`), a
        vmapped axis of one compiled function; the factory gets ``name=value`` per cell.

    Returns:
      Simulation whose ``result`` leaves have leading axes (H, I, S) for the axes present.
      ``compile_seconds`` is measured apart from ``run_seconds`` (0 on a cache hit).

    Devices: on a multi-device host (GPUs, or CPU with
    ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` set before JAX starts) each call
    gives every device ``lanes`` seeds (:class:`PerDeviceRollout`); per-seed results do not
    depend on the device count.
    """
    _check_inputs(env, env_params, agent, hparams)
    horizon, record_every = check_run_args(horizon, record_every)
    num_seeds = V.check_int("num_seeds", num_seeds, minimum=1)
    first_seed = V.check_int("first_seed", first_seed, minimum=0)
    if batch_size is not None:
        V.check_int("batch_size", batch_size, minimum=1)
    device_list = list(devices) if devices is not None else jax.devices()
    n_dev = len(device_list)
    dtype = jnp.result_type(*[x for x in jax.tree_util.tree_leaves(env_params)
                              if jnp.issubdtype(jnp.result_type(x), jnp.floating)][:1] or [jnp.float32])
    hp, n_cells = _hparams_arrays(hparams, dtype)
    n_inst = int(np.shape(jax.tree_util.tree_leaves(env_params)[0])[0]) if instances else 1
    if lanes is None:
        width = lanes_for(device_list[0], max(1, n_cells) * n_inst)
    else:
        width = V.check_int("lanes", lanes, minimum=1)
    # Only as many devices as the seeds fill: a device that would run padding alone would cost
    # a compile and its run for nothing (per-seed bits do not depend on the device count).
    n_dev = max(1, min(n_dev, math.ceil(num_seeds / width)))
    device_list = device_list[:n_dev]
    batch = width * n_dev  # seeds per call: `width` on every device used
    indices = np.arange(first_seed, first_seed + num_seeds)
    n_batches = int(math.ceil(num_seeds / batch))
    # Pad by repeating the seed indices cyclically (the padding is run and discarded).
    padded = np.resize(indices, n_batches * batch)

    cache_key = (env, agent, horizon, record_every, batch, tuple(d.id for d in device_list), instances,
                 tuple(sorted(hp)), _signature(env_params), _signature(hp))
    t0 = time.perf_counter()
    compiled = _COMPILED.get(cache_key)
    hit = compiled is not None
    if not hit:
        fn = make_batched_rollout(env, agent, horizon, record_every, batch, device_list,
                                  instances=instances, hparams=tuple(sorted(hp)))
        compiled = fn.lower(run_keys(seed, padded[:batch]), env_params, hp).compile()
        _COMPILED[cache_key] = compiled
        while len(_COMPILED) > _CACHE_SIZE:
            _COMPILED.popitem(last=False)
    else:
        _COMPILED.move_to_end(cache_key)
    compile_seconds = 0.0 if hit else time.perf_counter() - t0

    t0 = time.perf_counter()
    outs = []
    for b in range(n_batches):
        keys = run_keys(seed, padded[b * batch : (b + 1) * batch])
        outs.append(jax.device_get(compiled(keys, env_params, hp)))
    run_seconds = time.perf_counter() - t0
    seed_axis = int(bool(hp)) + int(instances)
    stacked = jax.tree_util.tree_map(
        lambda *xs: np.take(np.concatenate(xs, axis=seed_axis), np.arange(num_seeds), axis=seed_axis), *outs)
    return Simulation(
        result=stacked,
        rounds=record_rounds(horizon, record_every),
        seed_indices=indices,
        compile_seconds=compile_seconds,
        run_seconds=run_seconds,
    )


def compiled_cache_size() -> int:
    """How many compiled rollouts :func:`simulate` holds in memory (for tests and notebooks)."""
    return len(_COMPILED)


def clear_compiled_cache() -> None:
    """Drops :func:`simulate`'s in-memory compiled rollouts."""
    _COMPILED.clear()

