"""Runs a sweep's work units on this machine's devices, resumable, and writes the tables.

:func:`run_sweep` is what ``e2d-jax run``, ``e2d-jax reproduce`` and ``e2d-jax sweep`` call:

1. the output directory is checked against the spec (a directory that holds another
   configuration is refused unless ``overwrite``; an unfinished one of the same
   configuration is continued only with ``resume``), and the manifest is written;
2. the instances are built once, as one batch (the environment builder vmapped over the
   instance keys);
3. every unit whose chunk file is missing is run (:func:`e2d_jax.simulate.simulate` with the
   instance axis and the agent's hyperparameter grid as vmapped axes; one compile per agent,
   the units of an agent share it) and written atomically as soon as it finishes, with a
   progress bar and a time estimate over the units;
4. the chunk files are read back into ``results.parquet``, ``curves.npz`` and
   ``summary.json`` (see ``e2d_jax.experiments.storage``).

Per-seed results do not depend on which units ran in which process or order: a unit is a
pure function of its description (the spec, the agent, its seed range), and every unit of
an agent has the same compiled shape.
"""
from __future__ import annotations

import hashlib
import platform
import shutil
import sys
import threading
import time
from pathlib import Path

import numpy as np

from e2d_jax.experiments import storage
from e2d_jax.experiments.spec import SweepSpec, Unit, units


#: Set by the CLI's Ctrl-C (SIGINT) handler. ``run_units`` stops before its next unit and
#: ``run_sweep`` writes no tables once it is set, even if the KeyboardInterrupt itself was lost
#: (CPython drops an exception raised while a finalizer or callback runs), so an interrupted
#: run never ends as if it were complete.
INTERRUPTED = threading.Event()


class SweepError(ValueError):
    """A sweep cannot start (its message says why and what to do)."""


#: Modules that draw or print results but compute none: left out of the source digest, so
#: that editing a figure does not invalidate a week of stored results.
PRESENTATION_MODULES = ("plotting.py", "cli.py")


def source_digest() -> str:
    """A hash of the library's source files that compute results (all but
    ``PRESENTATION_MODULES``): results are tied to the code that made them."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() in PRESENTATION_MODULES:
            continue
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def versions() -> dict:
    import jax
    import jaxlib

    import e2d_jax

    return {"e2d_jax": e2d_jax.__version__, "e2d_jax_source": source_digest(), "jax": jax.__version__,
            "jaxlib": jaxlib.__version__, "numpy": np.__version__, "python": platform.python_version()}


def _code_id() -> str:
    v = versions()
    return f"{v['e2d_jax']}+{v['e2d_jax_source']}"


def _unit_digest(spec_digest: str, unit: Unit) -> str:
    return hashlib.sha256(f"{spec_digest}/{unit.uid}/{unit.first}/{unit.count}/{unit.size}".encode()).hexdigest()[:16]


def prepare_output(spec: SweepSpec, out: Path, *, resume: bool, overwrite: bool) -> str:
    """Checks ``out`` against ``spec`` and writes the manifest; returns the spec's digest."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise SweepError(f"--out: {out} exists and is not a directory")
    digest = spec.digest(_code_id())
    manifest_path = out / storage.MANIFEST
    if manifest_path.exists():
        import json

        try:
            old = json.loads(manifest_path.read_text())
        except (OSError, ValueError):
            old = {}
        if old.get("digest") != digest:
            if not overwrite:
                what = old.get("spec", {}).get("name", "another configuration")
                code = old.get("code", "?")
                raise SweepError(
                    f"--out: {out} holds results of a different configuration ({what}, code {code}; this "
                    f"is {_code_id()}). Use another --out, or --overwrite to delete them and start over")
            shutil.rmtree(out / "chunks", ignore_errors=True)
            for name in (storage.TABLE, storage.CURVES, storage.SUMMARY):
                (out / name).unlink(missing_ok=True)
        elif not resume:
            todo = [u for u in units(spec) if storage.read_chunk(out, u.uid, _unit_digest(digest, u)) is None]
            if todo and not overwrite:
                raise SweepError(f"--out: {out} holds an unfinished run of this configuration ({len(todo)} units to "
                                 "go): add --resume to continue it, or --overwrite to start over")
            if overwrite:
                shutil.rmtree(out / "chunks", ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    storage.remove_temporaries(out)
    storage.write_json(manifest_path, {"digest": digest, "code": _code_id(), "spec": spec.to_dict(),
                                       "units": len(units(spec)), "versions": versions()})
    return digest


def env_spec(spec: SweepSpec):
    from e2d_jax import registry

    return registry.EnvSpec(name=spec.env, d=spec.d, arms=spec.arms, sigma=spec.sigma, models=spec.models,
                            dtype="float64" if spec.x64 else "float32")


def check_spec(spec: SweepSpec):
    """Validates names and flags against the registry before anything runs (ValueError)."""
    from e2d_jax import registry

    if spec.env not in registry.ENVIRONMENTS:
        raise ValueError(f"--env: unknown environment {spec.env!r} (choose from {', '.join(sorted(registry.ENVIRONMENTS))})")
    family = registry.ENV_FAMILY[spec.env]
    if family == "finite" and spec.d is not None:
        raise ValueError(f"--d does not apply to the finite environment {spec.env!r} (its size is --arms and --models)")
    if family == "linear" and spec.models is not None:
        raise ValueError(f"--models does not apply to the linear environment {spec.env!r}")
    for agent in spec.agents:
        a = registry.parse_agent(agent.name, spec.horizon, dict(agent.options))
        if family not in registry.AGENT_FAMILIES[a.name]:
            raise ValueError(f"--agents: {a.name} does not run on {family} environment {spec.env!r}")


def available_memory() -> int | None:
    """Bytes the run may use: the first device's limit on accelerators, else the host's
    available memory (``MemAvailable`` of /proc/meminfo); None when unknown."""
    import jax

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


def _tree_bytes(tree) -> int:
    import jax

    return int(sum(np.prod(x.shape) * np.dtype(x.dtype).itemsize for x in jax.tree_util.tree_leaves(tree)))


def estimate_memory(spec: SweepSpec) -> dict:
    """An estimate of a sweep's peak memory, from shapes only (``jax.eval_shape``: nothing is
    allocated): the instances (twice, for the builders' temporaries) plus one unit's
    trajectories (cells x instances x chunk seeds), each with its agent state and recorded
    curves, times 4 for the step's temporaries, plus a copy of the instance per seed. Returns ``{"instances", "unit", "total"}`` in
    bytes. It is an order-of-magnitude guard, not a measurement."""
    import jax

    from e2d_jax import registry
    from e2d_jax.simulate import instance_key

    build = registry._env_builder(env_spec(spec))

    def shapes(key):
        env, params = build(env_spec(spec), key)
        return params, env.model(params)

    params, model = jax.eval_shape(shapes, instance_key(0))
    inst = 2 * _tree_bytes(params) * len(spec.instance_seeds)
    unit = 0
    records = spec.horizon // spec.every + 1
    for entry in spec.agents:
        try:
            agent = registry.build_agent_factory(_agent_spec(spec, entry), model)()
            state = _tree_bytes(jax.eval_shape(agent.init, instance_key(0), model))
        except Exception:  # noqa: BLE001 - an agent that needs concrete values: count its curves only
            state = 0
        traj = entry.num_cells * len(spec.instance_seeds) * spec.chunk(entry)
        # every seed holds its own copy of its instance (``simulate.make_batched_rollout``)
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
            f"{gib(est['unit'])}) but {gib(available)} is available: use fewer actions or a smaller --d "
            f"(--arms, --models), fewer --instances, or fewer seeds per unit (--batch-size)")


def _agent_spec(spec: SweepSpec, entry):
    from e2d_jax import registry

    return registry.parse_agent(entry.name, spec.horizon, dict(entry.options))


def _progress(total: int, enabled):
    from tqdm.auto import tqdm

    disable = (not sys.stderr.isatty()) if enabled is None else not enabled
    return tqdm(total=total, unit="unit", disable=disable, dynamic_ncols=True)


def run_units(spec: SweepSpec, out: Path, digest: str, todo: list, *, progress=None, log=print) -> float:
    """Runs ``todo`` units and writes each one's chunk file; returns the seconds spent."""
    import jax

    from e2d_jax import registry
    from e2d_jax.simulate import simulate

    if not todo:
        return 0.0
    env, params = registry.build_instances(env_spec(spec), spec.instance_seeds)
    model = env.model(params)
    factories, agents = {}, {}
    t_start = time.perf_counter()
    bar = _progress(len(todo), progress)
    try:
        for unit in todo:
            if INTERRUPTED.is_set():
                raise KeyboardInterrupt
            entry = unit.agent
            if entry.label not in factories:
                factories[entry.label] = registry.build_agent_factory(_agent_spec(spec, entry), model)
                agents[entry.label] = None if entry.grid else factories[entry.label]()
            cells = entry.cells()
            sim = simulate(env, params, factories[entry.label] if cells else agents[entry.label],
                           horizon=spec.horizon, num_seeds=unit.count, seed=spec.seed, record_every=spec.every,
                           first_seed=unit.first, instances=True, hparams=cells or None)
            res = sim.result
            add_cell_axis = (lambda x: np.asarray(x)[None]) if not cells else np.asarray
            arrays = {
                "regret": add_cell_axis(res.regret), "action_counts": add_cell_axis(res.action_counts),
                "nonfinite_rounds": add_cell_axis(res.nonfinite_rounds),
                "solver_status_counts": add_cell_axis(res.solver.status_counts),
                "solver_gap_hist": add_cell_axis(res.solver.gap_hist),
                "rounds": sim.rounds, "seed_indices": sim.seed_indices,
                "compile_seconds": np.float64(sim.compile_seconds), "run_seconds": np.float64(sim.run_seconds),
                "unit_digest": np.str_(_unit_digest(digest, unit)), "uid": np.str_(unit.uid),
            }
            for field, value in res.info._asdict().items():
                arrays[f"info_{field}"] = add_cell_axis(value)
            storage.write_chunk(out, unit.uid, arrays)
            bar.update(1)
            bar.set_postfix_str(f"{entry.label} seeds {unit.first}-{unit.first + unit.count - 1}")
    finally:
        bar.close()
    del jax
    return time.perf_counter() - t_start


def run_sweep(spec: SweepSpec, out, *, resume: bool = False, overwrite: bool = False, progress=None,
              log=print, executor=None, part=None) -> dict:
    """Runs (or continues) a sweep into ``out`` and returns its summary (see the module doc).

    Args:
      executor: where the units run: an executor of ``e2d_jax.experiments.executors``, or its
        name (``"local"``, the default, or ``"ray"`` with a local Ray instance).
      part: ``(i, n)`` or ``"i/n"``: run only the i-th of n disjoint parts of the units (a
        part continues what is in ``out``, as ``resume`` does). When other parts' units are
        still missing, the tables are not written and the returned dict says
        ``{"complete": False, "units": ..., "units_done": ..., "ran": ...}``.
    """
    import jax

    from e2d_jax.experiments import executors

    out = Path(out)
    part = executors.parse_part(part)
    if executor is None or isinstance(executor, str):
        executor = executors.make_executor(executor or "local")
    check_spec(spec)
    check_memory(spec)
    digest = prepare_output(spec, out, resume=resume or part is not None, overwrite=overwrite)
    all_units = units(spec)
    done = lambda u: storage.read_chunk(out, u.uid, _unit_digest(digest, u)) is not None
    todo = [u for u in all_units if not done(u)]
    if len(todo) < len(all_units):
        log(f"{len(all_units) - len(todo)} of {len(all_units)} units already done in {out}; running "
            f"{len(executors.select_part(todo, all_units, part))}" + (f" (part {part[0]}/{part[1]})" if part else ""))
    mine = executors.select_part(todo, all_units, part)
    t0 = time.perf_counter()
    seconds = executor.run(spec, out, digest, mine, progress=progress, log=log)
    if INTERRUPTED.is_set():
        raise KeyboardInterrupt
    if part is not None:
        left = [u for u in todo if u not in mine and not done(u)]
        if left:
            return {"complete": False, "name": spec.name, "units": len(all_units),
                    "units_done": len(all_units) - len(left), "ran": len(mine), "part": list(part),
                    "wall_seconds_this_call": time.perf_counter() - t0}
    summary = collect(spec, out, digest)
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
    last ``--part`` of a job array) and returns the summary; SweepError when units are missing
    or the stored results are of other code."""
    import json

    out = Path(out)
    try:
        manifest = json.loads((out / storage.MANIFEST).read_text())
    except (OSError, ValueError):
        raise SweepError(f"{out} holds no sweep (no readable {storage.MANIFEST})") from None
    spec = SweepSpec.from_dict(manifest["spec"])
    digest = spec.digest(_code_id())
    if manifest.get("digest") != digest:
        raise SweepError(f"{out} holds results of code {manifest.get('code')}, this is {_code_id()}: collect them "
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


def collect(spec: SweepSpec, out, digest: str) -> dict:
    """Reads every chunk file into the table, the curves and the summary (and writes them)."""
    from e2d_jax.plotting import mean_ci95
    from e2d_jax.simulate import SolverStats, solver_summary

    out = Path(out)
    hp_names = sorted({k for a in spec.agents for k, _ in a.grid})
    cols = {"agent": [], "cell": [], **{f"hp_{k}": [] for k in hp_names}, "instance_seed": [], "seed": [],
            "final_regret": [], "valid": [], "nonfinite_rounds": [], "max_iter_rounds": [], "ok_rounds": [],
            "rel_gap_median": [], "rel_gap_p90": [], "action_counts": []}
    curves, rounds = [], None
    cells_summary = {}
    missing = []
    for entry in spec.agents:
        agent_units = [u for u in units(spec) if u.agent == entry]
        chunks = [storage.read_chunk(out, u.uid, _unit_digest(digest, u)) for u in agent_units]
        if any(c is None for c in chunks):
            missing.extend(u.uid for u, c in zip(agent_units, chunks) if c is None)
            continue
        cat = lambda key: np.concatenate([c[key] for c in chunks], axis=2)
        regret, counts, nonfinite = cat("regret"), cat("action_counts"), cat("nonfinite_rounds")
        stats = solver_summary(SolverStats(cat("solver_status_counts"), cat("solver_gap_hist")))
        status = cat("solver_status_counts")
        seeds = np.concatenate([c["seed_indices"] for c in chunks])
        rounds = chunks[0]["rounds"]
        run_s = float(sum(c["run_seconds"] for c in chunks))
        compile_s = float(max(c["compile_seconds"] for c in chunks))
        cells = entry.cells()
        n_cells = regret.shape[0]
        for h in range(n_cells):
            hp = {k: float(v[h]) for k, v in cells.items()}
            label = cell_label(entry.label, hp)
            final = regret[h, :, :, -1].astype(np.float64)  # (I, S)
            valid = nonfinite[h] == 0
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
                    cols["nonfinite_rounds"].append(int(nonfinite[h, i, s_pos]))
                    cols["max_iter_rounds"].append(int(stats["max_iter_rounds"][h, i, s_pos]))
                    cols["ok_rounds"].append(int(status[h, i, s_pos, 0]))
                    cols["rel_gap_median"].append(float(stats["rel_gap_median"][h, i, s_pos]))
                    cols["rel_gap_p90"].append(float(stats["rel_gap_p90"][h, i, s_pos]))
                    cols["action_counts"].append(counts[h, i, s_pos].astype(np.int64).tolist())
                curves.append(regret[h, i])
            vals = final[valid]
            mean, half = mean_ci95(vals) if vals.size else (np.nan, np.nan)
            inst_means = [float(final[i][valid[i]].mean()) if valid[i].any() else float("nan")
                          for i in range(final.shape[0])]
            with np.errstate(all="ignore"):
                gap_med = stats["rel_gap_median"][h]
                gap_p90 = stats["rel_gap_p90"][h]
                solver = {
                    "rounds_at_max_iter_fraction": float(stats["max_iter_rounds"][h].sum() / max(status[h].sum(), 1)),
                    "rel_gap_median_over_seeds": float(np.nanmedian(gap_med)) if np.isfinite(gap_med).any() else None,
                    "rel_gap_p90_median_over_seeds": float(np.nanmedian(gap_p90)) if np.isfinite(gap_p90).any() else None,
                    "rel_gap_p90_max_over_seeds": float(np.nanmax(gap_p90)) if np.isfinite(gap_p90).any() else None,
                }
            cells_summary[label] = {
                "agent": entry.label, "hyperparameters": hp,
                "final_regret_mean": float(mean), "final_regret_ci95": [float(mean - half), float(mean + half)],
                "final_regret_std": float(vals.std(ddof=1)) if vals.size > 1 else 0.0,
                "seeds": int(valid.sum()), "seeds_invalid": int((~valid).sum()),
                "instances": len(spec.instance_seeds), "instance_means": inst_means,
                "solver": solver,
                "compile_seconds": compile_s, "run_seconds": run_s / n_cells,
                "seed_rounds_per_second": float(regret[:, :, :, -1].size * spec.horizon / run_s) if run_s > 0 else None,
            }
    if missing:
        raise SweepError(f"{len(missing)} units have no results yet (e.g. {missing[0]}): run with --resume")
    storage.write_table(out, cols)
    n_rows = len(cols["agent"])
    regret_rows = np.concatenate([c for c in curves], axis=0) if curves else np.zeros((0, 0))
    storage.write_curves(out, rounds, regret_rows.astype(np.float32), np.arange(n_rows))
    return {
        "name": spec.name, "conventions": spec.conventions, "config": spec.to_dict(),
        "agents": cells_summary, "versions": versions(),
        "files": {"table": storage.TABLE, "curves": storage.CURVES},
    }
