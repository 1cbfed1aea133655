"""Many seeds, instances and hyperparameter cells of one agent, in compiled calls.

:func:`simulate` is three steps, each in its own module:

1. the agent becomes a program and a table of numbers (:func:`e2d_jax.sim.program.program_of`;
   a library agent's numeric hyperparameters are traced inputs, so every way of asking for the
   same agent is the same program);
2. its runs (cells x instances x seeds) are laid out in calls of a fixed number of lanes
   (:mod:`e2d_jax.sim.layout`);
3. the program is compiled once for those lanes and its calls run on this process's devices
   (:mod:`e2d_jax.sim.execute`).

A seed's bits therefore do not depend on the seeds, cells, instances, chunks or devices beside
it, nor on whether the agent came as an object, a grid or a name (the docs' 'Design notes' say
why each of these choices is needed). :func:`run_layout` is step 3 alone, for a caller that
made the layout (a sweep's work unit).

Compilation: the compiled program of each (environment, program, shapes, devices) is kept in
memory, so a second call with the same instance shapes and an agent of the same program does
not compile again. :func:`enable_compilation_cache` also keeps compiled programs on disk
across processes (JAX's persistent compilation cache).
"""
from __future__ import annotations

import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from e2d_jax import _checks as V
from e2d_jax.envs.family import environment_of, params_family
from e2d_jax.sim import execute
from e2d_jax.sim.layout import Layout, assemble, lanes_for, layout
from e2d_jax.sim.program import Program, check_program, lane_bytes, program_of
from e2d_jax.sim.results import Simulation, Tables, warn_flagged
from e2d_jax.sim.rollout import check_run_args, record_rounds, run_keys
from e2d_jax.types import Environment, PyTree

compiled_cache_size = execute.compiled_cache_size
clear_compiled_cache = execute.clear_compiled_cache


def float_dtype(params: PyTree):
    """The float dtype of an instance (its first floating leaf; float32 if it has none)."""
    floats = [x for x in jax.tree_util.tree_leaves(params) if jnp.issubdtype(jnp.result_type(x), jnp.floating)]
    return jnp.result_type(floats[0]) if floats else jnp.dtype(jnp.float32)


def run_layout(program: Program, numbers: np.ndarray, stack: PyTree, env: Environment, the_layout: Layout, *,
               horizon: int, record_every: int, seed: int = 0, devices=None) -> tuple:
    """Runs every call of ``the_layout``: ``(result with leading axes (H, I, S), compile
    seconds, run seconds)``.

    Args:
      program: the agent's program (:func:`~e2d_jax.sim.program.program_of`).
      numbers: (H, n) each cell's numbers.
      stack: the instances with a leading axis (I, ...).
      env: the environment's functions.
      the_layout: the trajectories and the calls' width.
      horizon: rounds n.
      record_every: record every k-th round (and the last).
      seed: the master seed of the runs' keys.
      devices: the devices to spread the calls over (default: as many of ``jax.devices()`` as
        there are calls).
    """
    device_list = list(devices) if devices is not None else jax.devices()
    device_list = device_list[:max(1, min(len(device_list), the_layout.num_calls))]
    dtype = float_dtype(stack)
    one = jax.tree_util.tree_map(lambda x: x[0], stack)
    check_program(program, numbers, one, env)
    exe, compile_seconds = execute.compiled(env, program, horizon, record_every, the_layout.width, device_list,
                                            one, dtype)
    t0 = time.perf_counter()
    outputs = exe.run(the_layout, stack, numbers, seed, dtype)
    run_seconds = time.perf_counter() - t0
    return assemble(the_layout, outputs), compile_seconds, run_seconds


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
      devices: devices to spread the calls over (default: all of ``jax.devices()``; only as
        many as there are calls are used).
      instances: whether ``params`` has a leading instance axis.
      hparams: ``{name: values (H,)}`` hyperparameter cells (see
        :func:`~e2d_jax.sim.summaries.hparam_grid`); the factory gets ``name=value`` per cell,
        traced, and the cells run in the same compiled calls.
      lanes: runs per compiled call and device (default :func:`~e2d_jax.sim.layout.lanes_for`
        the device: 64 on CPU, up to 32,768 on an accelerator as the lanes' memory allows). Per-seed results are the same bits at one ``lanes`` value for
        every number of seeds, cells and instances, ``first_seed`` and device count; another
        value may change the last bits.
      env: the environment's functions; inferred from the type of ``params`` when None
        (pass one for an instance type of your own).
      label: the agent's name in the results' tables and figures (default: the factory's
        name).

    Returns:
      :class:`~e2d_jax.sim.results.Simulation` whose ``result`` leaves have leading axes
      (H, I, S) for the axes present, with ``summary()`` and ``to_frame()``
      (``e2d_jax.Results(sim)`` draws and saves it). ``compile_seconds`` is timed apart from
      ``run_seconds`` (0 when the compiled program was in memory).

    An agent whose solver flags more than 5% of its rounds (their certified gap above its
    tolerance) is warned about (:class:`~e2d_jax.sim.results.FlaggedRoundsWarning`), as the
    command line does. The agent is checked on one abstract round before anything compiles
    (:func:`~e2d_jax.sim.rollout.check_agent`): a float action, an info without ``status``
    or a model of the other family is refused with a ValueError.

    Devices: on a multi-device host (GPUs, or CPU with
    ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` set before JAX starts) the calls
    are spread over the devices, each running the one-device program
    (:mod:`e2d_jax.sim.execute`); per-seed results do not depend on the device count.
    """
    env = environment_of(params, env)
    horizon, record_every = check_run_args(horizon, record_every)
    num_seeds = V.check_int("num_seeds", num_seeds, minimum=1)
    first_seed = V.check_int("first_seed", first_seed, minimum=0)
    program, numbers = program_of(agent, params_family(params), hparams)
    device_list = list(devices) if devices is not None else jax.devices()
    stack = params if instances else jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], params)
    one = jax.tree_util.tree_map(lambda x: x[0], stack)
    width = (lanes_for(device_list[0], lambda: lane_bytes(program, numbers, one, env)) if lanes is None
             else V.check_int("lanes", lanes, minimum=1))
    n_inst = int(np.shape(jax.tree_util.tree_leaves(stack)[0])[0])
    indices = np.arange(first_seed, first_seed + num_seeds)
    the_layout = layout(numbers.shape[0], n_inst, indices, width)
    result, compile_seconds, run_seconds = run_layout(program, numbers, stack, env, the_layout, horizon=horizon,
                                                      record_every=record_every, seed=seed, devices=device_list)
    sim = _simulation(result, program, numbers, hparams, instances, n_inst, indices, horizon, record_every,
                      label, compile_seconds, run_seconds)
    warn_flagged(Tables([sim]).cells())
    return sim


def _simulation(result, program: Program, numbers, hparams, instances: bool, n_inst: int, indices, horizon: int,
                record_every: int, label, compile_seconds: float, run_seconds: float) -> Simulation:
    """The :class:`Simulation` of :func:`simulate`, with the axes the caller asked for: (H, I,
    S) without the cell axis when there is no grid and without the instance axis for one
    instance given as such."""
    drop = (() if hparams else (0,)) + (() if instances else (1,))
    result = jax.tree_util.tree_map(lambda x: np.squeeze(x, axis=drop) if drop else x, result)
    return Simulation(
        result=result,
        rounds=record_rounds(horizon, record_every),
        seed_indices=indices,
        compile_seconds=compile_seconds,
        run_seconds=run_seconds,
        label=label or program.label,
        cells={k: numbers[:, program.names.index(k)] for k in sorted(hparams)} if hparams else None,
        instance_seeds=tuple(range(n_inst)) if instances else None,
        horizon=horizon,
    )


def rollout_program(params: PyTree, agent, *, horizon: int, record_every: int = 1, lanes: int | None = None,
                    env: Environment | None = None, seed: int = 0) -> tuple:
    """``(jitted, args)``: the function :func:`simulate` compiles for ``agent`` on one instance
    (:func:`e2d_jax.sim.execute.lane_rollout`, ``lanes`` runs side by side) and its arguments
    for seeds 0..lanes-1, for a benchmark that compiles it (``jitted.lower(*args).compile()``)
    and times its calls. ``lanes`` defaults to :func:`~e2d_jax.sim.layout.lanes_for` the first
    device."""
    env = environment_of(params, env)
    horizon, record_every = check_run_args(horizon, record_every)
    program, numbers = program_of(agent, params_family(params))
    width = (lanes_for(jax.devices()[0], lambda: lane_bytes(program, numbers, params, env)) if lanes is None
             else V.check_int("lanes", lanes, minimum=1))
    check_program(program, numbers, params, env)
    lane_params = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(jnp.asarray(x), (width,) + np.shape(x)), params)
    lane_numbers = jnp.asarray(np.broadcast_to(numbers[:1], (width, numbers.shape[1])), float_dtype(params))
    return (execute.lane_rollout(env, program, horizon, record_every),
            (run_keys(seed, np.arange(width)), lane_params, lane_numbers))


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
