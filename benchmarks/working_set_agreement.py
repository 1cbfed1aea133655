"""Anytime-E2D with mirror-prox on a working set (the default above
``e2d_jax.dec.solvers.WORKING_SET_MIN_ACTIONS`` actions) against plain mirror-prox on every
action (``Saddle(working_set=K)``), both at the tracking budget's tolerance: the same instance,
the same seeds.

Both are certified to the same tolerance every round, so both run the algorithm; the final
regrets should agree within their 95% confidence intervals, and the flagged rounds and the
certified gaps' quantiles say how each round ended.

Run:  PYTHONPATH=. python benchmarks/working_set_agreement.py --env linear-bandit --d 10 \
          --arms 1000 --horizon 200 --seeds 64 [--json out.json]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time

import jax

import e2d_jax as e2d
from e2d_jax.dec import solvers as S

ENVS = {"linear-bandit": e2d.linear_bandit, "semi-bandit": e2d.semi_bandit}
COLUMNS = ("final_regret_mean", "ci95_low", "ci95_high", "flagged_fraction", "rel_gap_p50",
           "rel_gap_p90", "rel_gap_p99", "seed_rounds_per_second")


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", default="linear-bandit", choices=sorted(ENVS))
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--arms", type=int, default=1000)
    ap.add_argument("--horizon", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=64)
    ap.add_argument("--instance-seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    params = ENVS[args.env](jax.random.PRNGKey(args.instance_seed), args.d, args.arms)
    solver = S.TRACKING
    m = solver.set_size(args.arms, params.model.span.features.shape[-1])
    variants = {f"working set of {m}": solver, "every action": dataclasses.replace(solver, working_set=args.arms)}
    rows = {}
    print(f"{args.env} d = {args.d}, K = {args.arms}, horizon {args.horizon}, {args.seeds} seeds "
          f"({jax.devices()[0]}, {platform.platform()}, jax {jax.__version__})")
    for name, sol in variants.items():
        start = time.perf_counter()
        run = e2d.simulate(params, e2d.anytime_e2d(solver=sol), horizon=args.horizon,
                           num_seeds=args.seeds, label=name)
        row = e2d.Results([run]).summary().iloc[0]
        rows[name] = {c: float(row[c]) for c in COLUMNS}
        rows[name]["wall_s"] = time.perf_counter() - start
        r = rows[name]
        print(f"  {name:>20}: final regret {r['final_regret_mean']:.2f} [{r['ci95_low']:.2f}, "
              f"{r['ci95_high']:.2f}], flagged {100 * r['flagged_fraction']:.2f}%, certified gap "
              f"p50/p90/p99 {r['rel_gap_p50']:.3f}/{r['rel_gap_p90']:.3f}/{r['rel_gap_p99']:.3f}, "
              f"{r['seed_rounds_per_second']:,.0f} seed-rounds/s, {r['wall_s']:.0f} s", flush=True)
    out = {"meta": {**vars(args), "device": str(jax.devices()[0]), "jax": jax.__version__,
                    "platform": platform.platform()}, "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()
