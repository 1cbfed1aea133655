"""Duelling and preference feedback, where optimism fails (``e2d-jax reproduce preferences``).

The paper's setting is partial monitoring, and it names duelling and preference feedback (as
in RLHF) among the cases it covers. On the games of :mod:`e2d_jax.envs.dueling` and
:mod:`e2d_jax.envs.preference` no action observes its own reward and the best action is a
self-duel that observes nothing. This reproduction runs Anytime-E2D, E2D tuned for the run's
horizon, IDS, UCB and TS, every one at its defaults, on

* ``dueling``: the authors' ``random_dueling`` (d = 3, 10 base arms, K = 100 pairs, Gaussian
  outcomes), instance seed 0 (``instances`` draws seeds 0..N-1);
* ``dueling-localized``: the authors' ``localized_dueling`` (d = 3, K = 5), whose reward level
  is not observable: the E2D agents run with gaps Delta (with Delta_f their programs are
  infinite);
* ``preference``: the same base arms with Bradley-Terry outcomes (y = 1 with probability
  sigma(<x_a - x_b, f*>)), every agent estimating by logistic maximum likelihood
  (:mod:`e2d_jax.estimators.logistic`);

and :func:`report` gives, per family and agent, the final regret (mean and 95% CI over seeds),
the growth exponent over the last decade of rounds with its bootstrap CI
(:func:`e2d_jax.paper.horizons.growth_exponent`: about 1 where the regret grows linearly),
how often the agent played an informative pair (an action whose observation map is not zero:
a duel of two different arms) and the fraction of its rounds flagged by its solver.
"""
from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pandas as pd

from e2d_jax import _checks as V
from e2d_jax.envs import dueling
from e2d_jax.experiments import registry, storage
from e2d_jax.experiments.spec import SweepAgent, SweepSpec
from e2d_jax.paper import horizons
from e2d_jax.plotting import save
from e2d_jax.sim.summaries import mean_ci95

#: family -> (registered environment, builder options, random instances or one fixed, the
#: E2D agents' options).
FAMILIES = {
    "dueling": ("dueling", {"d": 3, "arms": 10}, True, None),
    "dueling-localized": ("dueling-localized", {"d": 3}, False, {"gap_type": "delta"}),
    "preference": ("preference", {"d": 3, "arms": 10}, True, None),
}
#: The agents, in the order of every table.
AGENTS = ("anytime-e2d", "e2d", "ids", "ucb", "ts")
#: Rounds n on an accelerator and on a CPU (the CPU's sized for minutes on a laptop-class CPU and
#: long enough that Anytime-E2D's hard first rounds are a small share; the docs' partial-monitoring
#: page gives the wall time), seeds per instance, and recorded rounds per run.
ACCELERATOR_HORIZON = 10_000
CPU_HORIZON = 1000
SEEDS = 100
RECORDED = 100


def default_horizon(backend: str | None = None) -> int:
    """n on ``backend`` (default ``jax.default_backend()``)."""
    backend = jax.default_backend() if backend is None else backend
    return CPU_HORIZON if backend == "cpu" else ACCELERATOR_HORIZON


def agents(family: str) -> tuple:
    """The agents of a family's sweep: each at its defaults, the E2D agents with the family's
    gap type."""
    options = FAMILIES[family][3]
    return tuple(SweepAgent.make(name, options if name in ("anytime-e2d", "e2d") else None) for name in AGENTS)


def spec(family: str, *, horizon: int | None = None, seeds: int | None = None, instances: int = 1,
         seed: int = 0) -> SweepSpec:
    """The sweep of one family (see the module docstring)."""
    if family not in FAMILIES:
        raise V.ArgumentError("families", f"{V.name('families')}: unknown family {family!r} (choose from "
                                          f"{', '.join(FAMILIES)})")
    if instances < 1:
        raise V.ArgumentError("instances", f"{V.name('instances')} must be >= 1, got {instances}")
    horizon = default_horizon() if horizon is None else horizon
    env, options, random, _ = FAMILIES[family]
    return SweepSpec(env=env, **options, agents=agents(family), horizon=horizon, seeds=SEEDS if seeds is None else seeds,
                     seed=seed, instance_seeds=tuple(range(instances if random else 1)),
                     record_every=max(1, horizon // RECORDED), name=f"preferences-{family}")


def specs(*, horizon: int | None = None, seeds: int | None = None, instances: int = 1, families=None) -> list:
    """Every family's sweep (or those of ``families``)."""
    names = list(FAMILIES) if families is None else list(families)
    return [spec(f, horizon=horizon, seeds=seeds, instances=instances) for f in names]


# --- the report ----------------------------------------------------------------------------


def _informative_actions(family: str, instance_seed: int) -> np.ndarray:
    env, options, _, _ = FAMILIES[family]
    _, params, _ = registry.build_instance(env, int(instance_seed), options)
    return np.asarray(dueling.informative(params, np.arange(params.model.num_actions)))


def informative_share(family: str, table: pd.DataFrame) -> np.ndarray:
    """Per row of a stored table: the fraction of the run's rounds that played an informative
    action (a non-zero observation map)."""
    masks = {s: _informative_actions(family, s) for s in table["instance_seed"].unique()}
    out = np.empty(len(table))
    for i, (seed, counts) in enumerate(zip(table["instance_seed"], table["action_counts"])):
        counts = np.asarray(counts, np.float64)
        out[i] = counts[masks[seed]].sum() / counts.sum()
    return out


def family_report(family: str, out) -> pd.DataFrame:
    """:func:`e2d_jax.paper.horizons.sweep_report` of a family's stored sweep with the columns
    ``informative``, ``informative_lo``, ``informative_hi`` (the mean share of informative plays
    and its 95% CI over the runs) and ``flagged`` (the fraction of rounds its solver flagged;
    NaN for the agents without a solver)."""
    out = Path(out)
    df = horizons.sweep_report(out)
    table = storage.read_table(out)
    table = table[table["valid"]].reset_index(drop=True)
    share = informative_share(family, table)
    cells = json.loads((out / storage.SUMMARY).read_text())["agents"]
    rows = []
    for cell in df["agent"]:
        mean, ci = mean_ci95(share[(table["cell"] == cell).to_numpy()])
        flagged = (cells.get(cell, {}).get("solver") or {}).get("flagged_fraction")
        rows.append(dict(informative=float(mean), informative_lo=float(mean - ci), informative_hi=float(mean + ci),
                         flagged=np.nan if flagged is None else float(flagged)))
    return pd.concat([df, pd.DataFrame(rows)], axis=1)


def _sweeps(base: Path) -> dict:
    return {f: base / f"preferences-{f}" for f in FAMILIES if (base / f"preferences-{f}" / storage.SUMMARY).exists()}


def report(base) -> dict:
    """``{family: DataFrame}`` (:func:`family_report`) for every sweep stored under ``base``."""
    return {f: family_report(f, out) for f, out in _sweeps(Path(base)).items()}


def markdown(base, tables: dict | None = None) -> str:
    """The report as Markdown: one table per family."""
    base = Path(base)
    tables = report(base) if tables is None else tables
    lines = ["# Duelling and preference feedback", "",
             "Final regret: mean over seeds [95% CI]. Exponent: the slope of log R against log n over the last decade "
             "(n/10 to n) of the mean regret curve [95% bootstrap CI over seeds]: about 1 for linear regret, 1/2 for "
             "regret of order √n. Informative: the share of rounds that played a duel of two different arms (an "
             "action that observes something) [95% CI]. Flagged: the share of rounds whose solve was not certified "
             "to the solver's tolerance.", ""]
    for family, df in tables.items():
        cfg = json.loads((base / f"preferences-{family}" / storage.SUMMARY).read_text())["config"]
        inst = len(cfg["instance_seeds"])
        count = f"{cfg['seeds']} seeds" + (f" × {inst} instances" if inst > 1 else "")
        lines += [f"## {family}", "", f"n = {cfg['horizon']:,}, {count}.", "",
                  "| agent | final regret [95% CI] | exponent on [n/10, n] | informative | flagged |",
                  "|---|---|---|---|---|"]
        for _, r in df.iterrows():
            flagged = "—" if not np.isfinite(r["flagged"]) else f"{r['flagged']:.1%}"
            lines.append(f"| {r['agent']} | {r['final']:.1f} [{r['final_lo']:.1f}, {r['final_hi']:.1f}] | "
                         f"{horizons.interval_text(r['exponent'], r['exponent_lo'], r['exponent_hi'])} | "
                         f"{r['informative']:.1%} [{r['informative_lo']:.1%}, {r['informative_hi']:.1%}] | "
                         f"{flagged} |")
        lines.append("")
    return "\n".join(lines)


def write_report(base) -> Path:
    """Writes ``preferences.md``, ``preferences.json`` and the figure ``preferences.png`` /
    ``.pdf`` (:func:`e2d_jax.paper.horizons.plot_sweeps`) under ``base``; returns the Markdown
    file's path."""
    base = Path(base)
    tables = report(base)
    path = base / "preferences.md"
    text = markdown(base, tables)
    storage.atomic_write(path, lambda f: f.write(text.encode()))
    storage.write_json(base / "preferences.json", {
        f: [horizons.strict_row(row) for row in df.to_dict(orient="records")] for f, df in tables.items()})
    save(horizons.plot_sweeps(_sweeps(base), tables), base / "preferences", write=storage.atomic_write)
    return path
