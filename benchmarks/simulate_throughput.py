"""Simulator throughput of the baselines: seed-rounds per second against the number of seeds.

What: UCB and TS on the paper's Experiment-1 instance (revealing semi-bandit, d=3, K=10),
float32, horizon ``--horizon`` (default 1,000) recorded every 100 rounds, at 1, 100, 1,000
and 10,000 seeds in one jitted ``vmap`` call (``rollout_program``, what ``simulate``
compiles). Compile time is measured apart (ahead-of-time ``lower().compile()``); run time
is the median of ``--repeats`` calls of the compiled function.

Run:  python benchmarks/simulate_throughput.py [--horizon 1000] [--seeds 1,100,1000,10000]
          [--repeats 3] [--json out.json]
  quick check:  python benchmarks/simulate_throughput.py --seeds 1,4 --horizon 20 --repeats 1

Typical printout (one NVIDIA H200, jax 0.11.2, ``--seeds 2048,32768 --horizon 200``;
``results/h200/simulate_throughput.json``)::

    agent   seeds  compile_s  run_s(median)  seed_rounds/s
    ucb      2048       1.23         0.0356     11,500,739
    ucb     32768       1.35         0.0270    242,671,307
    ts       2048       1.51         0.0356     11,521,519
    ts      32768       1.43         0.0238    275,624,311
"""
from __future__ import annotations

import argparse
import json
import platform
import time

import jax
import numpy as np

from e2d_jax.agents.ts import thompson_sampling
from e2d_jax.agents.ucb import ucb
from e2d_jax.envs import linear
from e2d_jax.sim.simulate import rollout_program


def measure(agent, params, seeds, horizon, record_every, repeats):
    fn, args = rollout_program(params, agent, horizon=horizon, record_every=record_every, lanes=seeds)
    t0 = time.perf_counter()
    compiled = fn.lower(*args).compile()
    compile_s = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
    run_s = float(np.median(times))
    return {"seeds": seeds, "compile_s": compile_s, "run_s": run_s, "seed_rounds_per_s": seeds * horizon / run_s}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--horizon", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seeds", default="1,100,1000,10000")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    params = linear.semi_bandit(jax.random.key(0), 3, 10)
    rows = []
    print(f"device: {jax.devices()}  platform: {platform.platform()}  jax {jax.__version__}")
    print(f"{'agent':6s} {'seeds':>6s} {'compile_s':>10s} {'run_s(median)':>14s} {'seed_rounds/s':>14s}")
    for name, agent in (("ucb", ucb()), ("ts", thompson_sampling())):
        for s in (int(x) for x in args.seeds.split(",")):
            r = measure(agent, params, s, args.horizon, 100, args.repeats)
            r["agent"] = name
            rows.append(r)
            print(f"{name:6s} {s:6d} {r['compile_s']:10.2f} {r['run_s']:14.4f} {r['seed_rounds_per_s']:14,.0f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": str(jax.devices()), "platform": platform.platform(), "jax": jax.__version__,
                       "horizon": args.horizon, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
