"""Runs a sweep's work units, resumable, and writes its tables.

:func:`run_sweep` is what ``e2d-jax run``, ``e2d-jax reproduce`` and ``e2d-jax sweep`` call,
and what a notebook calls with a :class:`~e2d_jax.experiments.spec.SweepSpec`:

1. the names and options are checked (every agent on one abstract round of the instance,
   nothing compiled), and the memory the sweep needs is estimated against what is free;
2. the output directory is checked against the spec (a directory that holds another
   configuration is refused unless ``overwrite``; an unfinished one of the same
   configuration is continued only with ``resume``), and the manifest is written;
3. every unit whose chunk file is missing is run by the executor
   (:mod:`e2d_jax.experiments.executors`) and written atomically as soon as it finishes;
4. the chunk files are read back into ``results.parquet``, ``curves.npz`` and
   ``summary.json`` (:mod:`e2d_jax.experiments.storage`).
"""
from __future__ import annotations

import json
import platform
import shutil
import time
from pathlib import Path

import jax
import numpy as np

from e2d_jax.experiments import executors, storage
from e2d_jax.experiments.provenance import code_id, unit_digest, versions
from e2d_jax.experiments.registry import instance_shapes
from e2d_jax.experiments.spec import SweepError, SweepSpec, units
from e2d_jax.experiments.work import INTERRUPTED, Interrupted, agent_factories
from e2d_jax.sim.rollout import SolverStats, check_agent, instance_key
from e2d_jax.sim.summaries import instance_summary, solver_summary
from e2d_jax.types import Status


def prepare_output(spec: SweepSpec, out: Path, *, resume: bool, overwrite: bool) -> str:
    """Checks ``out`` against ``spec`` and writes the manifest; returns the spec's digest."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise SweepError(f"out: {out} exists and is not a directory")
    digest = spec.digest(code_id())
    manifest_path = out / storage.MANIFEST
    if manifest_path.exists():
        try:
            old = json.loads(manifest_path.read_text())
        except (OSError, ValueError):
            old = {}
        if old.get("digest") != digest:
            if not overwrite:
                what = old.get("spec", {}).get("name", "another configuration")
                code = old.get("code", "?")
                raise SweepError(
                    f"out: {out} holds results of a different configuration ({what}, code {code}; this "
                    f"is {code_id()}). Use another out, or overwrite=True to delete them and start over")
            shutil.rmtree(out / "chunks", ignore_errors=True)
            for name in (storage.TABLE, storage.CURVES, storage.SUMMARY):
                (out / name).unlink(missing_ok=True)
        elif not resume:
            todo = [u for u in units(spec) if storage.read_chunk(out, u.uid, unit_digest(digest, u)) is None]
            if todo and not overwrite:
                raise SweepError(f"out: {out} holds an unfinished run of this configuration ({len(todo)} units to "
                                 "go): resume=True continues it, overwrite=True starts over")
            if overwrite:
                shutil.rmtree(out / "chunks", ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    storage.remove_temporaries(out)
    storage.write_json(manifest_path, {"digest": digest, "code": code_id(), "spec": spec.to_dict(),
                                       "units": len(units(spec)), "versions": versions()})
    return digest


def check_spec(spec: SweepSpec) -> str:
    """Validates the environment and every agent before anything runs: the names resolve, the
    options apply, and every agent passes the interaction contract on one abstract round of
    the instance (``jax.eval_shape``; nothing is compiled). Returns the model family."""
    params, family = instance_shapes(spec.env, spec.builder_options(), spec.dtype)
    factories = agent_factories(spec, family)
    for entry in spec.agents:
        factory = factories[entry.label]
        cells = entry.cells()
        try:
            if cells:
                check_agent(factory, params, hparams={k: np.float32(v[0]) for k, v in cells.items()})
            else:
                check_agent(factory(), params)
        except TypeError as err:
            raise ValueError(f"agents[{entry.label}]: {err}") from None
    return family


def _tree_bytes(tree) -> int:
    return int(sum(np.prod(x.shape) * np.dtype(x.dtype).itemsize for x in jax.tree_util.tree_leaves(tree)))


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


def estimate_memory(spec: SweepSpec) -> dict:
    """An estimate of a sweep's peak memory, from shapes only (``jax.eval_shape``: nothing is
    allocated): the instances (twice, for the builders' temporaries) plus one unit's
    trajectories (cells x instances x chunk seeds), each with its agent state and recorded
    curves, times 4 for the step's temporaries, plus a copy of the instance per seed. Returns
    ``{"instances", "unit", "total"}`` in bytes. It is an order-of-magnitude guard, not a
    measurement."""
    params, family = instance_shapes(spec.env, spec.builder_options(), spec.dtype)
    factories = agent_factories(spec, family)
    inst = 2 * _tree_bytes(params) * len(spec.instance_seeds)
    unit = 0
    records = spec.horizon // spec.every + 1
    for entry in spec.agents:
        try:
            agent = factories[entry.label]()
            state = _tree_bytes(jax.eval_shape(agent.init, instance_key(0), params.model))
        except Exception:  # noqa: BLE001 - an agent that needs concrete values: count its curves only
            state = 0
        traj = entry.num_cells * len(spec.instance_seeds) * spec.chunk(entry)
        per_seed_instance = len(spec.instance_seeds) * spec.chunk(entry) * _tree_bytes(params)
        unit = max(unit, 4 * traj * (state + 8 * records * 8) + per_seed_instance)
    return {"instances": inst, "unit": unit, "total": inst + unit}


def check_memory(spec: SweepSpec, available: int | None = None) -> None:
    """Refuses (SweepError) a sweep whose estimated memory exceeds what the machine has,
    saying the estimate and what to change."""
    available = available_memory() if available is None else available
    if available is None:
        return
    est = estimate_memory(spec)
    if est["total"] > 0.9 * available:
        gib = lambda b: f"{b / 2**30:.1f} GiB"
        raise SweepError(
            f"the run needs an estimated {gib(est['total'])} (instances {gib(est['instances'])}, one work unit "
            f"{gib(est['unit'])}) but {gib(available)} is available: use fewer actions or a smaller d "
            f"(arms, models), fewer instance_seeds, or fewer seeds per unit (chunk_size)")


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
    check_memory(spec)  # from shapes only, before any agent is traced at the sweep's sizes
    check_spec(spec)
    digest = prepare_output(spec, out, resume=resume or part is not None, overwrite=overwrite)
    all_units = units(spec)
    done = lambda u: storage.read_chunk(out, u.uid, unit_digest(digest, u)) is not None
    todo = [u for u in all_units if not done(u)]
    mine = executors.select_part(todo, all_units, part)
    if len(todo) < len(all_units):
        log(f"{len(all_units) - len(todo)} of {len(all_units)} units already done in {out}; running "
            f"{len(mine)}" + (f" (part {part[0]}/{part[1]})" if part else ""))
    t0 = time.perf_counter()
    seconds = executor.run(spec, out, digest, mine, progress=progress)
    if INTERRUPTED.is_set():
        raise Interrupted
    if part is not None:
        left = [u for u in todo if u not in mine and not done(u)]
        if left:
            return {"complete": False, "name": spec.name, "units": len(all_units),
                    "units_done": len(all_units) - len(left), "ran": len(mine), "part": list(part),
                    "wall_seconds_this_call": time.perf_counter() - t0}
    summary = collect(spec, out, digest, ran={u.uid for u in mine})
    summary["complete"] = True
    summary["executor"] = executor.name
    summary["wall_seconds_this_call"] = time.perf_counter() - t0
    summary["run_seconds_this_call"] = seconds
    summary["device"] = [str(d) for d in jax.devices()]
    summary["platform"] = platform.platform()
    storage.write_json(out / storage.SUMMARY, summary)
    return summary


def collect_stored(out) -> dict:
    """Writes the tables of a finished sweep from its manifest and chunk files (e.g. after the
    last part of a job array) and returns the summary; SweepError when units are missing or
    the stored results are of other code."""
    out = Path(out)
    try:
        manifest = json.loads((out / storage.MANIFEST).read_text())
    except (OSError, ValueError):
        raise SweepError(f"{out} holds no sweep (no readable {storage.MANIFEST})") from None
    spec = SweepSpec.from_dict(manifest["spec"])
    digest = spec.digest(code_id())
    if manifest.get("digest") != digest:
        raise SweepError(f"{out} holds results of code {manifest.get('code')}, this is {code_id()}: collect them "
                         "with that version")
    summary = collect(spec, out, digest)
    summary["complete"] = True
    storage.write_json(out / storage.SUMMARY, summary)
    return summary


# --------------------------------------------------------------------------------------
# Tables and summaries


def cell_label(agent_label: str, hp: dict) -> str:
    if not hp:
        return agent_label
    return agent_label + "[" + ",".join(f"{k}={v:g}" for k, v in sorted(hp.items())) + "]"


def _rate(chunks, n_cells: int, n_inst: int, horizon: int):
    """Seed-rounds per second over the given chunks (each chunk's own trajectories and run
    time), or None without any."""
    seconds = sum(float(c["run_seconds"]) for c in chunks)
    rounds = sum(int(np.asarray(c["seed_indices"]).size) * n_cells * n_inst * horizon for c in chunks)
    return rounds / seconds if seconds > 0 else None


def _finite_or_none(x):
    """``x`` with every non-finite float (a statistic over no valid seed) replaced by None, so
    that the summary is strict JSON (``null``)."""
    if isinstance(x, dict):
        return {k: _finite_or_none(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite_or_none(v) for v in x]
    if isinstance(x, (float, np.floating)) and not np.isfinite(x):
        return None
    return x


def collect(spec: SweepSpec, out, digest: str, ran: set | None = None) -> dict:
    """Reads every chunk file into the table, the curves and the summary (and writes the first
    two); ``ran``: the units run by this call, whose speed the summary reports apart. A
    statistic over no valid seed (a cell, or an instance of it, whose seeds are all invalid) is
    None in the summary (``null`` in ``summary.json``). A cell's ``compile_seconds`` and
    seed-rounds per second are its agent's: one call runs every cell of the agent's grid, and
    the rate counts the seed-rounds of all of them."""
    out = Path(out)
    ran = set() if ran is None else ran
    hp_names = sorted({k for a in spec.agents for k, _ in a.grid})
    cols = {"agent": [], "cell": [], **{f"hp_{k}": [] for k in hp_names}, "instance_seed": [], "seed": [],
            "final_regret": [], "valid": [], "invalid_rounds": [], "nonfinite_rounds": [],
            "invalid_action_rounds": [], "max_iter_rounds": [], "ok_rounds": [], "rel_gap_median": [],
            "rel_gap_p90": [], "action_counts": []}
    curves, rounds = [], None
    cells_summary = {}
    missing = []
    n_inst = len(spec.instance_seeds)
    all_units = units(spec)
    for entry in spec.agents:
        agent_units = [u for u in all_units if u.agent == entry]
        chunks = [storage.read_chunk(out, u.uid, unit_digest(digest, u)) for u in agent_units]
        if any(c is None for c in chunks):
            missing.extend(u.uid for u, c in zip(agent_units, chunks) if c is None)
            continue
        cat = lambda key: np.concatenate([c[key] for c in chunks], axis=2)
        regret, counts, invalid = cat("regret"), cat("action_counts"), cat("invalid_rounds")
        status = cat("solver_status_counts")
        stats = solver_summary(SolverStats(status, cat("solver_gap_hist")))
        seeds = np.concatenate([c["seed_indices"] for c in chunks])
        rounds = chunks[0]["rounds"]
        cells = entry.cells()
        n_cells = regret.shape[0]
        rate_all = _rate(chunks, n_cells, n_inst, spec.horizon)
        this_call = [c for u, c in zip(agent_units, chunks) if u.uid in ran]
        rate_now = _rate(this_call, n_cells, n_inst, spec.horizon)
        compile_s = float(max(c["compile_seconds"] for c in chunks))
        for h in range(n_cells):
            hp = {k: float(v[h]) for k, v in cells.items()}
            label = cell_label(entry.label, hp)
            final = regret[h, :, :, -1].astype(np.float64)  # (I, S)
            valid = invalid[h] == 0
            for i, inst in enumerate(spec.instance_seeds):
                for s_pos, s in enumerate(seeds):
                    cols["agent"].append(entry.label)
                    cols["cell"].append(label)
                    for k in hp_names:
                        cols[f"hp_{k}"].append(hp.get(k, np.nan))
                    cols["instance_seed"].append(int(inst))
                    cols["seed"].append(int(s))
                    cols["final_regret"].append(float(final[i, s_pos]))
                    cols["valid"].append(bool(valid[i, s_pos]))
                    cols["invalid_rounds"].append(int(invalid[h, i, s_pos]))
                    cols["nonfinite_rounds"].append(int(stats["nonfinite_rounds"][h, i, s_pos]))
                    cols["invalid_action_rounds"].append(int(stats["invalid_action_rounds"][h, i, s_pos]))
                    cols["max_iter_rounds"].append(int(stats["max_iter_rounds"][h, i, s_pos]))
                    cols["ok_rounds"].append(int(status[h, i, s_pos, Status.OK]))
                    cols["rel_gap_median"].append(float(stats["rel_gap_median"][h, i, s_pos]))
                    cols["rel_gap_p90"].append(float(stats["rel_gap_p90"][h, i, s_pos]))
                    cols["action_counts"].append(counts[h, i, s_pos].astype(np.int64).tolist())
                curves.append(regret[h, i])
            summary = instance_summary(final, valid)
            vals = final[valid]
            with np.errstate(all="ignore"):
                gap_med = stats["rel_gap_median"][h]
                gap_p90 = stats["rel_gap_p90"][h]
                solver = {
                    "rounds_at_max_iter_fraction": float(stats["max_iter_rounds"][h].sum() / max(status[h].sum(), 1)),
                    "rel_gap_median_over_seeds": float(np.nanmedian(gap_med)) if np.isfinite(gap_med).any() else None,
                    "rel_gap_p90_median_over_seeds": float(np.nanmedian(gap_p90)) if np.isfinite(gap_p90).any() else None,
                    "rel_gap_p90_max_over_seeds": float(np.nanmax(gap_p90)) if np.isfinite(gap_p90).any() else None,
                }
            reasons = {"nonfinite": int((stats["nonfinite_rounds"][h] > 0).sum()),
                       "invalid_action": int((stats["invalid_action_rounds"][h] > 0).sum())}
            cells_summary[label] = _finite_or_none({
                "agent": entry.label, "hyperparameters": hp,
                "final_regret_mean": summary["pooled_mean"], "final_regret_ci95": summary["pooled_ci95"],
                "final_regret_std": float(vals.std(ddof=1)) if vals.size > 1 else 0.0 if vals.size else None,
                "seeds": int(valid.sum()), "seeds_per_instance": int(seeds.size), "instances": n_inst,
                "seeds_invalid": int((~valid).sum()), "invalid_reasons": reasons,
                "instance_means": summary["instance_means"], "instance_ci95": summary["instance_ci95"],
                "instance_valid_seeds": summary["seeds"],
                "over_instances": {"median": summary["median"], "iqr": summary["iqr"],
                                   "mean": summary["mean_over_instances"],
                                   "ci95": summary["ci95_over_instances"]},
                "solver": solver,
                "compile_seconds": compile_s,
                "seed_rounds_per_second": rate_all,
                "seed_rounds_per_second_this_call": rate_now,
            })
    if missing:
        raise SweepError(f"{len(missing)} units have no results yet (e.g. {missing[0]}): run again with resume=True")
    storage.write_table(out, cols)
    n_rows = len(cols["agent"])
    regret_rows = np.concatenate(curves, axis=0) if curves else np.zeros((0, 0))
    storage.write_curves(out, rounds, regret_rows.astype(np.float32), np.arange(n_rows))
    return {
        "name": spec.name, "conventions": spec.conventions, "config": spec.to_dict(),
        "agents": cells_summary, "versions": versions(),
        "files": {"table": storage.TABLE, "curves": storage.CURVES},
    }
