"""Batched, compiled runs: many seeds, instances and hyperparameter cells in one call.

A run is :func:`e2d_jax.sim.rollout.rollout` (a ``lax.scan`` over rounds); :func:`simulate`
vmaps it over seeds, ``lanes_for(device)`` trajectories per compiled call and device, each seed
with its own copy of the instance; several devices each run the one-device program on their
share (:class:`PerDeviceRollout`); instances and hyperparameter grids are further vmapped axes
of the same compiled function. A seed's bits therefore do not depend on the seeds, chunks or
devices beside it (the docs' 'Design notes' say why each of these choices is needed).

Compilation: :func:`simulate` keeps the compiled function of each (environment, agent
configuration, shapes, devices) in memory, so calling it again with the same instance shapes
and an agent of the same configuration (``Agent.config``, set by the library's factories)
does not compile again. :func:`enable_compilation_cache` also keeps compiled programs on disk
across processes (JAX's persistent compilation cache).
"""
from __future__ import annotations

import collections
import concurrent.futures
import functools
import math
import os
import re
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from e2d_jax import _checks as V
from e2d_jax.envs.family import environment_of, params_family
from e2d_jax.sim.results import Simulation
from e2d_jax.sim.rollout import check_agent, check_run_args, record_rounds, rollout, run_keys
from e2d_jax.types import Agent, ByFamily, Environment, PyTree


def make_batched_rollout(env, agent, horizon, record_every, batch_size, devices=None, *,
                         instances: bool = False, hparams: tuple = ()):
    """A jitted ``(keys (B,), params, hparams) -> RolloutResult`` over a batch of seeds.

    ``agent`` is an Agent, or with ``hparams`` (the names of the hyperparameters) a factory
    called as ``agent(**{name: traced value})``. With ``instances`` the params carry a leading
    instance axis. The output axes are (H, I, B) for the axes present. With several devices
    the seed axis is split across them (``batch_size`` must then be a multiple of the
    device count) and the rest is replicated.
    """
    def one(key, params, hp):
        ag = agent(**hp) if hparams else agent
        return rollout(key, params, ag, horizon=horizon, record_every=record_every, env=env)

    def per_seed_rollouts(keys, params, hp):
        # Every seed gets its own copy of the instance, so that no matrix product of the
        # round has an operand shared across the seed axis: a product of a shared matrix with
        # per-seed vectors becomes one matrix-matrix product over the batch, whose kernel XLA
        # picks by the batch's size, and per-seed results would then change with the batch.
        # The barrier keeps XLA from folding the broadcast back into a shared operand.
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

    Not ``jit`` with sharded inputs, nor ``shard_map``: their partitioned programs round some
    values differently from the one-device program, so a seed's bits would change with the
    device count. The one-device program on each device gives every seed the same bits on any
    number of devices; each slice is driven from its own thread (JAX releases the GIL while a
    computation runs). Same interface as a jitted function: ``.lower(keys, params, hp).compile()``
    then call; outputs are NumPy arrays.

    Host devices compile once: on CPU every slice runs the first device's executable, each
    from its own thread (XLA's CPU client runs a computation in the calling thread, so the
    slices run at once, as on separate devices). A CPU executable is bound to the device it
    was compiled for, so running it on the first device is what lets one compile serve every
    slice; other platforms compile one executable per device.
    """

    def __init__(self, jitted, devices, seed_axis: int, compiled=None, sequential=False):
        self.jitted, self.devices, self.seed_axis, self.compiled = jitted, list(devices), seed_axis, compiled
        self.sequential = sequential
        # The device each slice runs on: the first for host devices (one executable for all).
        self.targets = [self.devices[0]] * len(self.devices) if self.devices[0].platform == "cpu" else self.devices

    def _slices(self, keys, params, hp):
        n = len(self.devices)
        per = keys.shape[0] // n
        for i, dev in enumerate(self.targets):
            put = lambda x, dev=dev: jax.device_put(x, dev)
            yield dev, put(keys[i * per:(i + 1) * per]), jax.tree_util.tree_map(put, params), \
                jax.tree_util.tree_map(put, hp)

    def lower(self, keys, params, hp):
        # One lowering per distinct target device (one for host devices).
        lowered = {}
        for dev, k, p, h in self._slices(keys, params, hp):
            if dev.id not in lowered:
                lowered[dev.id] = self.jitted.lower(k, p, h)
        self._lowered = lowered
        # Two large LAPACK calls at once on two host devices can deadlock (see
        # ``lapack_blocks_threads``): such programs run one slice at a time.
        first = next(iter(lowered.values()))
        self._sequential = self.devices[0].platform == "cpu" and lapack_blocks_threads(first.as_text())
        return self

    def compile(self):
        by_device = {dev_id: lowered.compile() for dev_id, lowered in self._lowered.items()}
        return PerDeviceRollout(self.jitted, self.devices, self.seed_axis,
                                [by_device[dev.id] for dev in self.targets], self._sequential)

    def __call__(self, keys, params, hp):
        fns = self.compiled or [self.jitted] * len(self.devices)
        if self.sequential:
            outs = [jax.device_get(fn(*args[1:])) for fn, args in zip(fns, self._slices(keys, params, hp))]
            return jax.tree_util.tree_map(lambda *xs: np.concatenate(xs, axis=self.seed_axis), *outs)
        # One thread per slice: XLA's CPU client runs a computation in the calling thread,
        # so dispatching from one thread would run the slices one after the other.
        with concurrent.futures.ThreadPoolExecutor(len(fns)) as pool:
            futures = [pool.submit(lambda fn, a: jax.device_get(fn(*a[1:])), fn, args)
                       for fn, args in zip(fns, self._slices(keys, params, hp))]
            outs = [f.result() for f in futures]
        return jax.tree_util.tree_map(lambda *xs: np.concatenate(xs, axis=self.seed_axis), *outs)


#: LAPACK kernels whose batches :func:`lapack_blocks_threads` sizes (Cholesky factorisation,
#: triangular solve); any other LAPACK call counts as large.
_SIZED_LAPACK = ("potrf", "trsm")
#: Below this many multiply-adds (a bound on each kernel's own measure of a batch's work) a
#: batched LAPACK call runs in its calling thread.
_LAPACK_INLINE_WORK = 200_000


def lapack_blocks_threads(program_text: str) -> bool:
    """Whether a lowered CPU program has a LAPACK call that may wait on XLA's thread pool.

    jaxlib's CPU LAPACK kernels split a large batch over XLA's intra-op thread pool and wait
    for the pieces from a pool thread; two such calls at once (two host devices, one call
    each) can occupy every pool thread while waiting, and never finish (seen with TS at
    d = 30: the Cholesky factors of 64 matrices of 30 x 30). A batch whose work is below
    ``_LAPACK_INLINE_WORK`` runs in the calling thread and cannot block. This bounds each
    Cholesky factorisation and triangular solve by batch x m x n x max(m, n) multiply-adds
    from its operand shapes in the StableHLO text; any other LAPACK call counts as large.
    """
    for line in program_text.splitlines():
        call = re.search(r"custom_call @(\w*lapack\w*)", line)
        if call is None:
            continue
        if not any(name in call.group(1) for name in _SIZED_LAPACK):
            return True
        signature = line.rsplit(" : (", 1)
        if len(signature) < 2:
            return True
        for dims in re.findall(r"tensor<((?:\d+x)+)\w+>", signature[1].split(") ->")[0]):
            shape = [int(x) for x in dims.rstrip("x").split("x")]
            if len(shape) >= 2 and math.prod(shape) * max(shape[-2:]) >= _LAPACK_INLINE_WORK:
                return True
    return False


#: Trajectories per compiled call and device on CPUs (seeds x instances x hyperparameter
#: cells). Every call runs exactly this many on each device (the last group padded), so every
#: seed is computed by the same program whatever the number of seeds, the chunk size or the
#: device count: XLA's CPU code for a batch depends on the batch's size, and a fixed width is
#: what makes per-seed results the same bits in every layout.
CPU_LANES = 64
#: The same on accelerators, which need wide batches to be busy.
ACCELERATOR_LANES = 32768


def lanes_for(device, per_seed: int = 1) -> int:
    """Seeds per compiled call on ``device``: ``CPU_LANES`` (or ``ACCELERATOR_LANES``)
    trajectories divided among the ``per_seed`` trajectories (instances x cells) of one seed,
    at least 1."""
    lanes = CPU_LANES if device.platform == "cpu" else ACCELERATOR_LANES
    return max(1, lanes // max(1, int(per_seed)))


_COMPILED: "collections.OrderedDict" = collections.OrderedDict()
_CACHE_SIZE = 32


def _check_inputs(params, agent, hparams, env):
    env = environment_of(params, env)
    if hparams:
        if isinstance(agent, Agent) or not callable(agent):
            raise ValueError("agent: with hparams, agent must be a factory called with the hyperparameters, "
                             "e.g. simulate(params, e2d_jax.anytime_e2d, hparams={'eps2_scale': [0.1, 1.0]})")
        return env
    if isinstance(agent, Agent):
        return env
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


def _agent_key(agent, family=None):
    """What identifies an agent (or factory) in the compiled-rollout cache: its configuration
    where one is known (for an agent that picks its implementation by model family, that of
    the family run), else the object itself."""
    if isinstance(agent, Agent):
        config = agent.config.for_family(family) if isinstance(agent.config, ByFamily) else agent.config
        return ("agent", config) if config is not None else ("object", id(agent), agent)
    if isinstance(agent, functools.partial):
        try:
            key = ("partial", agent.func, agent.args, tuple(sorted(agent.keywords.items())))
            hash(key)
            return key
        except TypeError:
            pass
    return ("object", id(agent), agent)


def _probe_agent(agent, params, hp, instances, env):
    """The agent of the first cell on the first instance (for the contract check)."""
    one_params = jax.tree_util.tree_map(lambda x: x[0], params) if instances else params
    check_agent(agent, one_params, env, {k: v[0] for k, v in hp.items()} if hp else None)


def simulate(
    params: PyTree,
    agent,
    *,
    horizon: int,
    num_seeds: int,
    seed: int = 0,
    record_every: int = 1,
    first_seed: int = 0,
    devices=None,
    instances: bool = False,
    hparams: dict | None = None,
    lanes: int | None = None,
    env: Environment | None = None,
    label: str | None = None,
) -> Simulation:
    """Runs seeds ``first_seed, ..., first_seed + num_seeds - 1`` of ``agent`` on ``params``.

    Args:
      params: the instance, from a builder (e.g. ``e2d_jax.semi_bandit(key, 3, 10)``); with
        ``instances=True`` a batch of instances with a leading axis (e.g.
        ``jax.vmap(lambda k: e2d_jax.semi_bandit(k, 3, 10))(keys)``).
      agent: an :class:`~e2d_jax.types.Agent`; with ``hparams``, its factory (e.g.
        ``e2d_jax.anytime_e2d``), called inside the compiled function with traced values.
      horizon: rounds n.
      num_seeds: seeds per (instance, cell).
      seed: master seed (see :func:`~e2d_jax.sim.rollout.run_keys`); every instance and cell
        uses the same seeds.
      record_every: record every k-th round (and the last).
      first_seed: index of the first seed.
      devices: devices to split the seeds over (default: all of ``jax.devices()``; only the
        first ceil(num_seeds / lanes) of them are used).
      instances: whether ``params`` has a leading instance axis.
      hparams: ``{name: values (H,)}`` hyperparameter cells (see
        :func:`~e2d_jax.sim.summaries.hparam_grid`), a vmapped axis of one compiled function;
        the factory gets ``name=value`` per cell.
      lanes: seeds per call and device (default :func:`lanes_for`: ``CPU_LANES``
        trajectories on CPU, divided among the instances x cells of one seed). Per-seed
        results are the same bits for every number of seeds, ``first_seed`` and device count
        at one ``lanes`` value; another value may change the last bits.
      env: the environment's functions; inferred from the type of ``params`` when None
        (pass one for an instance type of your own).
      label: the agent's name in the results' tables and figures (default: the factory's or
        the agent's configured name).

    Returns:
      :class:`~e2d_jax.sim.results.Simulation` whose ``result`` leaves have leading axes
      (H, I, S) for the axes present, with ``summary()``, ``to_frame()``, ``plot()``,
      ``plot_final()`` and ``save(directory)``. ``compile_seconds`` is timed apart from
      ``run_seconds`` (0 on a cache hit).

    The agent is checked on one abstract round before anything compiles
    (:func:`~e2d_jax.sim.rollout.check_agent`): a float action, an info without ``status``
    or a model of the other family is refused with a ValueError.

    Devices: on a multi-device host (GPUs, or CPU with
    ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` set before JAX starts) each call
    gives every device ``lanes`` seeds (:class:`PerDeviceRollout`; host devices share one
    compiled program, run from one thread each); per-seed results do not depend on the
    device count.
    """
    env = _check_inputs(params, agent, hparams, env)
    horizon, record_every = check_run_args(horizon, record_every)
    num_seeds = V.check_int("num_seeds", num_seeds, minimum=1)
    first_seed = V.check_int("first_seed", first_seed, minimum=0)
    device_list = list(devices) if devices is not None else jax.devices()
    n_dev = len(device_list)
    dtype = jnp.result_type(*[x for x in jax.tree_util.tree_leaves(params)
                              if jnp.issubdtype(jnp.result_type(x), jnp.floating)][:1] or [jnp.float32])
    hp, n_cells = _hparams_arrays(hparams, dtype)
    n_inst = int(np.shape(jax.tree_util.tree_leaves(params)[0])[0]) if instances else 1
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

    cache_key = (env, _agent_key(agent, params_family(params)), horizon, record_every, batch, tuple(d.id for d in device_list), instances,
                 tuple(sorted(hp)), _signature(params), _signature(hp))
    t0 = time.perf_counter()
    compiled = _COMPILED.get(cache_key)
    hit = compiled is not None
    if not hit:
        _probe_agent(agent, params, hp, instances, env)
        fn = make_batched_rollout(env, agent, horizon, record_every, batch, device_list,
                                  instances=instances, hparams=tuple(sorted(hp)))
        compiled = fn.lower(run_keys(seed, padded[:batch]), params, hp).compile()
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
        outs.append(jax.device_get(compiled(keys, params, hp)))
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
        label=label or default_label(agent),
        cells={k: np.asarray(v) for k, v in hp.items()} if hp else None,
        instance_seeds=tuple(range(n_inst)) if instances else None,
        horizon=horizon,
    )


def default_label(agent) -> str:
    """An agent's name for tables: its configured name (``linear.anytime_e2d`` ->
    ``anytime_e2d``), a factory's function name, else ``agent``."""
    config = getattr(agent, "config", None)
    if isinstance(config, ByFamily) and config.configs:
        config = config.configs[0][1]
    if isinstance(config, tuple) and config and isinstance(config[0], str):
        return config[0].rpartition(".")[2]
    func = getattr(agent, "func", agent)
    name = getattr(func, "__name__", None)
    return name if name and name != "<lambda>" else "agent"


def compiled_cache_size() -> int:
    """How many compiled rollouts :func:`simulate` holds in memory."""
    return len(_COMPILED)


def clear_compiled_cache() -> None:
    """Drops :func:`simulate`'s in-memory compiled rollouts."""
    _COMPILED.clear()


def default_cache_dir() -> str:
    """``$E2D_JAX_CACHE_DIR``, or ``~/.cache/e2d_jax/jax``."""
    return os.environ.get("E2D_JAX_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "e2d_jax", "jax")


def enable_compilation_cache(path: str | None = None, *, min_compile_seconds: float = 0.5) -> str | None:
    """Keeps compiled programs on disk across processes (JAX's persistent compilation cache).

    Args:
      path: the cache directory (default :func:`default_cache_dir`); ``"off"`` leaves the
        cache off.
      min_compile_seconds: programs that compile faster than this are not stored.

    Returns:
      The directory in use, or None when it is off or cannot be created.
    """
    path = default_cache_dir() if path is None else str(path)
    if path.strip().lower() == "off":
        return None
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return None  # an unwritable home only costs the cache
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_seconds))
    return path
