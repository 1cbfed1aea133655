"""Running work units on this process's devices and writing their chunk files.

:func:`run_units` is what every executor runs (in this process for ``local``, in each task
for ``ray``, on the units the driver planned): it builds the sweep's instances once (the
builder vmapped over the instance keys), then runs every unit's layout of cells x instances x
seeds (:func:`e2d_jax.sim.simulate.run_layout`; one compile per program, which the units of a
program share) and writes the unit's chunk file atomically as soon as it finishes
(:func:`chunk_arrays`; :func:`simulation_of` reads it back).

A unit is a pure function of its description (the spec, the program, its seed range), so
per-seed results do not depend on which units ran in which process or order.
"""
from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import numpy as np

from e2d_jax.experiments import registry, storage
from e2d_jax.experiments.provenance import unit_digest
from e2d_jax.experiments.spec import SweepSpec
from e2d_jax.sim.results import Simulation, info_fields
from e2d_jax.sim.layout import layout
from e2d_jax.sim.rollout import RolloutResult, SolverStats, record_rounds
from e2d_jax.sim.simulate import run_layout

#: Set to stop a sweep: :func:`run_units` stops before its next unit, and ``run_sweep``
#: writes no tables once it is set, even if a KeyboardInterrupt was lost on the way (CPython
#: drops an exception raised while a finalizer or callback runs). The command line sets it on
#: Ctrl-C; a notebook may set it from another thread.
INTERRUPTED = threading.Event()


class Interrupted(Exception):
    """A sweep stopped because :data:`INTERRUPTED` was set (finished chunks are kept)."""


def progress_bar(total: int, enabled=None):
    """A tqdm bar over units (shown on a terminal when ``enabled`` is None)."""
    disable = (not sys.stderr.isatty()) if enabled is None else not enabled
    # A presentation detail, imported where it is drawn. tqdm.auto only for a bar that is
    # drawn: in a notebook without ipywidgets its import warns, naming its own file.
    if disable:
        from tqdm.std import tqdm
    else:
        from tqdm.auto import tqdm
    return tqdm(total=total, unit="unit", disable=disable, dynamic_ncols=True)


def instances_of(spec: SweepSpec):
    """``(env, params, family)`` of the sweep's instances, with a leading instance axis."""
    return registry.build_instances(spec.env, spec.instance_seeds, spec.builder_options(), spec.dtype)


def chunk_arrays(sim: Simulation, diagnostics: bool) -> dict:
    """A unit's chunk: the per-seed results of its program's simulation with a cell axis
    (H, I, S, ...), and with ``diagnostics`` the agents' per-round info (``info_<field>``)."""
    add_cell_axis = (lambda x: np.asarray(x)[None]) if sim.cells is None else np.asarray
    res = sim.result
    arrays = {
        "regret": add_cell_axis(res.regret).astype(np.float32), "action_counts": add_cell_axis(res.action_counts),
        "invalid_rounds": add_cell_axis(res.invalid_rounds),
        "solver_status_counts": add_cell_axis(res.solver.status_counts),
        "solver_gap_hist": add_cell_axis(res.solver.gap_hist),
        "rounds": sim.rounds, "seed_indices": sim.seed_indices,
        "compile_seconds": np.float64(sim.compile_seconds), "run_seconds": np.float64(sim.run_seconds),
    }
    if diagnostics:
        for field, value in _info_arrays(res.info).items():
            arrays[field] = add_cell_axis(value)
    return arrays


def simulation_of(arrays: dict, program, spec: SweepSpec) -> Simulation:
    """A unit's :class:`~e2d_jax.sim.results.Simulation` (cells x instances x seeds) from its
    chunk."""
    info = {k[len("info_"):]: v for k, v in arrays.items() if k.startswith("info_")}
    result = RolloutResult(regret=arrays["regret"], action_counts=arrays["action_counts"],
                           invalid_rounds=arrays["invalid_rounds"],
                           solver=SolverStats(arrays["solver_status_counts"], arrays["solver_gap_hist"]), info=info)
    return Simulation(result=result, rounds=arrays["rounds"], seed_indices=arrays["seed_indices"],
                      compile_seconds=float(arrays["compile_seconds"]), run_seconds=float(arrays["run_seconds"]),
                      label=program.label, cells=_cells(program),
                      instance_seeds=tuple(spec.instance_seeds), horizon=spec.horizon)


def _info_arrays(info) -> dict:
    """The agent's per-round info as ``{"info_<field>": array}`` (:func:`~e2d_jax.sim.results.info_fields`)."""
    return {f"info_{k}": v for k, v in info_fields(info).items()}


def run_units(spec: SweepSpec, out: Path, digest: str, todo: list, *, progress=None) -> float:
    """Runs ``todo`` units (:class:`~e2d_jax.experiments.spec.Unit`) and writes each one's chunk
    file; returns the seconds spent. Each unit is its program's layout of every cell and
    instance for its seeds, in calls of the unit's width (:func:`e2d_jax.sim.simulate.run_layout`).

    Raises :class:`Interrupted` before a unit when :data:`INTERRUPTED` is set.
    """
    if not todo:
        return 0.0
    env, params, _ = instances_of(spec)
    t_start = time.perf_counter()
    bar = progress_bar(len(todo), progress)
    try:
        for unit in todo:
            if INTERRUPTED.is_set():
                raise Interrupted
            sim = run_unit(spec, unit, env, params)
            arrays = chunk_arrays(sim, spec.diagnostics)
            arrays.update(finished_at=np.float64(time.time()), unit_digest=np.str_(unit_digest(digest, unit)),
                          uid=np.str_(unit.uid))
            storage.write_chunk(out, unit.uid, arrays)
            bar.update(1)
            bar.set_postfix_str(f"{unit.program.label} seeds {unit.first}-{unit.first + unit.count - 1}")
    finally:
        bar.close()
    return time.perf_counter() - t_start


def run_unit(spec: SweepSpec, unit, env, params) -> Simulation:
    """One unit's runs as a :class:`~e2d_jax.sim.results.Simulation` with axes (cells,
    instances, seeds)."""
    program = unit.program
    seeds = np.arange(unit.first, unit.first + unit.count)
    the_layout = layout(program.num_cells, len(spec.instance_seeds), seeds, unit.width)
    result, compile_seconds, run_seconds = run_layout(program.program, program.numbers, params, env, the_layout,
                                                      horizon=spec.horizon, record_every=spec.every, seed=spec.seed)
    return Simulation(result=result, rounds=record_rounds(spec.horizon, spec.every), seed_indices=seeds,
                      compile_seconds=compile_seconds, run_seconds=run_seconds, label=program.label,
                      cells=_cells(program), instance_seeds=tuple(spec.instance_seeds), horizon=spec.horizon)


def _cells(program) -> dict:
    """The program's cells as ``{number: values (H,)}`` (``{"cell": 0...}`` for a program
    without numbers)."""
    if not program.program.names:
        return {"cell": np.zeros(program.num_cells)}
    return {name: program.numbers[:, i] for i, name in enumerate(program.program.names)}
