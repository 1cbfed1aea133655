"""Figures from arrays and tables: regret curves, final-regret distributions, and final regret
against a hyperparameter.

Every function takes NumPy arrays or a results table (``pandas.read_parquet`` of a sweep's
``results.parquet``) and returns a :class:`Figure`: a ``matplotlib.figure.Figure`` drawn without
pyplot (a notebook's backend is left alone, nothing is shown by surprise) that Jupyter displays
as a PNG when it is a cell's value. :func:`save` writes a figure as
PDF and PNG. Every agent of a run has its own colour, the same in every figure of the run
(:func:`label_colours` of the run's agents, in their order), and the cells of an agent's
hyperparameter grid are shades of it, light to dark in the grid's order
(:func:`cell_colours`), named ``agent (name=value)`` (:func:`cell_names`). Every legend says
what its lines, bands and bars are, and a label with no valid run is named in the figure
("no valid seeds") instead of being drawn.
"""
from __future__ import annotations

import colorsys
import io
import textwrap
from pathlib import Path

import numpy as np
from matplotlib.colors import to_hex, to_rgb
from matplotlib import figure as _mpl_figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from e2d_jax._stats import mean_ci95

#: Resolution of the PNG files.
DPI = 200


class Figure(_mpl_figure.Figure):
    """A matplotlib ``Figure`` that Jupyter displays as a PNG when it is a cell's value, with
    or without pyplot's inline backend (the library never imports pyplot)."""

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png", bbox_inches="tight")
        return buf.getvalue()

#: What a figure says of a label without any valid run.
NO_VALID = "no valid seeds"

#: The colours labels take, in this order: mutually distinct hues and lightnesses (the
#: qualitative palette tab10, then darker and lighter companions that differ from all of it).
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#393b79", "#637939", "#e7ba52", "#7b4173", "#3182bd", "#31a354", "#000000", "#fd8d3c")
#: The colour each of the library's agents asks for first (E2D tuned for several horizons takes
#: the E2D colours in the order the labels come).
_PREFERRED = {"anytime-e2d": ("#1f77b4",), "ucb": ("#7f7f7f",), "ts": ("#8c564b",), "ts-finite": ("#bcbd22",),
              "ids": ("#2ca02c",), "ids-worst-case": ("#637939",),
              "e2d": ("#ff7f0e", "#d62728", "#9467bd", "#e377c2", "#fd8d3c", "#7b4173")}


def _base(label: str) -> str:
    base = label.split("[", 1)[0].split(" (", 1)[0]
    return "e2d" if base.startswith("e2d-n") or base.startswith("e2d@") else base


def label_colours(labels) -> dict:
    """``{label: colour}``: a distinct colour for every label of a figure or a run, each of the
    library's agents its own colour where it is free (Anytime-E2D blue, E2D orange and then the
    next E2D colours for further tunings, UCB grey, TS brown, IDS green), every other label the
    first colour of :data:`PALETTE` not yet taken. Beyond the palette's length colours repeat
    in a darker shade."""
    out, taken = {}, set()
    for label in dict.fromkeys(labels):
        colour = next((c for c in _PREFERRED.get(_base(label), ()) if c not in taken), None)
        if colour is None:
            colour = next((c for c in PALETTE if c not in taken), None)
        if colour is None:  # more labels than colours
            colour = shades(PALETTE[len(out) % len(PALETTE)], 3)[2]
        taken.add(colour)
        out[label] = colour
    return out


def agent_colour(label: str) -> str:
    """The colour of a label on its own (:func:`label_colours` of that label alone); a figure
    with several labels takes :func:`label_colours` of all of them."""
    return label_colours([label])[label]


def shades(colour: str, n: int) -> list:
    """``n`` colours of ``colour``'s hue, from light to dark (one colour: itself)."""
    if n == 1:
        return [colour]
    hue, _, saturation = colorsys.rgb_to_hls(*to_rgb(colour))
    return [to_hex(colorsys.hls_to_rgb(hue, lightness, saturation)) for lightness in np.linspace(0.68, 0.25, n)]


def _first_rows(table):
    """One row per cell (its first), in the table's order, with an ``agent`` column."""
    first = table.drop_duplicates("cell")
    return first if "agent" in first else first.assign(agent=first["cell"])


def cell_colours(table) -> dict:
    """``{cell: colour}`` of a results table's cells: every agent its own colour
    (:func:`label_colours` of the table's agents, in its order), the cells of an agent's grid
    shades of it, light to dark in the table's order."""
    first = _first_rows(table)
    agents = label_colours(first["agent"])
    out = {}
    for agent, colour in agents.items():
        cells = first.loc[first["agent"] == agent, "cell"]
        out.update(zip(cells, shades(colour, len(cells))))
    return out


def cell_names(table) -> dict:
    """``{cell: name}`` of a results table's cells as figures write them: the agent, and a grid
    cell's hyperparameters after it (``explore_then_commit (m=5)``)."""
    first = _first_rows(table)
    hps = [c for c in first.columns if c.startswith("hp_")]
    names = {}
    for _, row in first.iterrows():
        values = ", ".join(f"{c[3:]}={row[c]:g}" for c in hps if np.isfinite(row[c]))
        names[row["cell"]] = f"{row['agent']} ({values})" if values else row["agent"]
    return names


def _wrap(title: str | None, width: int) -> str | None:
    return None if title is None else "\n".join(textwrap.wrap(title, width=width, break_on_hyphens=False))


def _count(seeds: int, instances: int) -> str:
    return f"{seeds} seeds" if instances <= 1 else f"{seeds} seeds × {instances} instances"


def plot_regret(curves: dict, *, title: str | None = None, instances: int = 1, ylabel: str | None = None,
                colours: dict | None = None) -> Figure:
    """Cumulative regret against rounds: per curve the mean over runs with its 95% CI band.

    A label with no run (N = 0, e.g. every seed invalid) has a legend entry that says so.

    Args:
      curves: ``{label: (rounds (R,), regret (N, R))}``, N runs per label (seeds x instances).
      title: optional title (wrapped to the figure's width).
      instances: how many instances the N runs pool (for the legend's count).
      ylabel: the y axis' label (default: cumulative pseudo-regret).
      colours: ``{label: colour}`` (default: :func:`label_colours` of the labels).

    Returns:
      The figure.
    """
    fig = Figure(figsize=(6.4, 4.4), dpi=100)
    ax = fig.subplots()
    n_runs = 0
    colours = {**label_colours(curves), **(colours or {})}
    for label, (rounds, regret) in curves.items():
        regret = np.asarray(regret)
        colour = colours[label]
        if regret.shape[0] == 0:
            ax.plot([], [], ls="none", marker="x", color=colour, label=f"{label}: {NO_VALID}")
            continue
        n_runs = max(n_runs, regret.shape[0])
        mean, half = mean_ci95(regret)
        ax.plot(rounds, mean, color=colour, lw=1.6, label=label)
        ax.fill_between(rounds, mean - half, mean + half, color=colour, alpha=0.2, lw=0)
    ax.set_xlabel("round t")
    ax.set_ylabel(ylabel or "cumulative pseudo-regret")
    ax.grid(alpha=0.3)
    if n_runs:
        seeds = n_runs // max(1, instances)
        ax.legend(fontsize=8, title=f"mean ± 95% CI over {_count(seeds, instances)}", title_fontsize=8)
    elif curves:
        _nothing_drawn(ax)
        rounds = np.asarray(next(iter(curves.values()))[0])
        if rounds.size:
            ax.set_xlim(0, rounds.max())
        ax.legend(fontsize=8)
    if title:
        ax.set_title(_wrap(title, 70), fontsize=10)
    fig.tight_layout()
    return fig


def curves_by_cell(table, curves) -> dict:
    """``{cell label: (rounds, regret (N, R))}`` from a results table and its curves (the valid
    runs of each cell, in the table's order)."""
    out = {}
    regret = curves["regret"]
    for label in dict.fromkeys(table["cell"]):
        rows = np.asarray((table["cell"] == label) & table["valid"])
        out[label] = (curves["rounds"], regret[rows])
    return out


def regret_figure(table, curves, *, title: str | None = None, instances: int = 1) -> Figure:
    """:func:`plot_regret` of a results table and its curves (``{"rounds", "regret"}``, rows
    aligned with the table): every cell with its own colour and name (:func:`cell_colours`,
    :func:`cell_names`)."""
    names, colours = cell_names(table), cell_colours(table)
    by_cell = {names[cell]: runs for cell, runs in curves_by_cell(table, curves).items()}
    return plot_regret(by_cell, title=title, instances=instances,
                       colours={names[cell]: c for cell, c in colours.items()})


def results_figures(table, curves, *, title: str | None = None, instances: int = 1, hparams=()) -> dict:
    """The figures of a results table: ``{"regret": ..., "final_regret": ...,
    "regret_vs_<hp>": ... for each hyperparameter in hparams}``."""
    figs = {"regret": regret_figure(table, curves, title=title, instances=instances),
            "final_regret": plot_final_distribution(table, title=title)}
    for hp in hparams:
        figs[f"regret_vs_{hp}"] = plot_hyperparameter(table, hp, title=title)
    return figs


def _valid(table):
    return table[table["valid"]] if "valid" in table else table


def _nothing_drawn(ax):
    """An axes without any valid run: no regret ticks, and a note in its middle that says why."""
    ax.set_yticks([])
    ax.text(0.5, 0.5, f"{NO_VALID}: nothing to draw", transform=ax.transAxes, ha="center", va="center",
            fontsize=10, color="0.3")


def plot_final_distribution(table, *, title: str | None = None) -> Figure:
    """The final regret per cell: a box over the valid runs (box: quartiles, whiskers: 1.5 IQR,
    line: median) with the mean and its 95% CI as a point with a bar. Cells are rows, so long
    labels stay readable; each cell has its colour and name (:func:`cell_colours`,
    :func:`cell_names`), and a cell without a valid run keeps its row, which says so."""
    labels = list(dict.fromkeys(table["cell"]))
    colours, names = cell_colours(table), cell_names(table)
    table = _valid(table)
    data = [table.loc[table["cell"] == c, "final_regret"].to_numpy() for c in labels]
    # Constrained layout: the title sits right above the caption, with no band between them.
    fig = Figure(figsize=(6.4, max(2.6, 0.42 * len(labels) + 1.6)), dpi=100, layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(labels))[::-1]
    drawn = [i for i, vals in enumerate(data) if vals.size]
    if drawn:
        box = ax.boxplot([data[i] for i in drawn], positions=y[drawn], orientation="horizontal", widths=0.55,
                         showfliers=False, patch_artist=True, medianprops={"color": "black"})
        for patch, i in zip(box["boxes"], drawn):
            patch.set_facecolor(colours[labels[i]])
            patch.set_alpha(0.35)
    for yi, vals, label in zip(y, data, labels):
        if vals.size:
            mean, half = mean_ci95(vals)
            ax.errorbar([mean], [yi], xerr=[half], fmt="o", color=colours[label], ms=4, capsize=3)
        else:
            ax.text(0.02, yi, NO_VALID, transform=ax.get_yaxis_transform(), va="center", fontsize=8,
                    color="0.3", style="italic")
    ax.set_ylim(-0.6, len(labels) - 0.4)
    if not drawn:
        ax.set_xticks([])
    ax.set_yticks(y, [names[label] for label in labels], fontsize=8)
    ax.set_xlabel("final cumulative pseudo-regret")
    ax.grid(alpha=0.3, axis="x")
    inst = table["instance_seed"].nunique() if "instance_seed" in table else 1
    per = table.groupby("cell").size().min() if len(table) else 0
    seeds = int(per // max(1, inst))
    caption = (f"box: quartiles over {_count(seeds, inst)}, whiskers: 1.5 IQR; dot and bar: mean ± 95% CI" if drawn
               else f"{NO_VALID}: nothing to draw")
    ax.set_title(caption, fontsize=7.5, loc="left")
    if title:
        fig.suptitle(_wrap(title, 70), fontsize=10)
    return fig


def log_ticks(ax, values):
    """Ticks at every grid value of a log axis, labelled with the value itself."""
    values = np.unique(np.asarray(values, np.float64))
    ax.xaxis.set_major_locator(FixedLocator(values))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
    for label in ax.get_xticklabels():
        label.set_fontsize(8)
    if values.size > 6:
        ax.tick_params(axis="x", labelrotation=45)


def plot_hyperparameter(table, hparam: str, *, references=("ucb", "ts"), title: str | None = None) -> Figure:
    """Final regret against a hyperparameter (log x axis, a tick at every grid value).

    Per agent: the median over instances of the per-instance mean final regret (line and
    dots), the interquartile range over instances (band) and the 95% CI of the mean over all
    valid runs (bars). Agents without the hyperparameter in ``references`` are drawn as
    horizontal lines at their median over instances. Grid values and reference agents without
    a valid run are named in the legend.
    """
    col = f"hp_{hparam}"
    if col not in table:
        known = [c[3:] for c in table if c.startswith("hp_")]
        raise ValueError(f"hparam: no hyperparameter {hparam!r} in the table (its hyperparameters: {known})")
    valid = _valid(table)
    fig = Figure(figsize=(6.4, 4.4), dpi=100)
    ax = fig.subplots()
    inst_count = valid["instance_seed"].nunique() if "instance_seed" in valid else 1
    colours = label_colours(table["agent"])
    for agent, rows in valid[valid[col].notna()].groupby("agent", sort=False):
        xs, med, lo, hi, mean, half = [], [], [], [], [], []
        for x, g in rows.groupby(col):
            inst = g.groupby("instance_seed")["final_regret"].mean().to_numpy()
            m, h = mean_ci95(g["final_regret"].to_numpy())
            xs.append(x)
            med.append(np.median(inst))
            lo.append(np.percentile(inst, 25))
            hi.append(np.percentile(inst, 75))
            mean.append(m)
            half.append(h)
        colour = colours[agent]
        ax.plot(xs, med, "o-", color=colour, label=f"{agent}: median over instances")
        if inst_count > 1:
            ax.fill_between(xs, lo, hi, color=colour, alpha=0.15, lw=0, label=f"{agent}: IQR over instances")
        ax.errorbar(xs, mean, yerr=half, fmt="none", color=colour, alpha=0.7, capsize=2,
                    label=f"{agent}: mean ± 95% CI over all runs")
    for agent in references:
        rows = valid[valid["agent"] == agent]
        if len(rows):
            inst = rows.groupby("instance_seed")["final_regret"].mean().to_numpy()
            ax.axhline(np.median(inst), ls="--", lw=1, color=colours[agent],
                       label=f"{agent}: median over instances")
    drawn = bool(ax.get_legend_handles_labels()[0])
    for agent, x in _without_valid_runs(table, col, references):
        where = "" if x is None else f" at {hparam}={x:g}"
        ax.plot([], [], ls="none", marker="x", color=colours[agent], label=f"{agent}{where}: {NO_VALID}")
    grid_values = table.loc[table[col].notna(), col].to_numpy(np.float64)
    ax.set_xscale("log")
    log_ticks(ax, grid_values)
    if not drawn:
        _nothing_drawn(ax)
        if grid_values.size:
            ax.set_xlim(grid_values.min() / 1.5, grid_values.max() * 1.5)
    ax.set_xlabel(hparam)
    ax.set_ylabel("final cumulative pseudo-regret")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    if title:
        ax.set_title(_wrap(title, 70), fontsize=10)
    fig.tight_layout()
    return fig


def _without_valid_runs(table, col: str, references) -> list:
    """``(agent, grid value)`` of the grid cells in ``col`` without a valid run, then
    ``(agent, None)`` of the reference agents present without one."""
    if "valid" not in table:
        return []
    grid = table[table[col].notna()]
    out = [(agent, x) for (agent, x), g in grid.groupby(["agent", col], sort=False) if not g["valid"].any()]
    return out + [(agent, None) for agent in references
                  if (table["agent"] == agent).any() and not table.loc[table["agent"] == agent, "valid"].any()]


def save(fig: Figure, stem, *, formats=("pdf", "png"), write=None) -> list:
    """Writes ``fig`` as ``stem.pdf`` and ``stem.png`` (PNG at :data:`DPI`); returns the paths.

    ``write(path, callback)`` may replace the plain write (e.g. an atomic one); the callback
    takes a binary file object.
    """
    stem = Path(stem)
    paths = []
    for fmt in formats:
        path = stem.with_suffix(f".{fmt}")
        save_to = lambda f, fmt=fmt: fig.savefig(f, format=fmt, dpi=DPI)
        if write is None:
            with open(path, "wb") as f:
                save_to(f)
        else:
            write(path, save_to)
        paths.append(path)
    return paths
