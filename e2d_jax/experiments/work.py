"""Running work units on this process's devices and writing their chunk files.

:func:`run_units` is what every executor runs (in this process for ``local``, in each task
for ``ray``): it builds the sweep's instances once (the builder vmapped over the instance
keys), then for every unit calls :func:`e2d_jax.sim.simulate` with the instance axis and the
agent's hyperparameter grid as vmapped axes (one compile per agent; the units of an agent
share it) and writes the unit's chunk file atomically as soon as it finishes.

A unit is a pure function of its description (the spec, the agent, its seed range), so
per-seed results do not depend on which units ran in which process or order.
"""
from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import jax
import numpy as np

from e2d_jax.experiments import registry, storage
from e2d_jax.experiments.provenance import unit_digest
from e2d_jax.experiments.spec import SweepSpec
from e2d_jax.sim.simulate import simulate

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


def agent_factories(spec: SweepSpec, family: str) -> dict:
    """``{label: factory}`` for every agent of the sweep (checked before anything runs)."""
    return {a.label: registry.agent_factory(a.name, horizon=spec.horizon, options=dict(a.options), family=family)
            for a in spec.agents}


def _info_arrays(info) -> dict:
    """The agent's per-round info as ``{"info_<field>": array}`` (NamedTuple fields, or the
    leaves' key paths of another pytree)."""
    if hasattr(info, "_asdict") and all(hasattr(v, "shape") for v in info._asdict().values()):
        return {f"info_{k}": v for k, v in info._asdict().items()}
    leaves = jax.tree_util.tree_flatten_with_path(info)[0]
    out = {}
    for path, leaf in leaves:
        name = "".join(ch if ch.isalnum() else "_" for ch in jax.tree_util.keystr(path)).strip("_") or "value"
        out[f"info_{name}"] = leaf
    return out


def run_units(spec: SweepSpec, out: Path, digest: str, todo: list, *, progress=None) -> float:
    """Runs ``todo`` units and writes each one's chunk file; returns the seconds spent.

    Raises :class:`Interrupted` before a unit when :data:`INTERRUPTED` is set.
    """
    if not todo:
        return 0.0
    env, params, family = instances_of(spec)
    factories = agent_factories(spec, family)
    agents = {}
    t_start = time.perf_counter()
    bar = progress_bar(len(todo), progress)
    try:
        for unit in todo:
            if INTERRUPTED.is_set():
                raise Interrupted
            entry = unit.agent
            cells = entry.cells()
            factory = factories[entry.label]
            if not cells and entry.label not in agents:
                agents[entry.label] = factory()
            sim = simulate(params, factory if cells else agents[entry.label], horizon=spec.horizon,
                           num_seeds=unit.count, seed=spec.seed, record_every=spec.every, first_seed=unit.first,
                           instances=True, hparams=cells or None, env=env)
            res = sim.result
            add_cell_axis = (lambda x: np.asarray(x)[None]) if not cells else np.asarray
            arrays = {
                "regret": add_cell_axis(res.regret), "action_counts": add_cell_axis(res.action_counts),
                "invalid_rounds": add_cell_axis(res.invalid_rounds),
                "solver_status_counts": add_cell_axis(res.solver.status_counts),
                "solver_gap_hist": add_cell_axis(res.solver.gap_hist),
                "rounds": sim.rounds, "seed_indices": sim.seed_indices,
                "compile_seconds": np.float64(sim.compile_seconds), "run_seconds": np.float64(sim.run_seconds),
                "finished_at": np.float64(time.time()),
                "unit_digest": np.str_(unit_digest(digest, unit)), "uid": np.str_(unit.uid),
            }
            for field, value in _info_arrays(res.info).items():
                arrays[field] = add_cell_axis(value)
            storage.write_chunk(out, unit.uid, arrays)
            bar.update(1)
            bar.set_postfix_str(f"{entry.label} seeds {unit.first}-{unit.first + unit.count - 1}")
    finally:
        bar.close()
    return time.perf_counter() - t_start
