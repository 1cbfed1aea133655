"""How many of an E2D agent's rounds are flagged at the library's defaults?

For Exp. 1 (revealing semi-bandit d = 3, K = 10, n = 2,000), Exp. 2 (d = 30, K = 10,
n = 1,000) and every family of the instance zoo but the semi-bandit (instance 0, n = 2,000),
runs Anytime-E2D (the paper's eps_t^2 = d/t on the two experiments) and fixed-horizon E2D tuned
for the horizon, each at its default solver, over ``--seeds`` seeds, and prints per agent the
fraction of all rounds flagged (status ``MAX_ITER``: the certified gap above the solver's
tolerance), the pooled certified relative gap's quantiles (upper bin edges of the rollout's
histogram) and the mean final regret with its 95% CI. Works on any checkout that has ``registry.build_instance``
and ``registry.agent_factory`` (``PYTHONPATH=<checkout>``), so two versions can be compared.

Run::

    python benchmarks/flagged_rounds.py [--cases exp1,exp2,...] [--agents anytime-e2d,e2d] [--seeds 64]
        [--first-seed 0] [--e2d-exact] [--json FILE]

``--e2d-exact`` solves E2D's rounds (linear models) to a certified 1e-6 (30 interior-point
iterations a round; flagged then means a gap above 1e-6): the regret of the exact algorithm,
to compare a default's with.
"""
from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np


def cases():
    from e2d_jax.paper import zoo

    out = {"exp1": ("semi-bandit", {"d": 3, "arms": 10}, 2000), "exp2": ("semi-bandit", {"d": 30, "arms": 10}, 1000)}
    for fam, entry in zoo.FAMILIES.items():
        if fam != "semi-bandit":
            out[fam] = (entry[0], entry[1], 2000)
    return out


def _ci95(x):
    """Normal 95% CI of the mean over seeds."""
    half = 1.96 * float(np.std(x, ddof=1)) / np.sqrt(len(x))
    return [float(np.mean(x)) - half, float(np.mean(x)) + half]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default="all", help="comma-separated cases (exp1, exp2, zoo families) or all")
    parser.add_argument("--agents", default="anytime-e2d,e2d", help="comma-separated: anytime-e2d, e2d")
    parser.add_argument("--seeds", type=int, default=64)
    parser.add_argument("--first-seed", type=int, default=0, help="seeds first_seed, ..., first_seed + seeds - 1")
    parser.add_argument("--e2d-exact", action="store_true",
                        help="E2D on linear models: InteriorPoint(maxiter=30, rtol=1e-6) instead of the default")
    parser.add_argument("--json", default=None, help="write the rows as JSON")
    args = parser.parse_args(argv)

    import jax

    import e2d_jax as e2d
    from e2d_jax.experiments import registry
    try:
        from e2d_jax.sim.summaries import hist_quantile
    except ImportError:  # versions without the histogram's quantiles: those columns are NaN
        def hist_quantile(hist, q):
            return float("nan")

    table = cases()
    names = list(table) if args.cases == "all" else args.cases.split(",")
    rows = []
    for name in names:
        env, opts, n = table[name]
        _, params, family = registry.build_instance(env, 0, opts)
        for label in args.agents.split(","):
            options = {"eps2_schedule": "dim"} if name.startswith("exp") and label == "anytime-e2d" else {}
            if args.e2d_exact and label == "e2d" and family == "linear":
                from e2d_jax.dec import solvers
                options["solver"] = solvers.InteriorPoint(maxiter=30, rtol=1e-6)
            agent = registry.agent_factory(label, horizon=n, options=options, family=family)()
            t0 = time.perf_counter()
            sim = e2d.simulate(params, agent, horizon=n, num_seeds=args.seeds, first_seed=args.first_seed,
                               record_every=n)
            status = np.asarray(sim.result.solver.status_counts).sum(0)
            hist = np.asarray(sim.result.solver.gap_hist).sum(0)
            row = dict(case=name, agent=label, horizon=n, seeds=args.seeds, first_seed=args.first_seed,
                       flagged=float(status[e2d.Status.MAX_ITER] / status.sum()),
                       rel_gap_p50=float(hist_quantile(hist, 0.5)), rel_gap_p90=float(hist_quantile(hist, 0.9)),
                       rel_gap_p99=float(hist_quantile(hist, 0.99)),
                       regret=float(np.asarray(sim.result.regret)[:, -1].mean()),
                       regret_ci95=_ci95(np.asarray(sim.result.regret)[:, -1]),
                       seconds=time.perf_counter() - t0)
            rows.append(row)
            print(f"{name:20s} {label:12s} flagged={row['flagged']:.4f} rel_gap_p50={row['rel_gap_p50']:.1e} "
                  f"p90={row['rel_gap_p90']:.1e} p99={row['rel_gap_p99']:.1e} regret={row['regret']:.1f} "
                  f"[{row['regret_ci95'][0]:.1f}, {row['regret_ci95'][1]:.1f}] "
                  f"t={row['seconds']:.0f}s", flush=True)
    if args.json:
        meta = dict(date=time.strftime("%Y-%m-%d"), machine=platform.platform(), jax=jax.__version__,
                    e2d_jax=getattr(e2d, "__version__", None))
        with open(args.json, "w") as f:
            json.dump(dict(meta=meta, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
