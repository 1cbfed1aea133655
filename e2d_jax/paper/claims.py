"""The paper's claims as measurable statements over instances (the docs' 'What holds').

Reads stored sweep results (``results.parquet``, one row per agent cell, instance and seed;
see :mod:`e2d_jax.experiments.storage`) and reduces them to per-instance means with 95%
confidence intervals over seeds, then to statements over instances:

* :func:`per_instance`: mean final regret, CI half-width and seed count per (cell, instance);
* :func:`sensitivity`: per hyperparameter value, the median over instances of the
  per-instance means, their quartiles (the spread over instances) and a 95% CI of the mean
  over instances (instances resampled, bootstrap);
* :func:`wins`: on which instances one cell has a lower mean than each of a list of others,
  and on which it is lower with 95% confidence (Welch interval of the difference above 0);
* :func:`instance_properties`: what distinguishes the instances of a semi-bandit sweep
  (whether the revealing action is optimal, its gap, the gaps' range, the observable rank).

Every fraction the docs report is computed by these functions from the stored table
(``notebooks/04_sensitivity.ipynb`` runs them).
"""
from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pandas as pd

from e2d_jax.envs import linear
from e2d_jax.experiments import registry, storage
from e2d_jax.experiments.spec import SweepSpec
from e2d_jax.sim.summaries import Z95


def load(out) -> tuple:
    """``(table, summary)`` of a results directory (valid seeds only in the table)."""
    out = Path(out)
    table = pd.read_parquet(out / storage.TABLE)
    summary = json.loads((out / storage.SUMMARY).read_text())
    return table[table["valid"]], summary


def per_instance(table):
    """Per (cell, instance_seed): ``mean``, ``half`` (95% CI half-width over seeds), ``std``, ``n``."""
    g = table.groupby(["cell", "instance_seed"])["final_regret"]
    df = g.agg(mean="mean", std="std", n="count").reset_index()
    df["half"] = Z95 * df["std"] / np.sqrt(df["n"])
    return df


def _matrix(inst, cell: str):
    sub = inst[inst["cell"] == cell].set_index("instance_seed").sort_index()
    if sub.empty:
        raise ValueError(f"no results for cell {cell!r}; cells: {sorted(inst['cell'].unique())}")
    return sub


def grid_agent(table, hparam: str, prefix: str = "") -> str:
    """The agent (whose name starts with ``prefix``) with a grid over ``hparam``: more than one
    value of ``hp_<hparam>`` among its rows."""
    col = f"hp_{hparam}"
    if col in table:
        for agent, rows in table.groupby("agent"):
            if str(agent).startswith(prefix) and rows[col].nunique() > 1:
                return str(agent)
    raise ValueError(f"no agent{f' named {prefix}...' if prefix else ''} has a grid over {hparam!r}")


def sensitivity(table, agent: str, hparam: str, *, boot: int = 2000, seed: int = 0):
    """Final regret against ``hparam`` for ``agent``'s grid, over instances.

    Returns a DataFrame with one row per grid value: ``value``, ``median``, ``q25``, ``q75``
    (quartiles of the per-instance means), ``mean``, ``ci_lo``, ``ci_hi`` (95% bootstrap CI
    of the mean over instances) and ``instances``.
    """
    col = f"hp_{hparam}"
    sub = table[table["agent"] == agent]
    if sub.empty or col not in sub or sub[col].isna().all():
        raise ValueError(f"no grid over {hparam!r} for agent {agent!r}")
    rows = []
    rng = np.random.default_rng(seed)
    for value, g in sub.groupby(col):
        m = g.groupby("instance_seed")["final_regret"].mean().to_numpy()
        idx = rng.integers(0, m.size, size=(boot, m.size))
        bs = m[idx].mean(axis=1)
        rows.append(dict(value=float(value), median=float(np.median(m)), q25=float(np.quantile(m, 0.25)),
                         q75=float(np.quantile(m, 0.75)), mean=float(m.mean()),
                         ci_lo=float(np.quantile(bs, 0.025)), ci_hi=float(np.quantile(bs, 0.975)),
                         instances=int(m.size)))
    return pd.DataFrame(rows).sort_values("value").reset_index(drop=True)


def reference(table, cell: str, *, boot: int = 2000, seed: int = 0) -> dict:
    """The same statistics as :func:`sensitivity` for one cell (a horizontal reference)."""
    m = table[table["cell"] == cell].groupby("instance_seed")["final_regret"].mean().to_numpy()
    if m.size == 0:
        raise ValueError(f"no results for cell {cell!r}")
    bs = m[np.random.default_rng(seed).integers(0, m.size, size=(boot, m.size))].mean(axis=1)
    return dict(median=float(np.median(m)), q25=float(np.quantile(m, 0.25)), q75=float(np.quantile(m, 0.75)),
                mean=float(m.mean()), ci_lo=float(np.quantile(bs, 0.025)), ci_hi=float(np.quantile(bs, 0.975)),
                instances=int(m.size))


def wins(inst, cell: str, others) -> dict:
    """On which instances ``cell`` has lower mean final regret than every cell in ``others``.

    Returns ``{"instances", "lower" (bool per instance), "significant" (lower with 95%
    confidence against every other: the Welch interval of each difference excludes 0),
    "fraction", "fraction_significant", "worse_significant" (fraction where some other is
    lower with 95% confidence), "margin" (per instance: best other mean minus ``cell``'s mean)}``.
    """
    a = _matrix(inst, cell)
    lower = np.ones(len(a), bool)
    sig = np.ones(len(a), bool)
    worse = np.zeros(len(a), bool)
    best = np.full(len(a), np.inf)
    for o in others:
        b = _matrix(inst, o).reindex(a.index)
        diff = b["mean"].to_numpy() - a["mean"].to_numpy()
        half = np.hypot(a["half"].to_numpy(), b["half"].to_numpy())
        lower &= diff > 0
        sig &= diff > half
        worse |= diff < -half
        best = np.minimum(best, b["mean"].to_numpy())
    return {"instances": a.index.to_numpy(), "lower": lower, "significant": sig,
            "fraction": float(lower.mean()), "fraction_significant": float(sig.mean()),
            "worse_significant": float(worse.mean()), "margin": best - a["mean"].to_numpy()}


def instance_properties(spec):
    """Per instance of a linear sweep: ``revealing_optimal``, ``revealing_gap`` (the revealing
    action's gap), ``min_gap`` (smallest positive gap), ``max_gap`` and ``rank`` (the
    observable span's dimension r)."""
    _, params, family = registry.build_instances(spec.env, spec.instance_seeds, spec.builder_options(), spec.dtype)
    if family != "linear":
        raise ValueError(f"spec: instance_properties needs a linear environment, got {spec.env!r}")
    gaps = np.asarray(jax.vmap(linear.gaps)(params), np.float64)
    rev = np.asarray(params.model.obs_mask.sum(-1).argmax(-1))
    rank = params.model.span.features.shape[-1]
    pos = np.where(gaps > 1e-9, gaps, np.inf)
    return pd.DataFrame({
        "instance_seed": list(spec.instance_seeds),
        "revealing_optimal": gaps[np.arange(len(rev)), rev] <= 1e-9,
        "revealing_gap": gaps[np.arange(len(rev)), rev],
        "min_gap": pos.min(-1), "max_gap": gaps.max(-1), "rank": rank,
    })


def _row(inst, cell, others, **extra) -> dict:
    w = wins(inst, cell, others)
    return {**extra, "cell": cell, "against": ", ".join(others), "instances": len(w["instances"]),
            "lower": w["fraction"], "lower_95": w["fraction_significant"], "higher_95": w["worse_significant"],
            "median_margin": float(np.median(w["margin"]))}


def exp1_report(out):
    """Experiment 1's claim over the instances of a ``sensitivity-exp1`` sweep.

    Returns ``(tuning, claim)``: ``tuning`` has one row per E2D tuning n' (and the paper-text
    pair): the per-instance regret lost against E2D tuned for the horizon (median, quartiles,
    fraction of instances where it is higher, with 95% confidence); ``claim`` compares
    Anytime-E2D's default (c = 1) with E2D at each tuning, and states the claim as a whole
    (lower than every mis-tuned E2D and not higher, with 95% confidence, than the tuned one)
    in each convention."""
    table, _ = load(out)
    inst = per_instance(table)
    base = grid_agent(table, "lam_scale", prefix="e2d-n")  # E2D tuned for the horizon, e2d-nN
    n = int(base[len("e2d-n"):])
    tuned = f"{base}[lam_scale=1]"
    cells = set(inst["cell"])
    mistuned = sorted((c for c in cells if c.startswith("e2d-n") and "[" not in c and not c.endswith("-kl")),
                      key=lambda c: int(c[len("e2d-n"):]))
    rows = []
    t = _matrix(inst, tuned)
    for c in mistuned:
        m = _matrix(inst, c).reindex(t.index)
        loss = m["mean"].to_numpy() - t["mean"].to_numpy()
        half = np.hypot(m["half"].to_numpy(), t["half"].to_numpy())
        rows.append(dict(tuning=c, loss_median=float(np.median(loss)), loss_q25=float(np.quantile(loss, 0.25)),
                         loss_q75=float(np.quantile(loss, 0.75)), higher=float((loss > 0).mean()),
                         higher_95=float((loss > half).mean()), instances=len(loss)))
    tuning = pd.DataFrame(rows)
    anytime = "anytime-e2d[eps2_scale=1]"
    claim = [_row(inst, anytime, [c], convention="implementation") for c in mistuned + [tuned]]
    w_mis = wins(inst, anytime, mistuned)
    w_tuned = wins(inst, anytime, [tuned])
    holds = w_mis["lower"] & ~(wins(inst, tuned, [anytime])["significant"])
    claim.append(dict(convention="implementation", cell=anytime, against="claim: < every mis-tuned E2D, "
                      "not > tuned E2D (95%)", instances=len(holds), lower=float(holds.mean()),
                      lower_95=float((w_mis["significant"] & ~wins(inst, tuned, [anytime])["significant"]).mean()),
                      higher_95=w_tuned["worse_significant"], median_margin=float("nan")))
    if "anytime-e2d-kl" in cells and f"e2d-n{n}-kl" in cells:
        claim.append(_row(inst, "anytime-e2d-kl", [f"e2d-n{n}-kl"], convention="paper-text"))
    return tuning, pd.DataFrame(claim)


#: Anytime-E2D's schedules compared in Experiment 2 (cell -> description).
EXP2_CHOICES = {
    "anytime-e2d[eps2_scale=1]": "d/t (paper's preset)",
    "anytime-e2d[eps2_scale=0.1]": "0.1 d/t",
    "anytime-e2d-rank": "r/t",
    "anytime-e2d-rank-log": "r(1+log t)/t",
}


def exp2_report(out, *, against=("e2d-n1000", "ucb", "ts")):
    """Experiment 2's claim (Anytime-E2D below E2D, UCB and TS) over the instances of an
    ``exp2-candidates-*`` sweep, per schedule, overall and split by whether the revealing
    action is optimal. Returns a DataFrame (fractions of instances)."""
    table, summary = load(out)
    inst = per_instance(table)
    props = instance_properties(SweepSpec.from_dict(summary["config"])).set_index("instance_seed")
    rows = []
    for cell, text in EXP2_CHOICES.items():
        if cell not in set(inst["cell"]):
            continue
        w = wins(inst, cell, list(against))
        opt = props.loc[w["instances"], "revealing_optimal"].to_numpy()
        m = _matrix(inst, cell)["mean"]
        for name, mask in (("all", np.ones_like(opt)), ("revealing optimal", opt), ("revealing suboptimal", ~opt)):
            if not mask.any():
                continue
            rows.append(dict(schedule=text, instances_=name, instances=int(mask.sum()),
                             lower=float(w["lower"][mask].mean()), lower_95=float(w["significant"][mask].mean()),
                             regret_median=float(np.median(m.to_numpy()[mask])),
                             margin_median=float(np.median(w["margin"][mask]))))
    for ref in against:
        m = _matrix(inst, ref)["mean"].to_numpy()
        rows.append(dict(schedule=ref, instances_="all", instances=len(m), lower=np.nan, lower_95=np.nan,
                         regret_median=float(np.median(m)), margin_median=np.nan))
    return pd.DataFrame(rows).rename(columns={"instances_": "subset"})
