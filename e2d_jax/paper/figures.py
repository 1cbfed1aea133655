"""The paper's figures from stored results: Figure 1, its final regrets as a table, and the
sensitivity figure.

They read sweep directories (``results.parquet``, ``curves.npz``, ``summary.json``); the
figures are bare matplotlib figures (:func:`e2d_jax.plotting.save` writes them as PDF and
PNG), the table is Markdown text.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from e2d_jax.agents.e2d_linear import horizon_lambda
from e2d_jax.experiments import storage
from e2d_jax.paper import claims
from e2d_jax.plotting import Figure, curves_by_cell, label_colours, log_ticks
from e2d_jax.sim.summaries import mean_ci95


def plot_figure1(dirs: dict) -> Figure:
    """The paper's Figure 1: one panel per experiment (``{title: results dir}``), mean
    cumulative regret with its 95% CI band over seeds per agent."""
    fig = Figure(figsize=(11, 4.4), dpi=100)
    axes = fig.subplots(1, len(dirs), squeeze=False)[0]
    tables = {title: storage.read_table(out) for title, out in dirs.items()}
    # One colour per agent across the panels.
    colours = label_colours([cell for table in tables.values() for cell in table["cell"]])
    for ax, (title, out) in zip(axes, dirs.items()):
        table = tables[title]
        for label, (rounds, regret) in curves_by_cell(table, storage.read_curves(out)).items():
            if regret.shape[0] == 0:
                continue
            mean, half = mean_ci95(regret)
            colour = colours[label]
            ax.plot(rounds, mean, label=label, color=colour, lw=1.6)
            ax.fill_between(rounds, mean - half, mean + half, color=colour, alpha=0.2, lw=0)
        seeds = int(table.groupby("cell")["valid"].sum().min())
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("round t")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7.5, title=f"mean ± 95% CI over {seeds} seeds", title_fontsize=7.5)
    axes[0].set_ylabel("cumulative pseudo-regret")
    fig.tight_layout()
    return fig


def final_regret_table(dirs: dict) -> str:
    """Figure 1's final pseudo-regrets as a Markdown table: mean [95% CI] over the valid seeds,
    one column per results directory (``{column title: results dir}``, e.g. the two
    experiments of ``e2d-jax reproduce all``) and one row per agent, in the order the
    directories' ``summary.json`` list them.

    A cell is ``—`` where a directory has no such agent, and ends in ``(k valid)`` where seeds
    were left out of the mean (non-finite decisions or invalid actions). With several
    hyperparameter cells or instances the figures are the pooled ones of ``summary.json``.

    Returns:
      The table, one line per row, ending in a newline.
    """
    columns = {}
    for title, out in dirs.items():
        path = Path(out) / storage.SUMMARY
        if not path.is_file():
            raise ValueError(f"dirs[{title!r}]: {out} has no {storage.SUMMARY} (not a finished results directory)")
        columns[title] = json.loads(path.read_text())["agents"]
    agents = list(dict.fromkeys(label for cells in columns.values() for label in cells))
    lines = ["| agent | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for label in agents:
        lines.append(f"| {label} | " + " | ".join(_final_regret(cells.get(label)) for cells in columns.values()) + " |")
    return "\n".join(lines) + "\n"


def _final_regret(cell: dict | None) -> str:
    if cell is None:
        return "—"
    lo, hi = cell["final_regret_ci95"]
    text = f"{cell['final_regret_mean']:.1f} [{lo:.1f}, {hi:.1f}]"
    return text + (f" ({cell['seeds']} valid)" if cell.get("seeds_invalid") else "")


def plot_sensitivity(dirs: dict) -> Figure:
    """Final regret against each algorithm's hyperparameter over instances.

    ``dirs``: ``{title: results directory of a sensitivity sweep}`` (one row of panels each;
    :func:`e2d_jax.paper.presets.sensitivity`). Left panel: Anytime-E2D against c in
    eps_t^2 = c d / t; right: E2D against m in lambda = m sqrt(n / (4 log n)). Lines: the
    median over instances of the per-instance mean final regret; dark band: 95% CI of the
    mean over instances (bootstrap); light band: the interquartile range over instances. UCB
    and TS are horizontal references (median, quartile band); the paper-text convention
    (Gaussian KL) at the default multiplier is drawn at its equivalent multiplier (c = 2,
    m = 1/2) as a diamond; E2D tuned for the paper's other horizons (Experiment 1) as crosses
    at their m.
    """
    fig = Figure(figsize=(11, 4.1 * len(dirs)), dpi=100)
    axes = np.atleast_2d(fig.subplots(len(dirs), 2, squeeze=False))
    for row, (title, out) in enumerate(dirs.items()):
        table, summary = claims.load(out)
        agents = {c["agent"] for c in summary["agents"].values()}
        # E2D's grid over m: the agent tuned for the sweep's own horizon (the other tunings are
        # single cells), whatever horizon the sweep was resized to.
        tuned = claims.grid_agent(table, "lam_scale", prefix="e2d-n")
        n = int(tuned[len("e2d-n"):])
        agent_colour = label_colours([c["agent"] for c in summary["agents"].values()]).get
        for ax, (agent, hp, xlabel, kl_x) in zip(axes[row], (
                ("anytime-e2d", "eps2_scale", "c in $\\epsilon_t^2 = c\\,d/t$", 2.0),
                (tuned, "lam_scale", "m in $\\lambda = m\\sqrt{n/(4\\log n)}$", 0.5))):
            s = claims.sensitivity(table, agent, hp)
            colour = agent_colour(agent)
            ax.plot(s["value"], s["median"], "o-", color=colour,
                    label=f"{agent}: median over {s['instances'][0]} instances")
            ax.fill_between(s["value"], s["ci_lo"], s["ci_hi"], color=colour, alpha=0.35, lw=0,
                            label="95% CI of the mean over instances")
            ax.fill_between(s["value"], s["q25"], s["q75"], color=colour, alpha=0.12, lw=0,
                            label="IQR over instances")
            kl = f"{agent}-kl"
            if kl in agents:
                r = claims.reference(table, kl)
                ax.errorbar([kl_x], [r["median"]], yerr=[[r["median"] - r["q25"]], [r["q75"] - r["median"]]],
                            fmt="D", color="black", ms=5, label=f"{kl} (paper-text convention; median, IQR)")
            if agent.startswith("e2d-n"):
                for other in sorted((a for a in agents if a.startswith("e2d-n") and not a.endswith("-kl")
                                     and a != agent), key=lambda a: int(a[len("e2d-n"):])):
                    m = horizon_lambda(int(other[len("e2d-n"):])) / horizon_lambda(n)
                    r = claims.reference(table, other)
                    ax.plot([m], [r["median"]], "x", ms=8, mew=2, color=agent_colour(other),
                            label=f"{other} (m = {m:.2f}; median)")
            for ref in ("ucb", "ts"):
                if ref in agents:
                    r = claims.reference(table, ref)
                    ax.axhline(r["median"], color=agent_colour(ref), ls="--", lw=1,
                               label=f"{ref.upper()} (median, IQR band)")
                    ax.axhspan(r["q25"], r["q75"], color=agent_colour(ref), alpha=0.08, lw=0)
            ax.set_xscale("log")
            log_ticks(ax, s["value"].to_numpy())
            ax.set_xlabel(xlabel)
            ax.set_ylabel("final regret")
            ax.set_title(title, fontsize=10)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=6.5)
    fig.tight_layout()
    return fig
