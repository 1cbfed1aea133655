"""Results in hand: simulations' tables, figures and files, the same from Python and the command line.

:class:`Results` holds one or several simulations (agents; :func:`e2d_jax.simulate` returns
one) and answers what a researcher asks next::

    results = e2d.Results([sim_a, sim_b])
    results.summary()             # one row per cell: mean final regret, 95% CI, seeds, solver
    results.to_frame()            # one row per seed (the command line's results.parquet)
    results.plot()                # mean regret with 95% CI bands per cell (a matplotlib Figure)
    results.save("runs/mine")     # the command line's files *and* figures

A directory saved here and one written by ``e2d-jax run`` hold the same files, made by the same
code: ``results.parquet``, ``curves.npz``, ``summary.json`` and the figures ``regret``,
``final_regret`` and ``regret_vs_<hyperparameter>`` as PDF and PNG (:func:`figures`, which
``e2d-jax plot`` also draws from what is on disk).
"""
from __future__ import annotations

from pathlib import Path

from e2d_jax import _files, plotting
from e2d_jax.plotting import Figure
from e2d_jax.sim.results import Tables


def title_of(summary: dict) -> str:
    """``name: env, d=.., K=.., n=.., S seeds × I instances[, conventions]`` (the parts the summary
    has: results saved from Python name no environment)."""
    cfg = summary["config"]
    dims = ", ".join(f"{k}={cfg.get(f)}" for k, f in (("d", "d"), ("K", "arms"), ("M", "models"))
                     if cfg.get(f) is not None)
    inst = len(cfg.get("instance_seeds", [0]))
    count = f"{cfg['seeds']} seeds" + (f" × {inst} instances" if inst > 1 else "")
    conv = f", {summary['conventions']} conventions" if summary.get("conventions") else ""
    parts = [cfg.get("env"), dims, f"n={cfg['horizon']}" if cfg.get("horizon") else None, count]
    return f"{summary['name']}: " + ", ".join(p for p in parts if p) + conv


def figures(table, curves: dict, summary: dict) -> dict:
    """Every figure of a set of results: ``{file stem: Figure}`` from the per-seed table, its
    curves (``{"rounds", "regret"}``, rows aligned with the table) and the summary
    (``summary.json``'s content). Every cell has its own colour and name
    (:func:`e2d_jax.plotting.cell_colours`, :func:`e2d_jax.plotting.cell_names`); a cell
    without a valid seed is named in the figures ("no valid seeds") instead of being drawn."""
    hparams = sorted({k for c in summary["agents"].values() for k in c["hyperparameters"]})
    return plotting.results_figures(table, curves, title=title_of(summary),
                                    instances=len(summary["config"].get("instance_seeds", [0])), hparams=hparams)


class Results(Tables):
    """Several simulations (agents), answered together: tables, figures and files.

    Args:
      simulations: :class:`~e2d_jax.sim.results.Simulation` objects (their labels name them;
        each label once), a ``{label: Simulation}`` mapping (the keys replace the labels), or
        one Simulation.
      name: the results' name (in figures' titles and ``summary.json``).
      config: what produced them (written to ``summary.json``; the command line's sweep spec).
    """

    def _title(self, title):
        return self.figure_title() if title is None else title

    def figure_title(self) -> str:
        """The title of the figures (:func:`title_of` the summary)."""
        return title_of(self.summary_json())

    def plot(self, title: str | None = None) -> Figure:
        """Mean cumulative regret with 95% CI bands per cell over its valid runs (the command
        line's ``regret`` figure)."""
        _, curves, rounds = self.columns()
        return plotting.regret_figure(self.to_frame(), {"rounds": rounds, "regret": curves},
                                      title=self._title(title), instances=self._instances())

    def plot_final(self, title: str | None = None) -> Figure:
        """The distribution of the final regret per cell (the command line's ``final_regret``
        figure)."""
        return plotting.plot_final_distribution(self.to_frame(), title=self._title(title))

    def figures(self) -> dict:
        """``{file stem: Figure}``: the figures the command line draws (:func:`figures`)."""
        _, curves, rounds = self.columns()
        return figures(self.to_frame(), {"rounds": rounds, "regret": curves}, self.summary_json())

    def _instances(self) -> int:
        return max(len(s.instance_seeds) if s.instance_seeds is not None else 1 for s in self.simulations)

    def save(self, directory, *, name: str | None = None, diagnostics: bool = False, extra: dict | None = None,
             draw: bool = True) -> Path:
        """Writes ``results.parquet``, ``curves.npz`` and ``summary.json`` into ``directory``
        (atomically; see :mod:`e2d_jax._files`), with ``diagnostics`` every agent's per-round
        info at the recorded rounds to ``diagnostics.npz``, and with ``draw`` (default) the
        figures the command line draws (:func:`figures`, PDF and PNG), so that
        ``pandas.read_parquet`` and ``e2d-jax plot directory`` read it as they read the command
        line's. Returns the directory."""
        out = self.save_tables(directory, name=name, diagnostics=diagnostics, extra=extra)
        if draw:
            _, curves, rounds = self.columns()
            summary = self.summary_json(name=name, extra=extra)
            for stem, fig in figures(self.to_frame(), {"rounds": rounds, "regret": curves}, summary).items():
                plotting.save(fig, out / stem, write=_files.atomic_write)
        return out
