"""Regret curves: mean over seeds with a 95% confidence band."""
from __future__ import annotations

import numpy as np


def mean_ci95(values: np.ndarray, axis: int = 0):
    """Mean and normal-approximation 95% CI half-width (1.96 standard errors) along ``axis``."""
    values = np.asarray(values, dtype=np.float64)
    n = values.shape[axis]
    mean = values.mean(axis=axis)
    if n < 2:
        return mean, np.zeros_like(mean)
    sem = values.std(axis=axis, ddof=1) / np.sqrt(n)
    return mean, 1.96 * sem


def plot_regret(curves: dict, path=None, *, title: str | None = None):
    """Plots cumulative regret against rounds (mean with a 95% band per curve).

    Uses a bare ``matplotlib.figure.Figure`` (no pyplot), so it neither switches the
    backend of a notebook nor needs a display.

    Args:
      curves: ``{label: (rounds (R,), regret (S, R))}``.
      path: optional PNG file to write.
      title: optional title.

    Returns:
      the ``matplotlib.figure.Figure`` (a notebook displays it).
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2), dpi=120)
    ax = fig.subplots()
    for label, (rounds, regret) in curves.items():
        if np.shape(regret)[0] == 0:
            continue  # no valid seed: nothing to draw (the summary says so)
        mean, half = mean_ci95(regret)
        (line,) = ax.plot(rounds, mean, label=f"{label} ({regret.shape[0]} seeds)")
        ax.fill_between(rounds, mean - half, mean + half, color=line.get_color(), alpha=0.2, lw=0)
    ax.set_xlabel("round t")
    ax.set_ylabel("cumulative pseudo-regret")
    return _finish(fig, ax, title, path, legend=8, fmt="png")


def _finish(fig, ax, title, path, *, legend=None, fmt=None):
    """Title, grid, legend, layout; writes ``path`` if given; returns the figure."""
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, axis="both" if legend else "y")
    if legend:
        ax.legend(fontsize=legend)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, format=fmt)
    return fig


def _curves_by_cell(table, curves):
    """``{cell label: (rounds, regret (S, R))}`` from a results table and its curves (valid seeds)."""
    out = {}
    regret = curves["regret"]
    for label in dict.fromkeys(table["cell"]):
        rows = np.asarray((table["cell"] == label) & table["valid"])
        out[label] = (curves["rounds"], regret[rows])
    return out


def plot_results(out, path=None, *, title: str | None = None):
    """Mean cumulative regret with 95% bands per cell, from a results directory."""
    from e2d_jax.experiments.storage import read_curves, read_table

    return plot_regret(_curves_by_cell(read_table(out), read_curves(out)), path, title=title)


def plot_figure1(dirs: dict, path=None):
    """The paper's Figure 1: one panel per experiment (``{title: results dir}``), mean
    cumulative regret with 95% bands per agent. Writes PNG or PDF by ``path``'s suffix."""
    from matplotlib.figure import Figure

    from e2d_jax.experiments.storage import read_curves, read_table

    fig = Figure(figsize=(11, 4.2), dpi=120)
    axes = fig.subplots(1, len(dirs), squeeze=False)[0]
    tables = {title: read_table(out) for title, out in dirs.items()}
    # One colour per agent across the panels.
    labels = list(dict.fromkeys(label for t in tables.values() for label in t["cell"]))
    colours = {label: f"C{i % 10}" for i, label in enumerate(labels)}
    for ax, (title, out) in zip(axes, dirs.items()):
        table = tables[title]
        for label, (rounds, regret) in _curves_by_cell(table, read_curves(out)).items():
            if regret.shape[0] == 0:
                continue
            mean, half = mean_ci95(regret)
            ax.plot(rounds, mean, label=label, color=colours[label])
            ax.fill_between(rounds, mean - half, mean + half, color=colours[label], alpha=0.2, lw=0)
        seeds = int(table.groupby("cell")["valid"].sum().min())
        ax.set_title(f"{title} ({seeds} seeds)", fontsize=10)
        ax.set_xlabel("round t")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("cumulative pseudo-regret")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig


def plot_final_distribution(out, path=None, *, title: str | None = None):
    """Distribution of the final regret per cell (box plots over valid seeds)."""
    from matplotlib.figure import Figure

    from e2d_jax.experiments.storage import read_table

    table = read_table(out)
    labels = list(dict.fromkeys(table["cell"]))
    data = [table.loc[(table["cell"] == c) & table["valid"], "final_regret"].to_numpy() for c in labels]
    fig = Figure(figsize=(max(5.0, 0.9 * len(labels) + 2), 4.2), dpi=120)
    ax = fig.subplots()
    ax.boxplot(data, showmeans=True)
    ax.set_xticks(range(1, len(labels) + 1), labels, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("final cumulative pseudo-regret")
    return _finish(fig, ax, title, path)


def plot_hyperparameter(out, hparam: str, path=None, *, references=("ucb", "ts"), title: str | None = None):
    """Final regret against a hyperparameter (log x axis): per agent the median over instances
    of the instance means, a band between the instances' 25th and 75th percentiles, and the
    95% CI of the pooled mean; agents without the hyperparameter (e.g. UCB, TS) as
    horizontal references."""
    from matplotlib.figure import Figure

    from e2d_jax.experiments.storage import read_table

    table = read_table(out)
    col = f"hp_{hparam}"
    if col not in table:
        raise ValueError(f"no hyperparameter {hparam!r} in {out} (columns: {[c[3:] for c in table if c.startswith('hp_')]})")
    valid = table[table["valid"]]
    fig = Figure(figsize=(6.4, 4.2), dpi=120)
    ax = fig.subplots()
    for agent, rows in valid[valid[col].notna()].groupby("agent"):
        xs, med, lo, hi, ci_lo, ci_hi = [], [], [], [], [], []
        for x, g in rows.groupby(col):
            inst = g.groupby("instance_seed")["final_regret"].mean().to_numpy()
            mean, half = mean_ci95(g["final_regret"].to_numpy())
            xs.append(x)
            med.append(np.median(inst))
            lo.append(np.percentile(inst, 25))
            hi.append(np.percentile(inst, 75))
            ci_lo.append(mean - half)
            ci_hi.append(mean + half)
        (line,) = ax.plot(xs, med, "o-", label=f"{agent} (median over instances)")
        ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.15, lw=0)
        ax.errorbar(xs, (np.array(ci_lo) + np.array(ci_hi)) / 2, yerr=(np.array(ci_hi) - np.array(ci_lo)) / 2,
                    fmt="none", color=line.get_color(), alpha=0.6, capsize=2)
    for agent in references:
        rows = valid[(valid["agent"] == agent)]
        if len(rows):
            inst = rows.groupby("instance_seed")["final_regret"].mean().to_numpy()
            ax.axhline(np.median(inst), ls="--", lw=1, label=f"{agent} (median over instances)", color="gray" if agent == "ucb" else "k")
    ax.set_xscale("log")
    ax.set_xlabel(hparam)
    ax.set_ylabel("final cumulative pseudo-regret")
    return _finish(fig, ax, title, path, legend=7)


def plot_sensitivity(dirs: dict, path=None):
    """Final regret against each algorithm's hyperparameter over instances (issue: the claims).

    ``dirs``: ``{title: results directory of a sensitivity sweep}`` (one row of panels each;
    ``e2d_jax.experiments.presets.sensitivity``). Left panel: Anytime-E2D against c in
    eps_t^2 = c d / t; right: E2D against m in lambda = m sqrt(n / (4 log n)). Lines: the
    median over instances of the per-instance mean final regret; dark band: 95% CI of the
    mean over instances (bootstrap); light band: the quartiles over instances. UCB and TS are
    horizontal references (median, quartile band); the paper-text convention (Gaussian KL)
    at the default multiplier is drawn at its equivalent multiplier (c = 2, m = 1/2) as a
    diamond; the paper's mis-tuned E2D agents (exp1) as crosses at their m.
    """
    from matplotlib.figure import Figure

    from e2d_jax.agents.e2d import tune_lambda
    from e2d_jax.experiments import claims

    fig = Figure(figsize=(11, 3.9 * len(dirs)), dpi=110)
    axes = np.atleast_2d(fig.subplots(len(dirs), 2, squeeze=False))
    for row, (title, out) in enumerate(dirs.items()):
        table, summary = claims.load(out)
        n = summary["config"]["horizon"]
        agents = {c["agent"] for c in summary["agents"].values()}
        for ax, (agent, hp, xlabel, kl_x) in zip(axes[row], (
                ("anytime-e2d", "eps2_scale", "c in $\\epsilon_t^2 = c\\,d/t$", 2.0),
                (f"e2d-n{n}", "lam_scale", "m in $\\lambda = m\\sqrt{n/(4\\log n)}$", 0.5))):
            s = claims.sensitivity(table, agent, hp)
            (line,) = ax.plot(s["value"], s["median"], "o-", label=f"{agent} (median over {s['instances'][0]} instances)")
            ax.fill_between(s["value"], s["ci_lo"], s["ci_hi"], color=line.get_color(), alpha=0.35, lw=0)
            ax.fill_between(s["value"], s["q25"], s["q75"], color=line.get_color(), alpha=0.12, lw=0)
            kl = f"{agent}-kl"
            if kl in agents:
                r = claims.reference(table, kl)
                ax.errorbar([kl_x], [r["median"]], yerr=[[r["median"] - r["q25"]], [r["q75"] - r["median"]]],
                            fmt="D", color="black", ms=5, label=f"{kl} (paper-text convention)")
            if agent.startswith("e2d-n"):
                for other in sorted((a for a in agents if a.startswith("e2d-n") and not a.endswith("-kl")
                                     and a != agent), key=lambda a: int(a[len("e2d-n"):])):
                    m = tune_lambda(int(other[len("e2d-n"):])) / tune_lambda(n)
                    r = claims.reference(table, other)
                    ax.plot([m], [r["median"]], "x", ms=8, mew=2, label=f"{other} (m = {m:.2f})")
            for ref, colour in (("ucb", "tab:gray"), ("ts", "tab:brown")):
                if ref in agents:
                    r = claims.reference(table, ref)
                    ax.axhline(r["median"], color=colour, ls="--", lw=1, label=f"{ref.upper()} (median)")
                    ax.axhspan(r["q25"], r["q75"], color=colour, alpha=0.08, lw=0)
            ax.set_xscale("log")
            ax.set_xlabel(xlabel)
            ax.set_ylabel("final regret")
            _finish(fig, ax, title, None, legend=7)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig
