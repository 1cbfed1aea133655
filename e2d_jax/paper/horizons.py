"""Regret over long horizons: the rate at which each algorithm's regret grows
(``e2d-jax reproduce horizons``).

The paper's argument against optimism (Section 3.2, after the revealing-action example,
citing Lattimore and Szepesvári's "The end of optimism?") is asymptotic: UCB and TS discard
informative but suboptimal actions early and pay for it in the rate, while Anytime-E2D
optimises the information trade-off in every round. A finite horizon shows the totals; the
rate shows over a long one. This reproduction runs Anytime-E2D, E2D tuned for the run's
horizon, IDS, UCB and TS (the zoo's agents; the two E2D agents with :data:`E2D_SOLVER`) on

* ``end-of-optimism``: three actions in R^2, the second eps-suboptimal (eps = 0.01), the third
  with gap 1 the one that tells the first two apart (one fixed instance);
* ``semi-bandit``: the paper's revealing semi-bandit, d = 3, K = 10 (instance seed 0, as in
  the paper's experiments; ``instances`` draws instance seeds 0..N-1)

up to :func:`default_horizon` rounds (10^6 on an accelerator, :data:`CPU_HORIZON` on a CPU)
with :data:`RECORDED` recorded rounds (every n / 500: the last decade holds 450 of them), in
float64: the ridge estimate f_hat = V_t^{-1} b_t is a product of a large b_t with a V_t^{-1}
kept by rank-one updates, and in float32 its error grows with t until it exceeds the
semi-bandit's smallest gap (0.06), after which TS plays that action far too often (the docs'
'What holds' gives the effect on the final regrets).

:func:`report` reduces each stored sweep to, per agent, the final regret (mean and 95% CI
over seeds) beside its growth exponent over the last decade (:func:`growth_exponent`, with
its 95% bootstrap CI over seeds), R(n) / R(n/2) of the mean curve, and the round from which
Anytime-E2D's mean regret stays below the agent's; :func:`plot` draws the mean regret against
n on log-log axes with reference slopes 1/2 and 1.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from e2d_jax import _checks as V
from e2d_jax.experiments import storage
from e2d_jax.experiments.spec import SweepAgent, SweepSpec
from e2d_jax.plotting import label_colours, save
from e2d_jax.sim.summaries import mean_ci95

#: environment -> (registered environment, builder options, random instances or one fixed).
ENVIRONMENTS = {
    "end-of-optimism": ("end-of-optimism", {}, False),
    "semi-bandit": ("semi-bandit", {"d": 3, "arms": 10}, True),
}
#: The agents, in the order of every table: labels of the registry's entries.
AGENTS = ("anytime-e2d", "e2d", "ids", "ucb", "ts")
#: The E2D agents' solver here: 10 warm-started mirror-prox steps a round (the preset
#: ``"fast"``). Their defaults continue a round's solve until it is certified, at several
#: times the cost of a round, which a run of 10^5 rounds and more cannot afford on a CPU; the
#: summaries' round statuses say how often a round here ended above the 5% tolerance.
E2D_SOLVER = "fast"
#: Rounds n on an accelerator (GPU, TPU) and on a CPU; seeds per instance likewise. The CPU
#: default is sized for a run of minutes on a laptop-class machine (the docs' performance page
#: gives its wall time).
ACCELERATOR_HORIZON = 1_000_000
CPU_HORIZON = 200_000
ACCELERATOR_SEEDS = 1024
CPU_SEEDS = 128
#: Recorded rounds per run (every n // RECORDED rounds): uniform in n, so the last decade
#: [n/10, n] holds nine tenths of them.
RECORDED = 500
#: The fitting window of the growth exponent: the last ``WINDOW``-fold stretch of rounds.
WINDOW = 10.0
#: The agent whose rate is in question.
FOCUS = "anytime-e2d"


def default_horizon(backend: str | None = None) -> int:
    """n of the reproduction on ``backend`` (default ``jax.default_backend()``): 10^6 on an
    accelerator, :data:`CPU_HORIZON` on a CPU."""
    backend = jax.default_backend() if backend is None else backend
    return CPU_HORIZON if backend == "cpu" else ACCELERATOR_HORIZON


def default_seeds(backend: str | None = None) -> int:
    """Seeds per instance on ``backend`` (default ``jax.default_backend()``)."""
    backend = jax.default_backend() if backend is None else backend
    return CPU_SEEDS if backend == "cpu" else ACCELERATOR_SEEDS


def agents() -> tuple:
    """The sweep's agents: Anytime-E2D and E2D tuned for the run's horizon (both with
    :data:`E2D_SOLVER`), IDS (directed information gain), UCB and TS."""
    return tuple(SweepAgent.make(name, {"solver": E2D_SOLVER} if name in ("anytime-e2d", "e2d") else None)
                 for name in AGENTS)


def spec(env: str, *, horizon: int | None = None, seeds: int | None = None, instances: int = 1,
         seed: int = 0) -> SweepSpec:
    """The sweep of one environment (see the module docstring).

    Args:
      env: ``"end-of-optimism"`` or ``"semi-bandit"``.
      horizon: rounds n (default :func:`default_horizon`).
      seeds: seeds per instance (default :func:`default_seeds`).
      instances: instance seeds 0..N-1 of the random environment (the fixed one runs one).
      seed: master seed.
    """
    if env not in ENVIRONMENTS:
        raise V.ArgumentError("env", f"{V.name('env')} must be one of {sorted(ENVIRONMENTS)}, got {env!r}")
    if instances < 1:
        raise V.ArgumentError("instances", f"{V.name('instances')} must be >= 1, got {instances}")
    horizon = default_horizon() if horizon is None else horizon
    seeds = default_seeds() if seeds is None else seeds
    name, options, random = ENVIRONMENTS[env]
    return SweepSpec(env=name, **options, agents=agents(), horizon=horizon, seeds=seeds, seed=seed,
                     instance_seeds=tuple(range(instances if random else 1)),
                     record_every=max(1, horizon // RECORDED), x64=True, name=f"horizons-{env}")


def specs(*, horizon: int | None = None, seeds: int | None = None, instances: int = 1) -> list:
    """Both environments' sweeps."""
    return [spec(env, horizon=horizon, seeds=seeds, instances=instances) for env in ENVIRONMENTS]


# --- the growth exponent --------------------------------------------------------------------


class Exponent(NamedTuple):
    """The growth exponent of a mean regret curve over a window of rounds.

    Attributes:
      slope: the least-squares slope of log R against log n over the window.
      lo, hi: its 95% bootstrap CI over seeds.
      first, last: the window's first and last recorded rounds.
      points: recorded rounds in the window.
    """

    slope: float
    lo: float
    hi: float
    first: int
    last: int
    points: int


def _log_slopes(x, y, weights):
    """Weighted least-squares slopes of the rows of ``y`` (B, R) against ``x`` (R,)."""
    xc = x - np.sum(weights * x) / np.sum(weights)
    coef = weights * xc / np.sum(weights * xc * xc)
    return y @ coef


def growth_exponent(rounds, regret, *, groups=None, window: float = WINDOW, boot: int = 2000,
                    seed: int = 0) -> Exponent:
    """The exponent a in R(n) ~ c n^a over the last ``window``-fold stretch of rounds, with a 95%
    bootstrap CI over seeds.

    Estimator: the mean regret curve over the runs, m(t) = mean_s R_s(t), and the
    least-squares slope of log m(t) against log t over the recorded rounds t in
    [n / window, n], each round weighted by 1/t. The CI is the percentile interval of the same
    slope over ``boot`` resamples of the runs (with replacement; within each group when
    ``groups`` is given, so every instance keeps its share).

    Why this estimator:

    * the rates of the theory are statements about the expected regret, E R(n) ~ n^a, so the
      slope is taken of the log of the mean, not of the mean of the logs: per-seed slopes
      estimate E[d log R_s / d log n], which differs from the exponent of E R(n) (Jensen),
      weights the seeds with little regret most, and is undefined for a seed with R_s = 0 at
      the window's start (a seed of a logarithmic-regret agent that has not erred yet);
    * the recorded rounds are uniform in t, so an unweighted fit would spend nine tenths of its
      weight on the window's upper half in log t; the weights 1/t (the spacing of the rounds
      in log t) make it the least-squares fit of a line over log t uniformly on the window;
    * the points of one curve are cumulative sums of the same rounds, strongly dependent, so
      the residuals of the fit say nothing about its uncertainty; the runs are independent,
      and resampling them carries all of the randomness the estimate has.

    R = c n^a gives exactly a; logarithmic regret R = c log n gives 1 / log n at n (about 0.09
    at n = 10^5), linear regret 1, regret of order sqrt(n) 1/2.

    Args:
      rounds: (R,) the recorded rounds, increasing (the last one is n).
      regret: (N, R) the runs' cumulative regret at those rounds (N >= 1).
      groups: (N,) optional group (instance) of each run; resampling is within groups.
      window: the fit covers the rounds t >= n / window.
      boot: bootstrap resamples.
      seed: the resamples' seed.

    Returns:
      :class:`Exponent`; the slope and its CI are NaN where the mean regret is not positive
      over the window (log undefined).

    Raises:
      ValueError: shapes that do not match, no run, or fewer than two recorded rounds in the
        window.
    """
    rounds = np.asarray(rounds, np.float64)
    regret = np.asarray(regret, np.float64)
    if rounds.ndim != 1 or regret.ndim != 2 or regret.shape[1] != rounds.size:
        raise ValueError(f"regret must be (runs, {rounds.size}) for rounds of shape {rounds.shape}, "
                         f"got {regret.shape}")
    if regret.shape[0] == 0:
        raise ValueError("regret: no run to estimate a growth exponent from")
    if window <= 1:
        raise ValueError(f"window must be > 1, got {window}")
    inside = rounds >= rounds[-1] / window
    if inside.sum() < 2:
        raise ValueError(f"rounds: fewer than two recorded rounds in [n/{window:g}, n] (n = {rounds[-1]:g}); "
                         "record more often")
    t = rounds[inside]
    y = regret[:, inside]
    x, weights = np.log(t), 1.0 / t
    n_runs = y.shape[0]

    def slopes(means):
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.where(np.all(means > 0, axis=-1, keepdims=True), np.log(np.maximum(means, 1e-300)), np.nan)
        return _log_slopes(x, logs, weights)

    slope = float(slopes(y.mean(0)[None])[0])
    groups = np.zeros(n_runs, np.int64) if groups is None else np.asarray(groups)
    if groups.shape != (n_runs,):
        raise ValueError(f"groups must be ({n_runs},), got {groups.shape}")
    rng = np.random.default_rng(seed)
    counts = np.zeros((boot, n_runs))
    for g in np.unique(groups):
        members = np.flatnonzero(groups == g)
        counts[:, members] = rng.multinomial(members.size, np.full(members.size, 1.0 / members.size), size=boot)
    resampled = slopes(counts @ y / n_runs)
    lo, hi = (np.nanquantile(resampled, [0.025, 0.975]) if np.isfinite(resampled).any() else (np.nan, np.nan))
    return Exponent(slope=slope, lo=float(lo), hi=float(hi), first=int(t[0]), last=int(t[-1]),
                    points=int(t.size))


def below_from(rounds, mean, other) -> int | None:
    """The first recorded round from which ``mean`` stays below ``other`` to the end, or None
    when it is not below at the last round."""
    below = np.asarray(mean) < np.asarray(other)
    if not below[-1]:
        return None
    above = np.flatnonzero(~below)
    return int(rounds[above[-1] + 1]) if above.size else int(rounds[0])


# --- the report --------------------------------------------------------------------------


def _curves(out: Path):
    table = storage.read_table(out)
    curves = storage.read_curves(out)
    valid = table["valid"].to_numpy()
    return table[valid].reset_index(drop=True), np.asarray(curves["rounds"]), np.asarray(curves["regret"])[valid]


def sweep_report(out, *, boot: int = 2000) -> pd.DataFrame:
    """One row per agent of a stored sweep: ``agent``, ``seeds`` (valid runs, pooled over
    instances), ``final`` (mean final regret), ``final_lo``, ``final_hi`` (its 95% CI over the
    runs), ``exponent``, ``exponent_lo``, ``exponent_hi`` (:func:`growth_exponent` over the
    last decade), ``window`` (its first and last rounds), ``before``, ``before_lo``,
    ``before_hi`` (the same over the decade before, n/100 to n/10: whether the rate bends;
    NaN where fewer than two recorded rounds fall in it), ``growth`` (R(n) / R(n/2) of the
    mean curve) and ``e2d_below_from`` (the round from which Anytime-E2D's mean regret stays
    below the agent's; None when it ends above)."""
    table, rounds, regret = _curves(Path(out))
    half = int(np.argmin(np.abs(rounds - rounds[-1] / 2)))
    earlier = rounds <= rounds[-1] / WINDOW
    earlier_fits = np.sum(rounds[earlier] >= rounds[-1] / WINDOW ** 2) >= 2
    means = {}
    rows = []
    for cell in dict.fromkeys(table["cell"]):
        mask = (table["cell"] == cell).to_numpy()
        runs = regret[mask]
        means[cell] = runs.mean(0)
        final, ci = mean_ci95(table.loc[mask, "final_regret"].to_numpy())
        groups = table.loc[mask, "instance_seed"].to_numpy()
        e = growth_exponent(rounds, runs, groups=groups, boot=boot)
        b = (growth_exponent(rounds[earlier], runs[:, earlier], groups=groups, boot=boot) if earlier_fits
             else Exponent(np.nan, np.nan, np.nan, 0, 0, 0))
        rows.append(dict(agent=cell, seeds=int(mask.sum()), final=float(final), final_lo=float(final - ci),
                         final_hi=float(final + ci), exponent=e.slope, exponent_lo=e.lo, exponent_hi=e.hi,
                         window=[e.first, e.last], before=b.slope, before_lo=b.lo, before_hi=b.hi,
                         growth=float(means[cell][-1] / means[cell][half]) if means[cell][half] > 0 else np.nan))
    for row in rows:
        row["e2d_below_from"] = (below_from(rounds, means[FOCUS], means[row["agent"]])
                                 if FOCUS in means and row["agent"] != FOCUS else None)
    return pd.DataFrame(rows)


def _sweeps(base: Path) -> dict:
    return {env: base / f"horizons-{env}" for env in ENVIRONMENTS
            if (base / f"horizons-{env}" / storage.SUMMARY).exists()}


def report(base) -> dict:
    """``{environment: DataFrame}`` (:func:`sweep_report`) for every sweep stored under
    ``base`` (``base/horizons-<environment>``)."""
    return {env: sweep_report(out) for env, out in _sweeps(Path(base)).items()}


def _config(out: Path) -> dict:
    return json.loads((out / storage.SUMMARY).read_text())["config"]


def interval_text(x, lo, hi) -> str:
    return "—" if not np.isfinite(x) else f"{x:.2f} [{lo:.2f}, {hi:.2f}]"


def markdown(base, tables: dict | None = None) -> str:
    """The report as Markdown: one table per environment."""
    base = Path(base)
    tables = report(base) if tables is None else tables
    lines = ["# Regret over long horizons", "",
             "Final regret: mean over seeds with its 95% CI in brackets. Exponent: the slope of log R against log n over the last "
             "decade (n/10 to n) of the mean regret curve, with a 95% bootstrap CI over seeds (about 1/2 for "
             "regret of order √n, 1 for linear regret, 1/log n for logarithmic); the same over the decade "
             "before (n/100 to n/10) says whether the rate bends. Growth: R(n) / R(n/2) of the mean curve. Last "
             "column: the round from which Anytime-E2D's mean regret stays below the agent's (— where it ends "
             "above).", ""]
    for env, df in tables.items():
        cfg = _config(base / f"horizons-{env}")
        inst = len(cfg["instance_seeds"])
        count = f"{cfg['seeds']} seeds" + (f" × {inst} instances" if inst > 1 else "")
        every = "every round" if cfg["record_every"] == 1 else f"every {cfg['record_every']:,} rounds"
        lines += [f"## {env}", "", f"n = {cfg['horizon']:,}, {count}, recorded {every}.", "",
                  "| agent | final regret (95% CI) | exponent on [n/10, n] (95% CI) | on [n/100, n/10] | "
                  "R(n)/R(n/2) | Anytime-E2D below from |", "|---|---|---|---|---|---|"]
        for _, r in df.iterrows():
            below = "" if r["agent"] == FOCUS else (
                "—" if r["e2d_below_from"] is None or pd.isna(r["e2d_below_from"]) else f"{int(r['e2d_below_from']):,}")
            lines.append(f"| {r['agent']} | {r['final']:.1f} [{r['final_lo']:.1f}, {r['final_hi']:.1f}] | "
                         f"{r['exponent']:.2f} [{r['exponent_lo']:.2f}, {r['exponent_hi']:.2f}] | "
                         f"{interval_text(r['before'], r['before_lo'], r['before_hi'])} | {r['growth']:.2f} | {below} |")
        lines.append("")
    return "\n".join(lines)


def plot(base, tables: dict | None = None) -> Figure:
    """Mean regret against n on log-log axes, one panel per stored environment: per agent the
    mean over seeds with its pointwise 95% CI band, its growth exponent in the legend, the
    fitting window (the last decade) shaded, and reference slopes 1/2 and 1 over it."""
    base = Path(base)
    return plot_sweeps(_sweeps(base), report(base) if tables is None else tables)


def plot_sweeps(sweeps: dict, tables: dict) -> Figure:
    """The figure of :func:`plot` for stored sweeps ``{name: directory}`` and their
    :func:`sweep_report` tables ``{name: DataFrame}``."""
    fig = Figure(figsize=(5.2 * max(1, len(sweeps)), 5.2), dpi=100)
    axes = fig.subplots(1, max(1, len(sweeps)), squeeze=False)[0]
    for ax, (env, out) in zip(axes, sweeps.items()):
        table, rounds, regret = _curves(out)
        df = tables[env].set_index("agent")
        lows = []
        colours = label_colours(table["cell"])
        for cell in dict.fromkeys(table["cell"]):
            runs = regret[(table["cell"] == cell).to_numpy()]
            mean, half = mean_ci95(runs)
            r = df.loc[cell]
            colour = colours[cell]
            keep = mean > 0
            label = (f"{cell}: {r['exponent']:.2f} [{r['exponent_lo']:.2f}, {r['exponent_hi']:.2f}]"
                     if np.isfinite(r["exponent"]) else f"{cell}: zero regret (not drawn)")
            ax.plot(rounds[keep], mean[keep], color=colour, lw=1.5, label=label)
            ax.fill_between(rounds[keep], np.maximum(mean - half, mean * 1e-3)[keep], (mean + half)[keep],
                            color=colour, alpha=0.2, lw=0)
            inside = rounds >= rounds[-1] / WINDOW
            if np.all(mean[inside] > 0):
                lows.append(mean[inside][0])
        n = rounds[-1]
        ax.axvspan(n / WINDOW, n, color="0.5", alpha=0.08, lw=0)
        if lows:
            x = np.array([n / WINDOW, n])
            y0 = min(lows) / 4
            ax.plot(x, y0 * (x / x[0]) ** 0.5, ls="--", color="0.35", lw=1, label="slope 1/2")
            ax.plot(x, y0 * (x / x[0]), ls=":", color="0.35", lw=1.2, label="slope 1")
        ax.set_xscale("log")
        ax.set_yscale("log")
        cfg = _config(out)
        inst = len(cfg["instance_seeds"])
        count = f"{cfg['seeds']} seeds" + (f" × {inst} instances" if inst > 1 else "")
        ax.set_title(f"{env}: n = {cfg['horizon']:,}, {count}", fontsize=10)
        ax.set_xlabel("round n")
        ax.grid(alpha=0.3, which="major")
        ax.grid(alpha=0.08, which="minor")
        ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2,
                  title="exponent on [n/10, n] (shaded) [95% CI]", title_fontsize=7.5)
    axes[0].set_ylabel("mean cumulative pseudo-regret")
    fig.tight_layout()
    return fig


def strict_row(row: dict) -> dict:
    """A row with its NaNs as None (strict JSON: ``null``)."""
    return {k: None if isinstance(v, float) and not np.isfinite(v) else v for k, v in row.items()}


def write_report(base) -> Path:
    """Writes ``horizons.md``, ``horizons.json`` and the figure ``horizons.png`` / ``.pdf``
    under ``base``; returns the Markdown file's path."""
    base = Path(base)
    tables = report(base)
    path = base / "horizons.md"
    text = markdown(base, tables)
    storage.atomic_write(path, lambda f: f.write(text.encode()))
    storage.write_json(base / "horizons.json", {
        env: {"config": {k: _config(base / f"horizons-{env}")[k] for k in ("horizon", "seeds", "instance_seeds",
                                                                             "record_every")},
              "agents": [strict_row(row) for row in df.to_dict(orient="records")]}
        for env, df in tables.items()})
    save(plot(base, tables), base / "horizons", write=storage.atomic_write)
    return path
