"""Which run each lane of each compiled call computes.

A simulation is a set of *trajectories*, one per (hyperparameter cell, instance, seed). The
simulator flattens them in that order (cell-major) and cuts them into compiled calls of exactly
``width`` lanes on one device (the last call padded by repeating trajectories; the padding is
computed and discarded). Every lane gets its own key, its own copy of its instance and its own
cell's numbers, so every call is the same compiled program whatever mix of cells, instances
and seeds it holds: XLA's CPU code for a batch depends on the batch's shape, and a fixed width
of per-lane inputs is what makes a seed's bits the same in every layout, through every door
(:func:`e2d_jax.simulate`, a sweep's work units, any device count).

The width is :func:`lanes_for` a device: ``CPU_LANES`` on CPUs, ``ACCELERATOR_LANES`` on
accelerators (which need wide batches to be busy), halved there until the lanes' memory (each
lane's instance and agent state, :func:`e2d_jax.sim.program.lane_bytes`) fits
``ACCELERATOR_CALL_BYTES`` (a constant, not the device's free memory: a program's width, and so
its bits, are the same on every accelerator). A sweep's plan
(:func:`e2d_jax.experiments.spec.plan`) sizes its units in these lanes; :func:`e2d_jax.simulate`
executes a layout of one unit.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import jax
import numpy as np

#: Lanes per compiled call and device on CPUs.
CPU_LANES = 64
#: Lanes per compiled call and device on accelerators (at most).
ACCELERATOR_LANES = 32768
#: Bytes the lanes of one compiled call may hold on an accelerator (estimated from shapes, see
#: :func:`e2d_jax.sim.program.lane_bytes`): at 10,000 actions of dimension 10, E2D's lanes hold
#: about 9 MB each, and 32,768 of them would not fit any device.
ACCELERATOR_CALL_BYTES = 16 * 2**30


def lanes_for(device, lane_bytes: int | Callable[[], int] = 0) -> int:
    """Lanes (trajectories) per compiled call on ``device``: ``CPU_LANES`` on a CPU; on an
    accelerator ``ACCELERATOR_LANES``, halved while that many lanes of ``lane_bytes`` each (a
    number, or a function giving it, called on accelerators only) would hold more than
    ``ACCELERATOR_CALL_BYTES``."""
    if device.platform == "cpu":
        return CPU_LANES
    size = lane_bytes() if callable(lane_bytes) else lane_bytes
    width = ACCELERATOR_LANES
    while width > 1 and width * size > ACCELERATOR_CALL_BYTES:
        width //= 2
    return width


class Layout(NamedTuple):
    """The trajectories of a simulation and the calls that run them.

    Attributes:
      cell: (T,) int, the hyperparameter cell of each trajectory.
      instance: (T,) int, its instance (an index into the stacked instances).
      seed: (T,) int, its seed index.
      shape: (H, I, S): cells, instances and seeds (T = H I S).
      width: lanes per compiled call.
    """

    cell: np.ndarray
    instance: np.ndarray
    seed: np.ndarray
    shape: tuple
    width: int

    @property
    def num_calls(self) -> int:
        return max(1, math.ceil(self.cell.size / self.width))

    def call(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(cell, instance, seed)`` of the ``width`` lanes of call ``index`` (the last call
        padded with the first trajectories)."""
        lanes = np.arange(index * self.width, (index + 1) * self.width) % self.cell.size
        return self.cell[lanes], self.instance[lanes], self.seed[lanes]


def layout(num_cells: int, num_instances: int, seed_indices, width: int) -> Layout:
    """The layout of ``num_cells`` x ``num_instances`` x the seeds ``seed_indices``, in calls of
    ``width`` lanes."""
    seeds = np.asarray(seed_indices, np.int64).reshape(-1)
    h, i, s = np.meshgrid(np.arange(num_cells), np.arange(num_instances), seeds, indexing="ij")
    return Layout(cell=h.reshape(-1), instance=i.reshape(-1), seed=s.reshape(-1),
                  shape=(num_cells, num_instances, seeds.size), width=int(width))


def assemble(the_layout: Layout, outputs: list):
    """The calls' outputs (each a tree with a leading lane axis of ``width``) as one tree with
    leading axes (H, I, S)."""
    total = the_layout.cell.size
    return jax.tree_util.tree_map(
        lambda *xs: np.concatenate(xs, axis=0)[:total].reshape(the_layout.shape + np.shape(xs[0])[1:]), *outputs)
