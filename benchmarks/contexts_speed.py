"""A contextual round against a round of the same (d, K) without contexts.

What: for each agent (at its defaults), the compiled program ``simulate`` runs (``rollout_program``,
``--seeds`` runs side by side) on a linear bandit without contexts (``linear-bandit``) and on
contextual linear bandits of the same d and K (``contextual-linear`` with ``--contexts`` contexts
of fixed features, and with ``--contexts 0``-style fresh features every round when
``--fresh``); both programs are compiled first, then called alternately ``--repeats`` times in
this one process, so that the machine's load falls on both alike. Reported per agent and
environment: seed-rounds/s (median and range of the calls) and the ratio of the contextual
round's cost to the round without contexts (median of the per-repeat ratios, and their range).

Run:  PYTHONPATH=. python benchmarks/contexts_speed.py [--agents ucb,ts,ids,anytime-e2d,e2d,squarecb,epsilon-greedy]
          [--d 3] [--arms 10] [--contexts 10] [--fresh] [--seeds 1000] [--horizon 200] [--repeats 7]
          [--json out.json]
  quick check:  PYTHONPATH=. python benchmarks/contexts_speed.py --agents ucb --seeds 8 --horizon 10 --repeats 1
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings

import jax
import numpy as np

from e2d_jax.agents.e2d import anytime_e2d, fixed_horizon_e2d
from e2d_jax.agents.ids import ids
from e2d_jax.agents.oracle import epsilon_greedy, squarecb
from e2d_jax.agents.ts import thompson_sampling
from e2d_jax.agents.ucb import ucb
from e2d_jax.experiments import registry
from e2d_jax.sim.simulate import rollout_program

AGENTS = {
    "anytime-e2d": lambda horizon: anytime_e2d(),
    "e2d": lambda horizon: fixed_horizon_e2d(horizon=horizon),
    "ids": lambda horizon: ids(),
    "ucb": lambda horizon: ucb(),
    "ts": lambda horizon: thompson_sampling(),
    "squarecb": lambda horizon: squarecb(),
    "epsilon-greedy": lambda horizon: epsilon_greedy(),
}


def _program(env: str, options: dict, agent, horizon: int, seeds: int):
    _, params, _ = registry.build_instance(env, 0, options, "float32")
    fn, args = rollout_program(params, agent, horizon=horizon, record_every=horizon, lanes=seeds)
    compiled = fn.lower(*args).compile()
    jax.block_until_ready(compiled(*args))  # warm
    return compiled, args


def measure(agent_name: str, envs: dict, *, horizon: int, seeds: int, repeats: int) -> list:
    """The rows of one agent: every environment's calls, alternating."""
    agent = AGENTS[agent_name](horizon)
    programs = {name: _program(env, options, agent, horizon, seeds) for name, (env, options) in envs.items()}
    times = {name: [] for name in programs}
    for _ in range(repeats):
        for name, (compiled, args) in programs.items():
            t0 = time.perf_counter()
            jax.block_until_ready(compiled(*args))
            times[name].append(time.perf_counter() - t0)
    base = np.asarray(times["no contexts"])
    rows = []
    for name, ts in times.items():
        ts = np.asarray(ts)
        rate = seeds * horizon / ts
        ratio = ts / base
        rows.append({"agent": agent_name, "env": envs[name][0], "case": name, "options": envs[name][1],
                     "seeds": seeds, "horizon": horizon, "runs_s": ts.tolist(),
                     "seed_rounds_per_s": float(np.median(rate)), "rate_range": [float(rate.min()), float(rate.max())],
                     "cost_ratio": float(np.median(ratio)), "ratio_range": [float(ratio.min()), float(ratio.max())]})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", default=",".join(AGENTS))
    ap.add_argument("--d", type=int, default=3)
    ap.add_argument("--arms", type=int, default=10)
    ap.add_argument("--contexts", type=int, default=10)
    ap.add_argument("--fresh", action="store_true", help="also fresh features every round (contexts=0)")
    ap.add_argument("--seeds", type=int, default=1000)
    ap.add_argument("--horizon", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    size = {"d": args.d, "arms": args.arms}
    envs = {"no contexts": ("linear-bandit", size),
            f"{args.contexts} contexts": ("contextual-linear", {**size, "contexts": args.contexts})}
    if args.fresh:
        envs["fresh features"] = ("contextual-linear", {**size, "contexts": 0})
    print(f"device: {jax.devices()[0]}  platform: {platform.platform()}  jax {jax.__version__}  d {args.d}  "
          f"K {args.arms}  seeds {args.seeds}  horizon {args.horizon}  repeats {args.repeats}", flush=True)
    print(f"{'agent':15s} {'case':16s} {'seed-rounds/s':>14s} {'range':>23s} {'cost ratio':>11s} {'range':>13s}",
          flush=True)
    rows = []
    for agent in args.agents.split(","):
        for r in measure(agent, envs, horizon=args.horizon, seeds=args.seeds, repeats=args.repeats):
            rows.append(r)
            lo, hi = r["rate_range"]
            print(f"{agent:15s} {r['case']:16s} {r['seed_rounds_per_s']:14,.0f} {lo:11,.0f}-{hi:<11,.0f} "
                  f"{r['cost_ratio']:11.2f} {r['ratio_range'][0]:6.2f}-{r['ratio_range'][1]:<6.2f}", flush=True)
    report = {"meta": {"device": str(jax.devices()[0]), "platform": platform.platform(), "jax": jax.__version__,
                       "date": time.strftime("%Y-%m-%d"),
                       "args": {k: (os.path.basename(v) if k == "json" and v else v) for k, v in vars(args).items()}},
              "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return report


if __name__ == "__main__":
    main()
