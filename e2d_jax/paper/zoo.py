"""Anytime-E2D against its closest rival, information-directed sampling, and the optimistic
baselines, on the instances the paper argues from and on partial-monitoring games
(``e2d-jax reproduce zoo``).

Every family of :mod:`e2d_jax.envs.zoo` (and the paper's revealing semi-bandit in both
instance distributions) is one sweep: the same seeds and instances for every agent, the
strongest default of each algorithm: Anytime-E2D (the library's defaults), E2D tuned for the
horizon, IDS with the directed and with the worst-case information gain (difference gaps,
the exact minimiser over distributions; on finite classes the Bayesian IDS), UCB and TS
(on the games without a linear view, TS is posterior sampling on the class, and there is no
UCB). Random families run :data:`INSTANCES` instances; the fixed instances run one. On the
duelling games (:mod:`e2d_jax.envs.dueling`) the best action is a self-duel that observes
nothing; where the reward level is not observable either (:data:`DIFFERENCES_ONLY`) the E2D
agents use gaps Delta.

:func:`report` reduces the stored tables to, per family and agent, the median over instances
of the per-instance mean final regret with its interquartile range, the growth of the regret
between the middle and the end of the horizon (R(n) / R(n/2): about 1 for logarithmic
regret, 2 for linear), and where Anytime-E2D is below IDS: the fraction of instances on which
its mean is lower, and lower with 95% confidence (:func:`e2d_jax.paper.claims.wins`).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from e2d_jax.envs import zoo
from e2d_jax.experiments import storage
from e2d_jax.experiments.spec import SweepAgent, SweepSpec
from e2d_jax.paper import claims

#: The horizon of every family (the paper's Experiment 1).
HORIZON = 2000
#: Instances of each random family, and seeds per instance.
INSTANCES = 10
SEEDS = 200

#: family -> (registered environment, options, random (several instances) or fixed, model family)
FAMILIES = {
    "end-of-optimism": ("end-of-optimism", {}, False, "linear"),
    "hard-semi-bandit": ("hard-semi-bandit", {}, False, "linear"),
    "large-gaps": ("large-gaps", {}, False, "linear"),
    "heteroscedastic": ("heteroscedastic", {}, True, "linear"),
    "simple-bandit": ("simple-bandit", {}, True, "linear"),
    "semi-bandit": ("semi-bandit", {"d": 3, "arms": 10}, True, "linear"),
    "semi-bandit-authors": ("semi-bandit-authors", {"d": 3, "arms": 10}, True, "linear"),
    "apple-tasting": ("apple-tasting", {}, True, "finite"),
    "label-efficient": ("label-efficient", {}, True, "finite"),
    "dynamic-pricing": ("dynamic-pricing", {}, True, "finite"),
    "dueling": ("dueling", {"d": 3, "arms": 10}, True, "linear"),
    "dueling-localized": ("dueling-localized", {"d": 3}, False, "linear"),
    "preference": ("preference", {"d": 3, "arms": 10}, True, "linear"),
}
#: The games that observe reward differences only, the reward level never: the E2D agents run
#: with gaps Delta there (with Delta_f their programs are infinite).
DIFFERENCES_ONLY = {"dueling-localized"}
#: The games without a linear view (no UCB; TS is posterior sampling on the class).
NO_LINEAR_VIEW = {"apple-tasting", "label-efficient", "dynamic-pricing"}


def agents(family: str) -> tuple:
    """The agents of a family's sweep (see the module docstring)."""
    gaps = {"gap_type": "delta"} if family in DIFFERENCES_ONLY else None
    out = [SweepAgent.make("anytime-e2d", options=gaps), SweepAgent.make("e2d", options=gaps)]
    if FAMILIES[family][3] == "linear":
        out += [SweepAgent.make("ids", label="ids"), SweepAgent.make("ids@worst-case", label="ids-worst-case"),
                SweepAgent.make("ucb"), SweepAgent.make("ts")]
    else:
        out += [SweepAgent.make("ids", label="ids"), SweepAgent.make("ts-finite")]
    return tuple(out)


def spec(family: str, *, instances: int = INSTANCES, seeds: int = SEEDS, horizon: int = HORIZON,
         seed: int = 0) -> SweepSpec:
    """The sweep of one family (see the module docstring)."""
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {sorted(FAMILIES)}, got {family!r}")
    env, options, random, _ = FAMILIES[family]
    sizes = {k: options[k] for k in ("d", "arms") if k in options}
    return SweepSpec(env=env, **sizes, agents=agents(family), horizon=horizon, seeds=seeds, seed=seed,
                     instance_seeds=tuple(range(instances if random else 1)), record_every=max(1, horizon // 100),
                     name=f"zoo-{family}")


def specs(*, instances: int = INSTANCES, seeds: int = SEEDS, horizon: int = HORIZON, families=None) -> list:
    """Every family's sweep."""
    names = list(FAMILIES) if families is None else list(families)
    return [spec(f, instances=instances, seeds=seeds, horizon=horizon) for f in names]


def _growth(out: Path, table) -> dict:
    """Per cell: R(n) / R(n/2) of the mean regret over valid runs."""
    curves = storage.read_curves(out)
    rounds, regret = curves["rounds"], curves["regret"]
    half = int(np.argmin(np.abs(rounds - rounds[-1] / 2)))
    out_ = {}
    for cell in dict.fromkeys(table["cell"]):
        rows = np.asarray((table["cell"] == cell) & table["valid"])
        mean = regret[rows].mean(0)
        out_[cell] = float(mean[-1] / mean[half]) if mean[half] > 0 else float("nan")
    return out_


def family_report(out) -> pd.DataFrame:
    """One row per agent of a family's stored sweep (see the module docstring)."""
    out = Path(out)
    table, summary = claims.load(out)
    inst = claims.per_instance(table)
    growth = _growth(out, table)
    cells = list(dict.fromkeys(inst["cell"]))
    rows = []
    for cell in cells:
        m = inst[inst["cell"] == cell]["mean"].to_numpy()
        row = dict(agent=cell, instances=len(m), median=float(np.median(m)), q25=float(np.quantile(m, 0.25)),
                   q75=float(np.quantile(m, 0.75)), growth=growth[cell])
        if cell != "anytime-e2d" and "anytime-e2d" in cells:
            w = claims.wins(inst, "anytime-e2d", [cell])
            row.update(e2d_lower=w["fraction"], e2d_lower_95=w["fraction_significant"],
                       e2d_higher_95=w["worse_significant"])
        rows.append(row)
    return pd.DataFrame(rows)


def report(base) -> dict:
    """``{family: DataFrame}`` for every family stored under ``base`` (``base/zoo-<family>``)."""
    base = Path(base)
    return {f: family_report(base / f"zoo-{f}") for f in FAMILIES if (base / f"zoo-{f}" / storage.SUMMARY).exists()}


def write_report(base) -> Path:
    """Writes ``zoo.md`` (one table per family, with the games' observability) and
    ``zoo.json`` under ``base``; returns the Markdown file's path."""
    base = Path(base)
    tables = report(base)
    lines = ["# Anytime-E2D, IDS and the optimistic baselines on the zoo", "",
             "Median over instances of the per-instance mean final regret [interquartile range]; growth is "
             "R(n) / R(n/2) of the mean curve (about 1: logarithmic, 2: linear); 'E2D lower' is the fraction of "
             "instances on which Anytime-E2D's mean is below the agent's (with 95% confidence; above with 95% "
             "confidence).", ""]
    for family, df in tables.items():
        cfg = json.loads((base / f"zoo-{family}" / storage.SUMMARY).read_text())["config"]
        note = ""
        if family in zoo.OBSERVABILITY:
            kind, rate = zoo.OBSERVABILITY[family]
            note = f" — {kind}, minimax regret Θ({rate})"
        lines += [f"## {family}{note}", "",
                  f"{len(cfg['instance_seeds'])} instance(s) × {cfg['seeds']} seeds, n = {cfg['horizon']}.", "",
                  "| agent | median [IQR] | growth | E2D lower (95%; higher 95%) |", "|---|---|---|---|"]
        for _, r in df.iterrows():
            vs = "" if r["agent"] == "anytime-e2d" else (
                f"{r['e2d_lower']:.0%} ({r['e2d_lower_95']:.0%}; {r['e2d_higher_95']:.0%})")
            lines.append(f"| {r['agent']} | {r['median']:.1f} [{r['q25']:.1f}, {r['q75']:.1f}] | {r['growth']:.2f} "
                         f"| {vs} |")
        lines.append("")
    path = base / "zoo.md"
    storage.atomic_write(path, lambda f: f.write("\n".join(lines).encode()))
    storage.write_json(base / "zoo.json", {f: df.to_dict(orient="records") for f, df in tables.items()})
    return path
