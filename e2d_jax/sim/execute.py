"""Compiling a program's lanes once and running its calls on this process's devices.

:func:`lane_rollout` is the one function the simulator compiles: ``width`` runs of
:func:`e2d_jax.sim.rollout.rollout` side by side (``vmap``), each lane with its own key, its own
copy of its instance and its own numbers. :class:`Executable` holds it compiled for a set of
devices and runs a layout's calls on them:

* every device runs the *one-device* program on its own calls (not ``jit`` with sharded
  inputs, nor ``shard_map``: their partitioned programs round some values differently, so a
  seed's bits would change with the device count); the devices work at once, each driven from
  its own thread (JAX releases the GIL while a computation runs, and XLA's CPU client runs a
  computation in the calling thread);
* host devices compile once: on CPU every call runs the first device's executable (a CPU
  executable is bound to the device it was compiled for); other platforms compile one
  executable per device;
* a program with a large batched LAPACK call (one of its own: the library cuts its calls into
  small batches, :func:`e2d_jax._linalg.lapack_call`) runs its calls one at a time
  (:func:`lapack_blocks_threads`).

Compiled executables are kept in memory (:func:`compiled`, keyed by the environment, the
program, the horizon, the recording, the width, the devices and the shapes), so a second
simulation of the same program does not compile again.

Every CPU executable holds a few dozen memory mappings of its machine code, and Linux caps a
process's mappings (``vm.max_map_count``, 65,530 by default): a process that keeps thousands
of compiled programs alive (JAX's own caches included) crashes inside the compiler when it
reaches the cap. :func:`release_if_near_map_limit` drops the in-memory caches before that
happens; :func:`compiled` calls it before every compile.
"""
from __future__ import annotations

import collections
import concurrent.futures
import gc
import math
import re
import time

import jax
import jax.numpy as jnp
import numpy as np

from e2d_jax import _linalg
from e2d_jax.sim.layout import Layout
from e2d_jax.sim.program import Program
from e2d_jax.sim.rollout import rollout, run_keys
from e2d_jax.types import Environment, PyTree


def lane_rollout(env: Environment, program: Program, horizon: int, record_every: int):
    """The jitted ``(keys (W,), params (W, ...), numbers (W, n)) -> RolloutResult`` with a
    leading lane axis: lane w runs ``program.build(**numbers[w])`` on ``params[w]`` from
    ``keys[w]``."""
    def one(key, params, numbers):
        agent = program.build(**{name: numbers[i] for i, name in enumerate(program.names)})
        return rollout(key, params, agent, horizon=horizon, record_every=record_every, env=env)

    return jax.jit(jax.vmap(one))


@jax.jit
def _gather(stack, index):
    """Each lane's copy of its instance: ``stack`` (I, ...) taken at ``index`` (W,)."""
    return jax.tree_util.tree_map(lambda x: jnp.take(x, index, axis=0), stack)


#: LAPACK kernels whose batches :func:`lapack_blocks_threads` sizes (Cholesky and LU
#: factorisations, triangular solve); any other LAPACK call counts as large.
_SIZED_LAPACK = ("potrf", "getrf", "trsm")
#: Below this many multiply-adds (a bound on each kernel's own measure of a batch's work) a
#: batched LAPACK call runs in its calling thread.
_LAPACK_INLINE_WORK = _linalg.LAPACK_INLINE_WORK


def lapack_blocks_threads(program_text: str) -> bool:
    """Whether a lowered CPU program has a LAPACK call that may wait on XLA's thread pool.

    jaxlib's CPU LAPACK kernels split a large batch over XLA's intra-op thread pool and wait
    for the pieces from a pool thread; two such calls at once (two host devices, one call
    each, or two independent calls of one program) can occupy every pool thread while
    waiting, and never finish. A batch whose work is below ``_LAPACK_INLINE_WORK`` runs in
    the calling thread and cannot block; the library's own calls are cut into such batches
    (:func:`e2d_jax._linalg.lapack_call`), so this finds the large calls of one's own code. This bounds each
    Cholesky or LU factorisation and triangular solve by batch x m x n x max(m, n) multiply-adds
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


class Executable:
    """A program's lane rollout compiled for ``devices`` (see the module docstring)."""

    def __init__(self, jitted, devices: list, example: tuple):
        self.devices = list(devices)
        # The device each call runs on: the first for host devices (one executable for all).
        self.targets = [self.devices[0]] * len(self.devices) if self.devices[0].platform == "cpu" else self.devices
        lowered, self.executables = {}, {}
        for dev in dict.fromkeys(self.targets):
            lowered[dev.id] = jitted.lower(*jax.device_put(example, dev))
        first = next(iter(lowered.values()))
        self.sequential = (len(self.devices) > 1 and self.devices[0].platform == "cpu"
                           and lapack_blocks_threads(first.as_text()))
        self.executables = {dev_id: low.compile() for dev_id, low in lowered.items()}

    def run(self, the_layout: Layout, stack: PyTree, numbers: np.ndarray, seed: int, dtype) -> list:
        """The outputs of every call of ``the_layout`` (NumPy trees with a leading lane axis):
        instances from ``stack`` (I, ...), each cell's numbers from ``numbers`` (H, n), keys from
        the master ``seed``."""
        n_dev = len(self.devices)
        stacks = {dev.id: jax.device_put(stack, dev) for dev in dict.fromkeys(self.targets)}

        def call(c: int):
            dev = self.targets[c % n_dev]
            cell, inst, seed_idx = the_layout.call(c)
            args = (run_keys(seed, seed_idx), _gather(stacks[dev.id], jax.device_put(inst, dev)),
                    jnp.asarray(numbers[cell], dtype))
            return jax.device_get(self.executables[dev.id](*jax.device_put(args, dev)))

        calls = range(the_layout.num_calls)
        if n_dev == 1 or self.sequential:
            return [call(c) for c in calls]
        with concurrent.futures.ThreadPoolExecutor(n_dev) as pool:
            return list(pool.map(call, calls))


_COMPILED: "collections.OrderedDict" = collections.OrderedDict()
_CACHE_SIZE = 32


def _signature(tree) -> tuple:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, tuple((tuple(np.shape(x)), str(jnp.result_type(x))) for x in leaves)


#: The precision of the rollouts' float32 matrix products: full float32 (on GPUs JAX's default
#: rounds their inputs to TF32, about three decimal digits: the size of the certificates).
MATMUL_PRECISION = "highest"


def compiled(env: Environment, program: Program, horizon: int, record_every: int, width: int, devices: list,
             instance: PyTree, dtype) -> tuple[Executable, float]:
    """``(executable, compile seconds)`` of ``program``'s lane rollout for one ``instance``'s
    shapes (no leading axis), compiled with matrix products at ``MATMUL_PRECISION``, from the
    in-memory cache when it holds it (0 seconds)."""
    lane_params = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(jnp.asarray(x), (width,) + np.shape(x)),
                                         instance)
    key = (env, program.key, horizon, record_every, width, tuple(d.id for d in devices),
           _signature(lane_params), str(jnp.dtype(dtype)), program.names)
    hit = _COMPILED.get(key)
    if hit is not None:
        _COMPILED.move_to_end(key)
        return hit, 0.0
    release_if_near_map_limit()
    t0 = time.perf_counter()
    example = (run_keys(0, np.arange(width)), lane_params, jnp.zeros((width, len(program.names)), dtype))
    with jax.default_matmul_precision(MATMUL_PRECISION):
        exe = Executable(lane_rollout(env, program, horizon, record_every), devices, example)
    _COMPILED[key] = exe
    while len(_COMPILED) > _CACHE_SIZE:
        _COMPILED.popitem(last=False)
    return exe, time.perf_counter() - t0


#: The share of the process's mapping cap (``vm.max_map_count``) above which
#: :func:`release_if_near_map_limit` drops the compiled programs.
MAP_LIMIT_SHARE = 0.8


def _map_counts() -> tuple[int, int] | None:
    """(mappings this process holds, the kernel's cap), or None where Linux's /proc is absent."""
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            cap = int(f.read())
        with open("/proc/self/maps", "rb") as f:
            held = sum(1 for _ in f)
    except (OSError, ValueError):
        return None
    return held, cap


def release_if_near_map_limit(share: float = MAP_LIMIT_SHARE) -> bool:
    """Drops every compiled program held in memory (the simulator's and JAX's caches) when
    this process holds more than ``share`` of the kernel's memory-mapping cap; they compile
    again when next needed. Returns whether it did."""
    counts = _map_counts()
    if counts is None or counts[0] <= share * counts[1]:
        return False
    _COMPILED.clear()
    jax.clear_caches()
    gc.collect()
    return True


def compiled_cache_size() -> int:
    """How many compiled rollouts the simulator holds in memory."""
    return len(_COMPILED)


def clear_compiled_cache() -> None:
    """Drops the simulator's in-memory compiled rollouts."""
    _COMPILED.clear()
