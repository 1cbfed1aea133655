"""Non-finite decisions over many seed-rounds, every agent, float32.

What: for each agent and each instance family (random and degenerate), runs seeds x horizon
seed-rounds in float32 through ``e2d_jax.simulate`` (4 instances vmapped, the default seeds
per call) and counts the rounds whose decision was non-finite (status ``NONFINITE`` in
``RolloutResult.solver.status_counts``; such a round keeps the previous sampling
distribution and makes its seed invalid), the seeds with an invalid round
(``RolloutResult.invalid_rounds`` > 0: non-finite or out-of-range actions) and the seeds
whose regret is not finite.

Families (all through the registry's builders, instance seeds 0..3):
  linear:  semi-bandit d=3 K=10 (Exp. 1 shape), semi-bandit d=30 K=10 (Exp. 2 shape),
           semi-bandit-authors d=30 K=10 (unnormalised features), mab K=10;
  degenerate: semi-bandit d=3 K=2, linear-bandit d=8 K=4 (d > K);
  finite:  finite-mab, finite-revealing (their agents are ~100x slower: fewer seed-rounds).
Linear agents: Anytime-E2D with divergence squared and kl, E2D (squared), UCB, TS; finite:
Anytime-E2D, E2D, TS on the class (ts-finite), UCB, TS.

Run:  python benchmarks/nonfinite_count.py [--seed-rounds 10000000] [--finite-seed-rounds 200000]
          [--finite-horizon 300] [--linear-horizon N] [--only linear|finite] [--families LABEL,...]
          [--agents NAME,...] [--json out.json]
  quick check:  python benchmarks/nonfinite_count.py --seed-rounds 400 --linear-horizon 50 \\
                    --finite-seed-rounds 400 --finite-horizon 20 --families semi-bandit-d3-K10,finite-mab-K5

Prints one line per (family, agent): seed-rounds run, non-finite rounds, invalid seeds.
Typical printout (2-core shared x86-64 CPU, ``--only finite --agents ts-finite,ucb,ts
--finite-seed-rounds 10000000``; ``results/cpu-2core/nonfinite_finite_baselines.log``)::

    finite-mab           d=None K=5 ts-finite    {}                             10,000,800 seed-rounds  non-finite rounds 0  invalid seeds 0  (87 s)
    finite-mab           d=None K=5 ucb          {}                             10,000,800 seed-rounds  non-finite rounds 0  invalid seeds 0  (166 s)
    finite-mab           d=None K=5 ts           {}                             10,000,800 seed-rounds  non-finite rounds 0  invalid seeds 0  (67 s)
    finite-revealing     d=None K=10 ts-finite    {}                             10,000,800 seed-rounds  non-finite rounds 0  invalid seeds 0  (541 s)
    finite-revealing     d=None K=10 ucb          {}                             10,000,800 seed-rounds  non-finite rounds 0  invalid seeds 0  (315 s)
    finite-revealing     d=None K=10 ts           {}                             10,000,800 seed-rounds  non-finite rounds 0  invalid seeds 0  (197 s)
    total: 60,004,800 seed-rounds, 0 non-finite rounds (x86_64)
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import time

import numpy as np

LINEAR = [("semi-bandit", 3, 10, 2000), ("semi-bandit", 30, 10, 1000), ("semi-bandit-authors", 30, 10, 1000),
          ("mab", None, 10, 1000), ("semi-bandit", 3, 2, 1000), ("linear-bandit", 8, 4, 1000)]
LINEAR_AGENTS = [("anytime-e2d", {"divergence": "squared"}), ("e2d", {"divergence": "squared"}),
                 ("anytime-e2d", {"divergence": "kl"}), ("ucb", {}), ("ts", {})]
FINITE = [("finite-mab", 5, 300), ("finite-revealing", 10, 300)]
FINITE_AGENTS = [("anytime-e2d", {}), ("e2d", {}), ("ts-finite", {}), ("ucb", {}), ("ts", {})]


def run(env_name, d, arms, horizon, agents, seed_rounds, instances=4):
    from e2d_jax.experiments import registry
    from e2d_jax.sim.simulate import simulate
    from e2d_jax.types import Status

    options = {k: v for k, v in (("d", d), ("arms", arms)) if v is not None}
    _, params, family = registry.build_instances(env_name, list(range(instances)), options, dtype="float32")
    seeds = max(1, math.ceil(seed_rounds / (horizon * instances)))
    rows = []
    for name, opts in agents:
        label = registry.agent_label(*registry.parse_agent(name))
        agent = registry.agent_factory(name, horizon=horizon, options=opts, family=family)()
        t = time.perf_counter()
        # Seeds per call: simulate's default (lanes_for the device, divided among the instances).
        sim = simulate(params, agent, horizon=horizon, num_seeds=seeds, record_every=horizon, instances=True)
        res = sim.result
        counts = np.asarray(res.solver.status_counts)
        nonfinite = int(counts[..., Status.NONFINITE].sum())
        invalid = np.asarray(res.invalid_rounds)
        bad_regret = int((~np.isfinite(np.asarray(res.regret)[..., -1])).sum())
        rows.append(dict(env=env_name, d=d, arms=arms, horizon=horizon, agent=label, options=opts,
                         seed_rounds=int(seeds * horizon * instances), nonfinite_rounds=nonfinite,
                         invalid_rounds=int(invalid.sum()), invalid_seeds=int((invalid > 0).sum()),
                         nonfinite_regret_seeds=bad_regret, seconds=time.perf_counter() - t))
        r = rows[-1]
        print(f"{env_name:20s} d={d} K={arms} {label:12s} {str(opts):28s} {r['seed_rounds']:>12,d} seed-rounds  "
              f"non-finite rounds {nonfinite}  invalid seeds {r['invalid_seeds']}  ({r['seconds']:.0f} s)", flush=True)
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed-rounds", type=int, default=10_000_000, help="per linear (family, agent)")
    p.add_argument("--finite-seed-rounds", type=int, default=200_000, help="per finite (family, agent)")
    p.add_argument("--finite-horizon", type=int, default=None,
                   help="horizon of the finite families (default 300); fixed-horizon E2D tunes lambda per seed "
                        "in init, so a longer horizon (fewer seeds) spends less of the count there")
    p.add_argument("--linear-horizon", type=int, default=None,
                   help="horizon of every linear family (default: 2000 for semi-bandit d=3 K=10, 1000 for the others)")
    p.add_argument("--only", choices=["linear", "finite"], default=None)
    p.add_argument("--families", default=None,
                   help="comma-separated family labels to run (default all), e.g. semi-bandit-d3-K10,mab-K10")
    p.add_argument("--agents", default=None, help="comma-separated agent names to run (default all), e.g. ucb,ts")
    p.add_argument("--json", default=None, help="rows written after every family (a stopped run keeps them)")
    args = p.parse_args()
    todo = []
    if args.only in (None, "linear"):
        todo += [(env_name, d, k, args.linear_horizon or n, LINEAR_AGENTS, args.seed_rounds)
                 for env_name, d, k, n in LINEAR]
    if args.only in (None, "finite"):
        todo += [(env_name, None, k, args.finite_horizon or n, FINITE_AGENTS, args.finite_seed_rounds)
                 for env_name, k, n in FINITE]
    if args.families:
        wanted = set(args.families.split(","))
        unknown = wanted - {family_label(*t[:3]) for t in todo}
        if unknown:
            p.error(f"--families: unknown {sorted(unknown)}; known: {[family_label(*t[:3]) for t in todo]}")
        todo = [t for t in todo if family_label(*t[:3]) in wanted]
    if args.agents:
        names = set(args.agents.split(","))
        known = {n for t in todo for n, _ in t[4]}
        if names - known:
            p.error(f"--agents: unknown {sorted(names - known)}; known: {sorted(known)}")
        todo = [t[:4] + ([a for a in t[4] if a[0] in names],) + t[5:] for t in todo]
    rows = []
    for t in todo:
        rows += run(*t)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"rows": rows, "machine": platform.platform(), "versions": _versions()}, f, indent=1)
    total = sum(r["nonfinite_rounds"] for r in rows)
    print(f"total: {sum(r['seed_rounds'] for r in rows):,d} seed-rounds, {total} non-finite rounds "
          f"({platform.processor() or platform.machine()})")


def _versions() -> dict:
    import jax

    import e2d_jax

    return {"e2d_jax": e2d_jax.__version__, "jax": jax.__version__, "python": platform.python_version()}


def family_label(env_name, d, arms) -> str:
    return env_name + (f"-d{d}" if d else "") + f"-K{arms}"


if __name__ == "__main__":
    main()
