"""Contexts and real data (``e2d-jax reproduce contexts``).

Where bandits are used, a context arrives each round. This reproduction runs Anytime-E2D, E2D
tuned for the run's horizon, IDS, UCB, TS and the practitioners' baselines (SquareCB's inverse
gap weighting and epsilon-greedy on a least-squares oracle), every one at its defaults, on

* ``contextual-linear``: 10 contexts of 10 unit-norm N(0, I) actions in R^3, uniform;
* ``contextual-continuous``: new N(0, I) action features every round (10 actions, R^3);
* ``contextual-authors``: the authors' ``contextual_simple_bandit`` (3 contexts, 10 actions
  with N(0, 1) features in R^3, f* = e_1);
* ``contextual-revealing``: 10 contexts, in half of which a costly revealing action is offered
  (:func:`e2d_jax.envs.contextual.revealing_contextual`);
* ``digits``, ``wine``, ``breast-cancer``, ``iris``: scikit-learn's bundled classification
  datasets as contextual bandits (:mod:`e2d_jax.envs.datasets`: one row per round in each
  seed's order, one action per label, reward 1 for the row's label);

instance seed 0 of each random family, and :func:`report` gives, per family and agent, the
final regret (mean and 95% CI over seeds), on real data the average reward 1 - R_n / n (the
share of rounds that played the row's label) and the share of rounds the agent's solver
flagged.
"""
from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from e2d_jax import _checks as V
from e2d_jax.experiments import storage
from e2d_jax.experiments.spec import SweepAgent, SweepSpec
from e2d_jax.plotting import label_colours, save
from e2d_jax.sim.summaries import mean_ci95

#: family -> (registered environment, builder options, whether it is a dataset).
FAMILIES = {
    "contextual-linear": ("contextual-linear", {"d": 3, "arms": 10, "contexts": 10}, False),
    "contextual-continuous": ("contextual-linear", {"d": 3, "arms": 10, "contexts": 0}, False),
    "contextual-authors": ("contextual-authors", {"d": 3, "arms": 10, "contexts": 3}, False),
    "contextual-revealing": ("contextual-revealing", {"d": 3, "arms": 10, "contexts": 10}, False),
    "digits": ("data-digits", {}, True),
    "wine": ("data-wine", {}, True),
    "breast-cancer": ("data-breast-cancer", {}, True),
    "iris": ("data-iris", {}, True),
}
#: The agents, in the order of every table.
AGENTS = ("anytime-e2d", "e2d", "ids", "ucb", "ts", "squarecb", "epsilon-greedy")
#: Rounds n on an accelerator and on a CPU, seeds per instance, and recorded rounds per run.
ACCELERATOR_HORIZON = 2000
CPU_HORIZON = 400
SEEDS = 100
RECORDED = 50


def default_horizon(backend: str | None = None) -> int:
    """n on ``backend`` (default ``jax.default_backend()``)."""
    backend = jax.default_backend() if backend is None else backend
    return CPU_HORIZON if backend == "cpu" else ACCELERATOR_HORIZON


def spec(family: str, *, horizon: int | None = None, seeds: int | None = None, seed: int = 0) -> SweepSpec:
    """The sweep of one family (see the module docstring)."""
    if family not in FAMILIES:
        raise V.ArgumentError("families", f"{V.name('families')}: unknown family {family!r} (choose from "
                                          f"{', '.join(FAMILIES)})")
    horizon = default_horizon() if horizon is None else horizon
    env, options, _ = FAMILIES[family]
    return SweepSpec(env=env, agents=tuple(SweepAgent.make(name) for name in AGENTS), horizon=horizon,
                     seeds=SEEDS if seeds is None else seeds, seed=seed, instance_seeds=(0,),
                     env_options=tuple(sorted(options.items())), record_every=max(1, horizon // RECORDED),
                     name=f"contexts-{family}")


def specs(*, horizon: int | None = None, seeds: int | None = None, families=None) -> list:
    """Every family's sweep (or those of ``families``)."""
    names = list(FAMILIES) if families is None else list(families)
    return [spec(f, horizon=horizon, seeds=seeds) for f in names]


# --- the report ----------------------------------------------------------------------------


def _sweeps(base: Path) -> dict:
    return {f: base / f"contexts-{f}" for f in FAMILIES if (base / f"contexts-{f}" / storage.SUMMARY).exists()}


def family_report(family: str, out) -> pd.DataFrame:
    """One row per agent of a family's stored sweep: ``agent``, ``seeds`` (valid runs),
    ``final``, ``final_lo``, ``final_hi`` (mean final regret and its 95% CI), ``reward``,
    ``reward_lo``, ``reward_hi`` (the average reward 1 - R_n / n on real data; NaN on the
    synthetic families, whose rewards are not on one scale) and ``flagged`` (the share of
    rounds its solver flagged; NaN for the agents without a solver)."""
    out = Path(out)
    table = storage.read_table(out)
    table = table[table["valid"]].reset_index(drop=True)
    summary = json.loads((out / storage.SUMMARY).read_text())
    horizon = summary["config"]["horizon"]
    dataset = FAMILIES[family][2]
    rows = []
    for cell in dict.fromkeys(table["cell"]):
        final = table.loc[table["cell"] == cell, "final_regret"].to_numpy()
        mean, ci = mean_ci95(final)
        flagged = (summary["agents"].get(cell, {}).get("solver") or {}).get("flagged_fraction")
        reward = 1.0 - mean / horizon if dataset else np.nan
        half = ci / horizon if dataset else np.nan
        rows.append(dict(agent=cell, seeds=int(final.size), final=float(mean), final_lo=float(mean - ci),
                         final_hi=float(mean + ci), reward=float(reward), reward_lo=float(reward - half),
                         reward_hi=float(reward + half), flagged=np.nan if flagged is None else float(flagged)))
    return pd.DataFrame(rows)


def report(base) -> dict:
    """``{family: DataFrame}`` (:func:`family_report`) for every sweep stored under ``base``."""
    return {f: family_report(f, out) for f, out in _sweeps(Path(base)).items()}


def markdown(base, tables: dict | None = None) -> str:
    """The report as Markdown: one table per family."""
    base = Path(base)
    tables = report(base) if tables is None else tables
    lines = ["# Contexts and real data", "",
             "Final regret: mean over seeds [95% CI] (on real data the number of rounds that did not play the "
             "row's label). Average reward: 1 - R_n / n, the share of rounds that played the row's label [95% CI]. "
             "Flagged: the share of rounds whose solve was not certified to the solver's tolerance.", ""]
    for family, df in tables.items():
        cfg = json.loads((base / f"contexts-{family}" / storage.SUMMARY).read_text())["config"]
        dataset = FAMILIES[family][2]
        lines += [f"## {family}", "", f"n = {cfg['horizon']:,}, {cfg['seeds']} seeds.", "",
                  "| agent | final regret [95% CI] |" + (" average reward [95% CI] |" if dataset else "") + " flagged |",
                  "|---|---|" + ("---|" if dataset else "") + "---|"]
        best = df["final"].min()
        for _, r in df.iterrows():
            flagged = "—" if not np.isfinite(r["flagged"]) else f"{r['flagged']:.1%}"
            name = f"**{r['agent']}**" if r["final"] == best else r["agent"]
            reward = f" {r['reward']:.3f} [{r['reward_lo']:.3f}, {r['reward_hi']:.3f}] |" if dataset else ""
            lines.append(f"| {name} | {r['final']:.1f} [{r['final_lo']:.1f}, {r['final_hi']:.1f}] |{reward} "
                         f"{flagged} |")
        lines.append("")
    lines.append("The lowest mean final regret of each family is in bold.")
    return "\n".join(lines) + "\n"


def plot(base, tables: dict | None = None) -> Figure:
    """Mean regret against the round (95% CI bands over seeds), one panel per family."""
    base = Path(base)
    sweeps = _sweeps(base)
    tables = report(base) if tables is None else tables
    cols = min(4, max(1, len(sweeps)))
    rows = max(1, -(-len(sweeps) // cols))
    legend = 0.45  # inches below the panels for the legend
    fig = Figure(figsize=(4.2 * cols, 3.6 * rows + legend), dpi=100)
    axes = fig.subplots(rows, cols, squeeze=False).reshape(-1)
    colours = label_colours(AGENTS)
    for ax, (family, out) in zip(axes, sweeps.items()):
        table = storage.read_table(out)
        valid = table["valid"].to_numpy()
        curves = storage.read_curves(out)
        rounds, regret = np.asarray(curves["rounds"]), np.asarray(curves["regret"])[valid]
        table = table[valid].reset_index(drop=True)
        for cell in dict.fromkeys(table["cell"]):
            mean, half = mean_ci95(regret[(table["cell"] == cell).to_numpy()])
            colour = colours.get(cell, "k")
            ax.plot(rounds, mean, color=colour, lw=1.4, label=cell)
            ax.fill_between(rounds, mean - half, mean + half, color=colour, alpha=0.2, lw=0)
        cfg = json.loads((out / storage.SUMMARY).read_text())["config"]
        ax.set_title(f"{family} ({cfg['seeds']} seeds)", fontsize=10)
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
    for ax in axes[len(sweeps):]:
        ax.set_visible(False)
    axes[0].set_ylabel("mean regret (real data: mistakes)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, legend / (3.6 * rows + legend), 1, 1))
    return fig


def write_report(base) -> Path:
    """Writes ``contexts.md``, ``contexts.json`` and the figure ``contexts.png`` / ``.pdf``
    under ``base``; returns the Markdown file's path."""
    base = Path(base)
    tables = report(base)
    path = base / "contexts.md"
    text = markdown(base, tables)
    storage.atomic_write(path, lambda f: f.write(text.encode()))
    storage.write_json(base / "contexts.json", {
        f: [{k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in row.items()}
            for row in df.to_dict(orient="records")] for f, df in tables.items()})
    save(plot(base, tables), base / "contexts", write=storage.atomic_write)
    return path
