"""Runs a sweep's work units, resumable, and writes its tables.

:func:`run_sweep` is what ``e2d-jax run``, ``e2d-jax reproduce`` and ``e2d-jax sweep`` call,
and what a notebook calls with a :class:`~e2d_jax.experiments.spec.SweepSpec`. Its data flow
goes one way, each step computed once:

1. :func:`check_spec`: the names and options resolve, the instance's shapes are read
   (``jax.eval_shape``, nothing computed) and every program passes the interaction contract on
   one abstract round; the sweep's :class:`~e2d_jax.experiments.spec.Plan` (its programs and
   work units) is made, and the memory it needs is estimated against what is free;
2. :func:`prepare_output`: the output directory is checked against the spec (a directory that
   holds another configuration is refused unless ``overwrite``; an unfinished one of the same
   configuration is continued only with ``resume``; a finished one is left as it is), the
   manifest is written, and the units whose chunk files are missing are listed (reading each
   file's digest only);
3. the executor (:mod:`e2d_jax.experiments.executors`) runs those units and writes each chunk
   atomically as soon as it finishes;
4. :func:`collect` reads every chunk once into a :class:`~e2d_jax.results.Results` (each
   program's cells split back into its agents), writes ``results.parquet``, ``curves.npz``,
   ``summary.json`` and the figures, marks the manifest complete and removes the chunks.
"""
from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np

from e2d_jax import _checks as V
from e2d_jax.experiments import executors, storage
from e2d_jax.experiments.provenance import code_id, unit_digest, versions
from e2d_jax.experiments.registry import build_instance, instance_shapes
from e2d_jax.experiments.spec import Plan, SweepError, SweepSpec, plan
from e2d_jax.experiments.work import INTERRUPTED, Interrupted, simulation_of
from e2d_jax.results import Results
from e2d_jax.sim.results import concatenate, warn_flagged
from e2d_jax.envs.family import environment_of
from e2d_jax.sim.program import check_instance, check_program, lane_bytes, tree_bytes


class Checked(NamedTuple):
    """What :func:`check_spec` learned of a sweep: the instance's abstract shapes, its model
    family and the plan."""

    params: object
    family: str
    plan: Plan


def check_spec(spec: SweepSpec, width: int | None = None) -> Checked:
    """Validates the environment and every agent before anything runs: JAX computes in the
    sweep's precision, the names resolve, the options apply, the memory the sweep needs is there
    (:func:`check_memory`), and every program passes the interaction contract on one abstract
    round of the instance with its first cell (:func:`e2d_jax.sim.program.check_program`;
    nothing is compiled, and the check is not repeated when the program runs)."""
    if spec.x64 and not jax.config.jax_enable_x64:
        raise SweepError(f"{V.name('x64')}: the sweep computes in float64 but JAX runs in float32; call "
                         "jax.config.update('jax_enable_x64', True) first (the command line does)")
    params, family = instance_shapes(spec.env, spec.builder_options(), spec.dtype)
    checked = Checked(params, family, plan(spec, family, width, params=params))
    # From shapes only, before any agent is traced at the sweep's sizes.
    check_memory(spec, checked=checked)
    env = environment_of(params)
    for program in checked.plan.programs:
        try:
            check_program(program.program, program.numbers, params, env)
        except TypeError as err:
            raise V.ArgumentError("agents", f"{V.name('agents')}[{program.members[0].label}]: {err}") from None
    _check_values(spec, checked)
    return checked


def _check_values(spec: SweepSpec, checked: Checked) -> None:
    """The instances' values, on the first instance, built here with concrete arrays so that
    the builder's own checks of values (finite features, a context that offers an action, a
    dataset that is installed) refuse bad input before anything is written; and what the
    programs need of them (the instances of a registered family share their observation
    structure): gaps Delta_f need a game whose reward level is observable
    (:func:`e2d_jax.sim.program.check_instance`)."""
    _, first, _ = build_instance(spec.env, spec.instance_seeds[0], spec.builder_options(), spec.dtype)
    if checked.family != "linear":
        return
    for program in checked.plan.programs:
        if program.program.gap_type == "delta_f":
            check_instance(program.program, first)


def prepare_output(spec: SweepSpec, out: Path, the_plan: Plan, *, resume: bool, overwrite: bool) -> tuple:
    """Checks ``out`` against ``spec`` and writes the manifest; returns ``(digest, todo)``: the
    spec's digest and the units without a chunk file of this configuration (none when the
    directory holds this configuration's finished tables)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise SweepError(f"{V.name('out')}: {out} exists and is not a directory")
    digest = spec.digest(code_id())
    manifest_path = out / storage.MANIFEST
    old = storage.read_manifest(out) if manifest_path.exists() else None
    done = lambda u: storage.chunk_done(out, u.uid, unit_digest(digest, u))  # noqa: E731
    if old is not None:
        if old.get("digest") != digest:
            if not overwrite:
                what = old.get("spec", {}).get("name", "another configuration")
                code = old.get("code", "?")
                raise SweepError(
                    f"out: {out} holds results of a different configuration ({what}, code {code}; this "
                    f"is {code_id()}). Use another {V.name('out')}, or {V.name('overwrite', 'overwrite=True')} to "
                    "delete them and start over")
            _clear(out)
        elif old.get("complete") and not overwrite and (out / storage.SUMMARY).exists():
            return digest, []
        elif overwrite:
            _clear(out)
        else:
            todo = [u for u in the_plan.units if not done(u)]
            if todo and not resume:
                raise SweepError(f"{V.name('out')}: {out} holds an unfinished run of this configuration ({len(todo)} units to "
                                 f"go): {V.name('resume', 'resume=True')} continues it, "
                                 f"{V.name('overwrite', 'overwrite=True')} starts over")
    out.mkdir(parents=True, exist_ok=True)
    storage.remove_temporaries(out)
    storage.write_json(manifest_path, {"digest": digest, "code": code_id(), "spec": spec.to_dict(),
                                       "units": len(the_plan.units), "versions": versions()})
    return digest, [u for u in the_plan.units if not done(u)]


def _clear(out: Path) -> None:
    storage.remove_chunks(out)
    for name in (storage.TABLE, storage.CURVES, storage.SUMMARY, storage.DIAGNOSTICS):
        (out / name).unlink(missing_ok=True)


def available_memory() -> int | None:
    """Bytes the run may use: the first device's limit on accelerators, else the host's
    available memory (``MemAvailable`` of /proc/meminfo); None when unknown."""
    try:
        stats = jax.devices()[0].memory_stats() or {}
    except Exception:  # noqa: BLE001 - backends without memory statistics
        stats = {}
    if stats.get("bytes_limit"):
        return int(stats["bytes_limit"])
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def estimate_memory(spec: SweepSpec, checked: Checked | None = None) -> dict:
    """An estimate of a sweep's peak memory, from shapes only (``jax.eval_shape``: nothing is
    allocated): the instances (twice, for the builders' temporaries) plus one unit's
    trajectories (cells x instances x chunk seeds) with their recorded curves, plus the lanes
    of one call on every device, each with its agent state (times 4 for the step's
    temporaries) and its own copy of the instance. Returns
    ``{"instances", "unit", "total"}`` in bytes. It is an order-of-magnitude guard, not a
    measurement."""
    if checked is None:
        params, family = instance_shapes(spec.env, spec.builder_options(), spec.dtype)
        checked = Checked(params, family, plan(spec, family, params=params))
    params = checked.params
    inst = 2 * tree_bytes(params) * len(spec.instance_seeds)
    unit = 0
    records = spec.horizon // spec.every + 1
    for program in checked.plan.programs:
        chunk = max(u.count for u in checked.plan.units if u.program == program)
        lanes = max(u.width for u in checked.plan.units if u.program == program) * len(jax.devices())
        traj = program.num_cells * len(spec.instance_seeds) * chunk
        unit = max(unit, traj * 8 * records * 8 + lanes * lane_bytes(program.program, program.numbers, params))
    return {"instances": inst, "unit": unit, "total": inst + unit}


def check_memory(spec: SweepSpec, available: int | None = None, checked: Checked | None = None) -> None:
    """Refuses (SweepError) a sweep whose estimated memory exceeds what the machine has,
    saying the estimate and what to change."""
    available = available_memory() if available is None else available
    if available is None:
        return
    est = estimate_memory(spec, checked)
    if est["total"] > 0.9 * available:
        gib = lambda b: f"{b / 2**30:.1f} GiB"  # noqa: E731
        raise SweepError(
            f"the run needs an estimated {gib(est['total'])} (instances {gib(est['instances'])}, one work unit "
            f"{gib(est['unit'])}) but {gib(available)} is available: use fewer actions or a smaller {V.name('d')} "
            f"({V.name('arms')}, {V.name('models')}), fewer {V.name('instance_seeds')}, or fewer seeds per unit "
            f"({V.name('chunk_size')})")


def run_sweep(spec: SweepSpec, out, *, resume: bool = False, overwrite: bool = False, progress=None,
              log=print, executor=None, part=None) -> dict:
    """Runs (or continues) a sweep into ``out`` and returns its summary (see the module doc).

    Args:
      spec: the sweep.
      out: the output directory.
      resume: continue an unfinished run of the same configuration in ``out``.
      overwrite: delete what ``out`` holds and start over.
      progress: show a progress bar (None: when on a terminal).
      log: where one-line notes go (``print`` by default).
      executor: where the units run: an executor of :mod:`e2d_jax.experiments.executors`, or
        its name (``"local"``, the default, or ``"ray"`` with a local Ray instance).
      part: ``(i, n)`` or ``"i/n"``: run only the i-th of n disjoint parts of the units (a
        part continues what is in ``out``, as ``resume`` does). When other parts' units are
        still missing, the tables are not written and the returned dict says
        ``{"complete": False, "units": ..., "units_done": ..., "ran": ...}``.

    Raises:
      SweepError: the sweep cannot start (the message says why and what to do).
      Interrupted: :data:`e2d_jax.experiments.work.INTERRUPTED` was set (finished chunks are
        kept; ``resume=True`` continues).
    """
    out = Path(out)
    part = executors.parse_part(part)
    if executor is None or isinstance(executor, str):
        executor = executors.make_executor(executor or "local")
    checked = check_spec(spec)
    the_plan = checked.plan
    digest, todo = prepare_output(spec, out, the_plan, resume=resume or part is not None, overwrite=overwrite)
    all_units = list(the_plan.units)
    if not todo and storage.read_manifest(out).get("complete"):
        log(f"{out} holds this configuration's finished results; nothing to run")
        return _files_summary(out)
    mine = executors.select_part(todo, all_units, part)
    if len(todo) < len(all_units):
        log(f"{len(all_units) - len(todo)} of {len(all_units)} units already done in {out}; running "
            f"{len(mine)}" + (f" (part {part[0]}/{part[1]})" if part else ""))
    t0 = time.perf_counter()
    seconds = executor.run(spec, out, digest, mine, progress=progress)
    if INTERRUPTED.is_set():
        raise Interrupted
    if part is not None:
        left = [u for u in todo if u not in mine and not storage.chunk_done(out, u.uid, unit_digest(digest, u))]
        if left:
            return {"complete": False, "name": spec.name, "units": len(all_units),
                    "units_done": len(all_units) - len(left), "ran": len(mine), "part": list(part),
                    "wall_seconds_this_call": time.perf_counter() - t0}
    extra = {"executor": executor.name, "wall_seconds_this_call": time.perf_counter() - t0,
             "run_seconds_this_call": seconds, "device": [str(d) for d in jax.devices()],
             "platform": platform.platform()}
    summary = collect(spec, the_plan, out, digest, extra=extra)
    warn_flagged(summary["agents"])
    return summary


def _files_summary(out: Path) -> dict:
    return json.loads((Path(out) / storage.SUMMARY).read_text())


def collect_stored(out) -> dict:
    """Writes the tables of a finished sweep from its manifest and chunk files (e.g. after the
    last part of a job array) and returns the summary; SweepError when units are missing or
    the stored results are of other code."""
    out = Path(out)
    manifest = storage.read_manifest(out)
    if not manifest:
        raise SweepError(f"{out} holds no sweep (no readable {storage.MANIFEST})")
    spec = SweepSpec.from_dict(manifest["spec"])
    digest = spec.digest(code_id())
    if manifest.get("digest") != digest:
        raise SweepError(f"{out} holds results of code {manifest.get('code')}, this is {code_id()}: collect them "
                         "with that version")
    if manifest.get("complete") and (out / storage.SUMMARY).exists():
        return _files_summary(out)
    return collect(spec, check_spec(spec).plan, out, digest)


# --------------------------------------------------------------------------------------
# Tables and summaries


def collect(spec: SweepSpec, the_plan: Plan, out, digest: str, extra: dict | None = None) -> dict:
    """Reads every chunk file once into the results (each program's cells split back into its
    agents), writes ``results.parquet``, ``curves.npz``, ``summary.json`` (and
    ``diagnostics.npz`` when the sweep keeps them) and the figures, marks the manifest
    complete, removes the chunks and returns the summary.

    A statistic over no valid seed (a cell, or an instance of it, whose seeds are all
    invalid) is None in the summary (``null`` in ``summary.json``). A cell's compile time and
    seed-rounds per second are those of its program's compiled call (its run time is shared
    among the program's cells in proportion to their trajectories)."""
    out = Path(out)
    sims, missing = [], []
    for program in the_plan.programs:
        parts = []
        for unit in (u for u in the_plan.units if u.program == program):
            arrays = storage.read_chunk(out, unit.uid, unit_digest(digest, unit))
            if arrays is None:
                missing.append(unit.uid)
            else:
                parts.append(simulation_of(arrays, program, spec))
        if parts and not missing:
            sims.extend(_members(program, concatenate(parts)))
    if missing:
        raise SweepError(f"{len(missing)} units have no results yet (e.g. {missing[0]}): run again with "
                         f"{V.name('resume', 'resume=True')}")
    results = Results(sims, name=spec.name, config=spec.to_dict())
    summary_extra = {"versions": versions(), "complete": True, **(extra or {})}
    results.save(out, name=spec.name, diagnostics=spec.diagnostics, extra=summary_extra)
    manifest = storage.read_manifest(out)
    storage.write_json(out / storage.MANIFEST, {**manifest, "complete": True})
    storage.remove_chunks(out)
    return _files_summary(out)


def _members(program, sim):
    """A program's simulation split into its members' (their cells, their labels, their grid
    hyperparameters; a member without a grid has no cell axis). Each member's run time is the
    program's in proportion to its cells."""
    out = []
    for m, agent in enumerate(program.members):
        idx = program.member_cells(m)
        take = lambda x: np.asarray(x)[idx] if agent.grid else np.asarray(x)[idx[0]]  # noqa: E731
        result = jax.tree_util.tree_map(take, sim.result)
        grid = agent.cells() or None
        out.append(sim._replace(result=result, label=agent.label, cells=grid, program=program.label,
                                run_seconds=sim.run_seconds * len(idx) / program.num_cells))
    return out
