"""What :func:`e2d_jax.simulate` returns: the runs' arrays and their tables.

:class:`Simulation` holds one agent's runs (a ``RolloutResult`` of NumPy arrays with leading
axes (H, I, S): hyperparameter cells when there are any, instances when there are any, seeds)
and answers the questions a researcher asks next::

    sim = e2d.simulate(params, e2d.anytime_e2d(), horizon=2000, num_seeds=1000, label="anytime-e2d")
    sim.summary()          # pandas DataFrame, one row per cell: mean final regret, 95% CI, seeds, solver
    sim.to_frame()         # one row per seed (the command line's results.parquet)

:class:`Tables` holds several simulations (agents) and makes the same tables for all of them;
:class:`e2d_jax.results.Results` adds their figures and files (``e2d.Results([sim_a,
sim_b]).plot()``, ``.save(directory)``). The command line's tables are made by the same
code, so a directory saved from Python and one written by ``e2d-jax run`` are read the same
way (``pandas.read_parquet``, ``e2d-jax plot``).

Summaries per cell (:meth:`Tables.cells`): the final regret's mean and 95% CI over the valid
seeds (pooled over instances), its spread over instances (median, IQR, and a CI of the mean
over instances), the valid and invalid seeds (a seed is invalid when a round was non-finite or
its action outside [0, K); :func:`~e2d_jax.sim.summaries.valid_seeds`), and the solver's
statistics over every round: the fraction of rounds *flagged* (status ``MAX_ITER``: the
certified gap exceeded the agent's solver tolerance) and quantiles of the certified relative
gap gap / |value|.
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np
import pandas as pd

from e2d_jax import _files
from e2d_jax.sim.rollout import RolloutResult, SolverStats
from e2d_jax.sim.summaries import hist_quantile, instance_summary, solver_summary
from e2d_jax.types import Status

#: Above this fraction of flagged rounds an agent's solver is worth a look: the command line
#: prints a warning line, and :func:`e2d_jax.simulate` and
#: :func:`e2d_jax.experiments.run_sweep` warn (:class:`FlaggedRoundsWarning`).
FLAGGED_WARNING = 0.05


class FlaggedRoundsWarning(UserWarning):
    """An agent's solver flagged more than ``FLAGGED_WARNING`` of its rounds (their certified
    gap exceeded its tolerance)."""


def flagged_agents(cells: dict) -> dict:
    """``{agent: flagged fraction}`` of the agents whose solver flagged more than
    ``FLAGGED_WARNING`` of their rounds, averaged over their cells (``cells``: what
    :meth:`Tables.cells` and ``summary.json``'s ``agents`` hold)."""
    by_agent: dict = {}
    for c in cells.values():
        fraction = (c.get("solver") or {}).get("flagged_fraction")
        if fraction is not None:
            by_agent.setdefault(c["agent"], []).append(fraction)
    return {a: float(np.mean(f)) for a, f in by_agent.items() if np.mean(f) > FLAGGED_WARNING}


def flagged_message(agent: str, fraction: float, advice: str | None) -> str:
    """The warning's words: how many rounds of ``agent`` are flagged and, where the caller has
    one, how to certify more of them."""
    return (f"{agent}: {fraction:.0%} of the rounds are flagged (certified gap above the solver's tolerance)"
            + (f"; {advice}" if advice else ""))


#: What a Python caller can change to certify more rounds.
PYTHON_ADVICE = ("a larger solver budget certifies more of them, e.g. solver=e2d_jax.dec.solvers.TRACKING"
                 ".replace(maxiter=400) for Anytime-E2D")


def warn_flagged(cells: dict, advice: str | None = PYTHON_ADVICE) -> None:
    """Warns (:class:`FlaggedRoundsWarning`) for each agent of ``cells`` whose solver flagged
    more than ``FLAGGED_WARNING`` of its rounds."""
    for agent, fraction in flagged_agents(cells).items():
        warnings.warn(flagged_message(agent, fraction, advice), FlaggedRoundsWarning, stacklevel=3)


def info_fields(info) -> dict:
    """An agent's per-round info as ``{field: array}``: a NamedTuple's fields or a dict's keys
    (what a sweep's chunk files hold), else the leaves' key paths (letters and digits joined by
    ``_``), so that ``diagnostics.npz`` names the same fields whichever door made it."""
    if hasattr(info, "_asdict") and all(hasattr(v, "shape") for v in info._asdict().values()):
        return dict(info._asdict())
    if isinstance(info, dict) and all(isinstance(k, str) and hasattr(v, "shape") for k, v in info.items()):
        return dict(info)
    out = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(info)[0]:
        name = "".join(ch if ch.isalnum() else "_" for ch in jax.tree_util.keystr(path)).strip("_") or "value"
        out[name] = leaf
    return out


def cell_label(agent_label: str, hp: dict) -> str:
    """The label of a hyperparameter cell, ``agent[name=value,...]`` (the agent's without hp)."""
    if not hp:
        return agent_label
    return agent_label + "[" + ",".join(f"{k}={v:g}" for k, v in sorted(hp.items())) + "]"


class Simulation(NamedTuple):
    """One agent's runs (see the module docstring), as NumPy arrays.

    Attributes:
      result: ``RolloutResult`` whose leaves have leading axes (H, I, S): hyperparameter cells
        (only with ``cells``), instances (only with ``instance_seeds``) and seeds.
      rounds: (R,) the recorded rounds (1-based).
      seed_indices: (S,) the seed indices that were run.
      compile_seconds: 0 when the compiled function came from the in-memory cache.
      run_seconds: the time the runs took (every cell and instance; one compiled call).
      label: the agent's name in tables and figures.
      cells: ``{hyperparameter: values (H,)}`` of the cells, or None without a cell axis.
      instance_seeds: (I,) the instances' seeds (or indices), or None without an instance axis.
      horizon: rounds n of every run.
      program: the compiled program that ran these runs, when it ran other agents' cells too
        (agents that differ only in numbers share one); None: this agent's own.
    """

    result: RolloutResult
    rounds: np.ndarray
    seed_indices: np.ndarray
    compile_seconds: float
    run_seconds: float
    label: str = "agent"
    cells: dict | None = None
    instance_seeds: tuple | None = None
    horizon: int | None = None
    program: str | None = None

    # -- the canonical (H, I, S, ...) view ------------------------------------------------
    def _expand(self, x) -> np.ndarray:
        x = np.asarray(x)
        if self.instance_seeds is None:
            x = x[None] if self.cells is None else x[:, None]
        if self.cells is None:
            x = x[None]
        return x

    @property
    def num_cells(self) -> int:
        return 1 if self.cells is None else len(next(iter(self.cells.values())))

    def cell_hparams(self) -> list:
        """``[{name: value}]`` of every cell (``[{}]`` without cells)."""
        if self.cells is None:
            return [{}]
        return [{k: float(np.asarray(v)[h]) for k, v in self.cells.items()} for h in range(self.num_cells)]

    @property
    def final_regret(self) -> np.ndarray:
        """The final regret of every run, with the leading axes of ``result``."""
        return np.asarray(self.result.regret)[..., -1]

    # -- what a researcher asks for --------------------------------------------------------
    def summary(self) -> pd.DataFrame:
        """One row per cell (see :meth:`Tables.summary`)."""
        return Tables([self]).summary()

    def to_frame(self) -> pd.DataFrame:
        """One row per (cell, instance, seed) (see :meth:`Tables.to_frame`)."""
        return Tables([self]).to_frame()


def concatenate(parts: list) -> Simulation:
    """Simulations of the same agent on consecutive seed ranges as one (seeds joined; run times
    added, the largest compile time kept)."""
    first = parts[0]
    if len(parts) == 1:
        return first
    seed_axis = (first.cells is not None) + (first.instance_seeds is not None)
    result = _tree_concat([p.result for p in parts], seed_axis)
    return first._replace(result=result, seed_indices=np.concatenate([p.seed_indices for p in parts]),
                          compile_seconds=max(p.compile_seconds for p in parts),
                          run_seconds=sum(p.run_seconds for p in parts))


def _tree_concat(trees, axis):
    return jax.tree_util.tree_map(lambda *xs: np.concatenate([np.asarray(x) for x in xs], axis=axis), *trees)


class Tables:
    """Several simulations (agents), answered together: their tables and ``summary.json``'s
    statistics (:class:`e2d_jax.results.Results` adds figures and files).

    Args:
      simulations: :class:`Simulation` objects (their labels name them; each label once), a
        ``{label: Simulation}`` mapping (the keys replace the labels), or one Simulation.
      name: the results' name (in figures' titles and ``summary.json``).
      config: what produced them (written to ``summary.json``; the command line's sweep spec).
    """

    def __init__(self, simulations, *, name: str = "simulation", config: dict | None = None):
        if isinstance(simulations, Simulation):
            simulations = [simulations]
        if isinstance(simulations, dict):
            simulations = [s._replace(label=str(k)) for k, s in simulations.items()]
        sims = list(simulations)
        if not sims or not all(isinstance(s, Simulation) for s in sims):
            raise ValueError("simulations must be a non-empty list (or dict) of e2d_jax Simulation objects, as "
                             "e2d_jax.simulate returns")
        labels = [s.label for s in sims]
        if len(set(labels)) != len(labels):
            raise ValueError(f"simulations: each needs its own label (simulate(..., label=...)), got {labels}")
        self.simulations = sims
        self.name = name
        self.config = dict(config or {})

    def __iter__(self):
        return iter(self.simulations)

    def __len__(self):
        return len(self.simulations)

    # -- tables ----------------------------------------------------------------------------
    def _hp_names(self) -> list:
        return sorted({k for s in self.simulations for k in (s.cells or {})})

    def columns(self) -> tuple[dict, np.ndarray, np.ndarray]:
        """``(columns, curves, rounds)``: the per-seed table as ``{column: list}``, the regret
        curves row-aligned with it (rows, R) and the recorded rounds."""
        hp_names = self._hp_names()
        cols = {"agent": [], "cell": [], **{f"hp_{k}": [] for k in hp_names}, "instance_seed": [], "seed": [],
                "final_regret": [], "valid": [], "invalid_rounds": [], "nonfinite_rounds": [],
                "invalid_action_rounds": [], "max_iter_rounds": [], "ok_rounds": [], "rel_gap_median": [],
                "rel_gap_p90": [], "action_counts": []}
        curves, rounds = [], None
        for sim in self.simulations:
            res = sim.result
            regret = sim._expand(res.regret)
            counts = sim._expand(res.action_counts)
            invalid = sim._expand(res.invalid_rounds)
            status = sim._expand(res.solver.status_counts)
            stats = solver_summary(SolverStats(status, sim._expand(res.solver.gap_hist)))
            n_h, n_i, n_s = regret.shape[:3]
            inst = list(sim.instance_seeds) if sim.instance_seeds is not None else [0]
            seeds = np.asarray(sim.seed_indices)
            rounds = np.asarray(sim.rounds) if rounds is None else rounds
            final = regret[..., -1].astype(np.float64)
            for h, hp in enumerate(sim.cell_hparams()):
                label = cell_label(sim.label, hp)
                rows = n_i * n_s
                cols["agent"] += [sim.label] * rows
                cols["cell"] += [label] * rows
                for k in hp_names:
                    cols[f"hp_{k}"] += [hp.get(k, np.nan)] * rows
                cols["instance_seed"] += [int(inst[i]) for i in range(n_i) for _ in range(n_s)]
                cols["seed"] += [int(s) for _ in range(n_i) for s in seeds]
                cols["final_regret"] += final[h].reshape(-1).tolist()
                cols["valid"] += (invalid[h] == 0).reshape(-1).tolist()
                cols["invalid_rounds"] += invalid[h].reshape(-1).astype(int).tolist()
                cols["nonfinite_rounds"] += stats["nonfinite_rounds"][h].reshape(-1).astype(int).tolist()
                cols["invalid_action_rounds"] += stats["invalid_action_rounds"][h].reshape(-1).astype(int).tolist()
                cols["max_iter_rounds"] += stats["max_iter_rounds"][h].reshape(-1).astype(int).tolist()
                cols["ok_rounds"] += status[h, ..., Status.OK].reshape(-1).astype(int).tolist()
                cols["rel_gap_median"] += stats["rel_gap_median"][h].reshape(-1).tolist()
                cols["rel_gap_p90"] += stats["rel_gap_p90"][h].reshape(-1).tolist()
                cols["action_counts"] += counts[h].reshape(n_i * n_s, -1).astype(np.int64).tolist()
                curves.append(regret[h].reshape(n_i * n_s, -1))
        regret_rows = np.concatenate(curves, axis=0) if curves else np.zeros((0, 0))
        return cols, regret_rows.astype(np.float32), rounds

    def cells(self) -> dict:
        """``{cell label: statistics}`` (what ``summary.json`` holds per cell; strict JSON:
        a statistic over no valid seed is None)."""
        out = {}
        for sim in self.simulations:
            res = sim.result
            regret = sim._expand(res.regret)
            invalid = sim._expand(res.invalid_rounds)
            status = sim._expand(res.solver.status_counts)
            hist = sim._expand(res.solver.gap_hist)
            stats = solver_summary(SolverStats(status, hist))
            n_h, n_i, n_s = regret.shape[:3]
            trajectories = n_h * n_i * n_s
            rate = (trajectories * (sim.horizon or 0) / sim.run_seconds
                    if sim.run_seconds and sim.horizon else None)
            for h, hp in enumerate(sim.cell_hparams()):
                final = regret[h, :, :, -1].astype(np.float64)
                valid = invalid[h] == 0
                summary = instance_summary(final, valid)
                vals = final[valid]
                pooled = hist[h].reshape(-1, hist.shape[-1]).sum(0)
                rounds_total = int(status[h].sum())
                with np.errstate(all="ignore"):
                    p90 = stats["rel_gap_p90"][h]
                    flagged = int(stats["max_iter_rounds"][h].sum())
                    certified = pooled.sum() > 0 or flagged > 0  # agents without a certificate: None
                    solver = {
                        "flagged_fraction": float(flagged / max(rounds_total, 1)) if certified else None,
                        "rel_gap_p50": float(hist_quantile(pooled, 0.5)),
                        "rel_gap_p90": float(hist_quantile(pooled, 0.9)),
                        "rel_gap_p99": float(hist_quantile(pooled, 0.99)),
                        "rel_gap_p90_max_over_seeds": float(np.nanmax(p90)) if np.isfinite(p90).any() else None,
                    }
                reasons = {"nonfinite": int((stats["nonfinite_rounds"][h] > 0).sum()),
                           "invalid_action": int((stats["invalid_action_rounds"][h] > 0).sum())}
                out[cell_label(sim.label, hp)] = _files.finite_or_none({
                    "agent": sim.label, "program": sim.program or sim.label, "hyperparameters": hp,
                    "final_regret_mean": summary["pooled_mean"], "final_regret_ci95": summary["pooled_ci95"],
                    "final_regret_std": float(vals.std(ddof=1)) if vals.size > 1 else 0.0 if vals.size else None,
                    "seeds": int(valid.sum()), "seeds_per_instance": int(n_s), "instances": int(n_i),
                    "seeds_invalid": int((~valid).sum()), "invalid_reasons": reasons,
                    "instance_means": summary["instance_means"], "instance_ci95": summary["instance_ci95"],
                    "instance_valid_seeds": summary["seeds"],
                    "over_instances": {"median": summary["median"], "iqr": summary["iqr"],
                                       "mean": summary["mean_over_instances"],
                                       "ci95": summary["ci95_over_instances"]},
                    "solver": solver,
                    "compile_seconds": float(sim.compile_seconds),
                    "seed_rounds_per_second": rate,
                })
        return out

    def summary(self) -> pd.DataFrame:
        """One row per cell: ``agent``, ``cell``, the hyperparameters (``hp_*``), the mean final
        regret with its 95% CI (``ci95_low``, ``ci95_high``) and std, ``seeds`` (valid),
        ``seeds_invalid``, ``instances``, the median and IQR over instances, and the solver's
        ``flagged_fraction`` and relative-gap quantiles ``rel_gap_p50`` / ``p90`` / ``p99``
        (NaN for agents that certify no gap, e.g. UCB and TS), compile seconds and seed-rounds per second
        of the cell's compiled call."""
        rows = []
        hp_names = self._hp_names()
        for label, c in self.cells().items():
            none = lambda x: np.nan if x is None else x  # noqa: E731
            ci = c["final_regret_ci95"] or [None, None]
            iqr = c["over_instances"]["iqr"] or [None, None]
            rows.append({
                "agent": c["agent"], "cell": label,
                **{f"hp_{k}": c["hyperparameters"].get(k, np.nan) for k in hp_names},
                "final_regret_mean": none(c["final_regret_mean"]), "ci95_low": none(ci[0]),
                "ci95_high": none(ci[1]), "final_regret_std": none(c["final_regret_std"]),
                "seeds": c["seeds"], "seeds_invalid": c["seeds_invalid"], "instances": c["instances"],
                "median_over_instances": none(c["over_instances"]["median"]), "iqr_low": none(iqr[0]),
                "iqr_high": none(iqr[1]),
                "flagged_fraction": none(c["solver"]["flagged_fraction"]),
                "rel_gap_p50": none(c["solver"]["rel_gap_p50"]), "rel_gap_p90": none(c["solver"]["rel_gap_p90"]),
                "rel_gap_p99": none(c["solver"]["rel_gap_p99"]),
                "compile_seconds": c["compile_seconds"], "seed_rounds_per_second": none(c["seed_rounds_per_second"]),
            })
        return pd.DataFrame(rows)

    def to_frame(self) -> pd.DataFrame:
        """One row per (agent, cell, instance, seed): the final regret, validity, the rounds per
        status, the seed's median and 90th-percentile certified relative gap (upper bin edges)
        and the action counts; the columns of ``results.parquet``."""
        cols, _, _ = self.columns()
        return pd.DataFrame(cols)

    # -- files -------------------------------------------------------------------------------
    def summary_json(self, *, name: str | None = None, extra: dict | None = None) -> dict:
        """What ``summary.json`` holds: the name, the configuration and every cell's statistics."""
        first = self.simulations[0]
        config = {"horizon": first.horizon, "seeds": int(len(first.seed_indices)),
                  "instance_seeds": list(first.instance_seeds) if first.instance_seeds is not None else [0],
                  **self.config}
        return {"name": name or self.name, "conventions": config.get("conventions"), "config": config,
                "agents": self.cells(), "files": {"table": _files.TABLE, "curves": _files.CURVES}, **(extra or {})}

    def save_tables(self, directory, *, name: str | None = None, diagnostics: bool = False,
                    extra: dict | None = None) -> Path:
        """Writes ``results.parquet``, ``curves.npz`` and ``summary.json`` into ``directory``
        (atomically; see :mod:`e2d_jax._files`), and with ``diagnostics`` every agent's
        per-round info at the recorded rounds to ``diagnostics.npz``. Returns the directory."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        cols, curves, rounds = self.columns()
        _files.write_table(out, cols)
        _files.write_curves(out, rounds, curves)
        if diagnostics:
            _files.write_npz(out / _files.DIAGNOSTICS, self.diagnostics())
        _files.write_json(out / _files.SUMMARY, self.summary_json(name=name, extra=extra))
        return out

    def diagnostics(self) -> dict:
        """``{"<cell label>/<info field>": (I, S, R) array}``: each agent's per-round info at the
        recorded rounds (fields of a NamedTuple info, or the leaves' paths)."""
        out = {}
        for sim in self.simulations:
            for field, value in info_fields(sim.result.info).items():
                arr = sim._expand(value)
                for h, hp in enumerate(sim.cell_hparams()):
                    out[f"{cell_label(sim.label, hp)}/{field}"] = arr[h]
        return out
