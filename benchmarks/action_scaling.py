"""How a round's cost grows with the number of actions K: every agent at its defaults.

What: Anytime-E2D, E2D (tuned for the horizon), IDS, UCB and TS at their defaults on the
revealing semi-bandit and a plain linear bandit (``semi-bandit`` and ``linear-bandit``, instance
seed 0, float32 unless ``--dtype``), for each d in ``--dims`` and K in ``--arms``: the compiled program ``simulate``
runs (``rollout_program``: ``--seeds`` runs side by side, the simulator's lanes on CPU), its
compile time (ahead of time, ``lower().compile()``), the median of ``--repeats`` timed calls as
seed-rounds/s, the DEC solver's iterations per round and the fraction of flagged rounds (their
certified gap above the solver's tolerance), and the compiled program's memory (XLA's
``memory_analysis``: arguments, outputs and temporaries) per seed. For each agent, env and d,
the fitted exponent of the cost per seed-round in K (least squares on log-log, over the K
measured). A configuration is skipped when its projected time (the last K's run time grown at
the measured rate, at least linearly, and twice its compile time) exceeds ``--max-seconds``,
and recorded as out of memory (with larger K skipped) when XLA cannot allocate it.

Run:  PYTHONPATH=. python benchmarks/action_scaling.py [--envs semi-bandit,linear-bandit]
          [--dims 3,10,30] [--arms 10,100,1000,10000] [--agents anytime-e2d,e2d,ids,ucb,ts]
          [--horizon 20] [--seeds 64] [--repeats 3] [--max-seconds 300] [--dtype float32] [--json out.json]
          [--figure out.png]
  figure of stored results:  PYTHONPATH=. python benchmarks/action_scaling.py --plot a.json,b.json --figure out.png
          (a later file's row replaces an earlier one of the same env, d, K and agent)
  quick check:  PYTHONPATH=. python benchmarks/action_scaling.py --dims 3 --arms 10,30 --agents ucb,ts --repeats 1

K is the environment's ``arms`` option: the number of actions, except on ``dueling`` and
``preference``, whose K base arms make K^2 pair actions (the JSON rows' ``actions``). An
E2D-type agents use gaps Delta_f (their default)
where the reward level is observable and gaps Delta where it is not (``dueling-localized``). An
environment without a ``d`` or ``arms`` option (``dueling-localized`` has no ``arms``, ``laser``
neither) is built at its own size; its rows name the actions it has.

Printout columns: env, d, K, agent, compile_s, seed-rounds/s (median of the repeats), it/round
(the solver's mean iterations per round; '-' for agents without a DEC), flagged (fraction of
rounds), MB/seed (the compiled program's memory over its lanes), then one line per agent with
the exponent: cost per seed-round ~ K^p from the smallest to the largest K measured.
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
from e2d_jax.agents.ts import thompson_sampling
from e2d_jax.agents.ucb import ucb
from e2d_jax.envs.linear import reward_level_observable
from e2d_jax.experiments import registry
from e2d_jax.types import Status

try:
    from e2d_jax.sim.simulate import rollout_program
except ImportError:  # e2d_jax 0.4.0, measured as the baseline of a comparison
    from e2d_jax.sim.rollout import run_keys
    from e2d_jax.sim.simulate import make_batched_rollout

    def rollout_program(params, agent, *, horizon, record_every, lanes):
        fn = make_batched_rollout(registry.environment_of(params), agent, horizon, record_every, lanes,
                                  devices=jax.devices()[:1])
        return fn, (run_keys(0, np.arange(lanes)), params, {})

AGENTS = {
    "anytime-e2d": lambda horizon, gap_type: anytime_e2d(gap_type=gap_type),
    "e2d": lambda horizon, gap_type: fixed_horizon_e2d(horizon=max(horizon, 2), gap_type=gap_type),
    "ids": lambda horizon, gap_type: ids(),
    "ucb": lambda horizon, gap_type: ucb(),
    "ts": lambda horizon, gap_type: thompson_sampling(),
}
try:  # the regression-oracle baselines (absent from older versions measured as baselines)
    from e2d_jax.agents.oracle import epsilon_greedy, squarecb

    AGENTS.update({"squarecb": lambda horizon, gap_type: squarecb(),
                   "epsilon-greedy": lambda horizon, gap_type: epsilon_greedy()})
except ImportError:
    pass


def measure(env: str, d: int, k: int, agent_name: str, *, horizon: int, seeds: int, repeats: int,
            dtype: str = "float32") -> dict:
    """One configuration's row (see the module docstring)."""
    accepted = registry.resolve_env(env).options()
    options = {name: value for name, value in {"d": d, "arms": k}.items() if accepted is None or name in accepted}
    _, params, _ = registry.build_instance(env, 0, options, dtype)
    # Gaps Delta_f (the agents' default) where the reward level is observable, else gaps Delta.
    gap_type = "delta_f" if reward_level_observable(params.model.span) else "delta"
    agent = AGENTS[agent_name](horizon, gap_type)
    fn, args = rollout_program(params, agent, horizon=horizon, record_every=1, lanes=seeds)
    t0 = time.perf_counter()
    compiled = fn.lower(*args).compile()
    compile_s = time.perf_counter() - t0
    memory = compiled.memory_analysis()
    total_bytes = (memory.argument_size_in_bytes + memory.output_size_in_bytes + memory.temp_size_in_bytes
                   if memory is not None else float("nan"))
    out = jax.block_until_ready(compiled(*args))  # warm
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
    run_s = float(np.median(times))
    info = out.info
    iterations = float(np.mean(np.asarray(info.iterations))) if hasattr(info, "iterations") else None
    counts = np.asarray(out.solver.status_counts).sum(axis=0)
    flagged = float(counts[Status.MAX_ITER] / counts.sum()) if hasattr(info, "gap") else None
    return {"env": env, "d": d, "K": k, "actions": int(params.model.features.shape[-2]), "agent": agent_name,
            "horizon": horizon, "seeds": seeds, "dtype": dtype, "gap_type": gap_type,
            "compile_s": compile_s, "run_s": run_s, "runs": [float(t) for t in times],
            "seed_rounds_per_s": seeds * horizon / run_s, "iterations_per_round": iterations, "flagged": flagged,
            "mb_per_seed": total_bytes / seeds / 2**20, "invalid_rounds": int(np.asarray(out.invalid_rounds).sum())}


def exponent(rows: list) -> float | None:
    """p in cost per seed-round ~ K^p, least squares on log-log over the rows' K."""
    if len(rows) < 2:
        return None
    k = np.log([r["K"] for r in rows])
    cost = np.log([1.0 / r["seed_rounds_per_s"] for r in rows])
    return float(np.polyfit(k, cost, 1)[0])


def _fmt(x, spec):
    return "-".rjust(int(spec.split(".")[0])) if x is None else format(x, spec)


def figure(rows: list, path: str) -> None:
    """seed-rounds/s against K, one panel per (env, d): a row of panels per environment, a
    column per d, one line per agent (log-log)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    envs = sorted({r["env"] for r in rows})
    dims = sorted({r["d"] for r in rows})
    fig = Figure(figsize=(3.4 * len(dims), 3.0 * len(envs)), layout="constrained")
    grid = np.atleast_2d(fig.subplots(len(envs), len(dims), sharex=True, sharey=True, squeeze=False))
    axes = []
    for (i, env), (j, d) in ((a, b) for a in enumerate(envs) for b in enumerate(dims)):
        ax = grid[i, j]
        if not any((r["env"], r["d"]) == (env, d) for r in rows):
            ax.set_visible(False)
            continue
        axes.append(ax)
        for agent in AGENTS:
            sel = sorted((r for r in rows if (r["env"], r["d"], r["agent"]) == (env, d, agent)), key=lambda r: r["K"])
            if sel:
                ax.plot([r["K"] for r in sel], [r["seed_rounds_per_s"] for r in sel], "o-", label=agent, ms=3)
        ks = sorted({r["K"] for r in rows if (r["env"], r["d"]) == (env, d)})
        if ks:  # the slope of a cost linear in K, through the first point of the fastest agent's line
            top = max(r["seed_rounds_per_s"] for r in rows if (r["env"], r["d"], r["K"]) == (env, d, ks[0]))
            ax.plot(ks, [top * ks[0] / k for k in ks], "k:", lw=1, label="∝ 1/K")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{env}, d={d}", fontsize=9)
        ax.set_xlabel("actions K")
        ax.grid(alpha=0.3)
    for row in grid:
        row[0].set_ylabel("seed-rounds/s")
    axes[-1].legend(fontsize=7)
    fig.savefig(path, dpi=150)


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--envs", default="semi-bandit,linear-bandit")
    ap.add_argument("--dims", default="3,10,30")
    ap.add_argument("--arms", default="10,100,1000,10000")
    ap.add_argument("--agents", default="anytime-e2d,e2d,ids,ucb,ts")
    ap.add_argument("--horizon", type=int, default=20)
    ap.add_argument("--seeds", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-seconds", type=float, default=300.0,
                    help="skip a configuration whose projected compile and run time exceeds this")
    ap.add_argument("--dtype", default="float32", choices=("float32", "float64"),
                    help="float64 for games whose observable span float32 cuts (laser)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--figure", default=None)
    ap.add_argument("--plot", default=None,
                    help="comma-separated JSON files of earlier runs: draw --figure from their rows, measure nothing")
    args = ap.parse_args(argv)
    if args.plot:
        if not args.figure:
            ap.error("--plot needs --figure")
        # A later file's row replaces an earlier one of the same env, d, K and agent.
        latest = {}
        for path in args.plot.split(","):
            with open(path) as f:
                latest.update({(r["env"], r["d"], r["K"], r["agent"]): r for r in json.load(f)["rows"]})
        rows = list(latest.values())
        figure(rows, args.figure)
        return {"rows": rows}
    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    warnings.simplefilter("ignore")
    print(f"device: {jax.devices()[0]}  platform: {platform.platform()}  jax {jax.__version__}  horizon "
          f"{args.horizon}  seeds {args.seeds}", flush=True)
    print(f"{'env':14s} {'d':>3s} {'K':>6s} {'agent':12s} {'compile_s':>9s} {'seed-rounds/s':>14s} {'it/round':>9s} "
          f"{'flagged':>8s} {'MB/seed':>8s}", flush=True)
    rows, skipped = [], []
    arms = [int(x) for x in args.arms.split(",")]
    dims = [int(x) for x in args.dims.split(",")]
    for env in args.envs.split(","):
        # An environment without the option is measured once, at its own size.
        accepted = registry.resolve_env(env).options()
        env_dims = dims if accepted is None or "d" in accepted else dims[:1]
        env_arms = arms if accepted is None or "arms" in accepted else arms[:1]
        for d in env_dims:
            for agent in args.agents.split(","):
                done = []
                for k in env_arms:
                    if done:
                        last = done[-1]
                        growth = max(1.0, exponent(done) or 1.0)
                        # The run time grows with K at the measured rate (at least linearly); the
                        # compile time is taken to double at most.
                        cost = 2 * last["compile_s"] + (args.repeats + 1) * last["run_s"] * (k / last["K"]) ** growth
                        if cost > args.max_seconds:
                            skipped.append({"env": env, "d": d, "K": k, "agent": agent, "projected_s": cost})
                            print(f"{env:14s} {d:3d} {k:6d} {agent:12s} skipped (projected {cost:,.0f} s)", flush=True)
                            break
                    try:
                        r = measure(env, d, k, agent, horizon=args.horizon, seeds=args.seeds, repeats=args.repeats,
                                    dtype=args.dtype)
                    except jax.errors.JaxRuntimeError as err:
                        if "RESOURCE_EXHAUSTED" not in str(err):
                            raise
                        # Does not fit in this machine's memory: recorded, and larger K skipped.
                        skipped.append({"env": env, "d": d, "K": k, "agent": agent, "out_of_memory": str(err)[:200]})
                        print(f"{env:14s} {d:3d} {k:6d} {agent:12s} skipped (out of memory: {str(err)[:80]})",
                              flush=True)
                        break
                    done.append(r)
                    rows.append(r)
                    print(f"{env:14s} {d:3d} {k:6d} {agent:12s} {r['compile_s']:9.1f} {r['seed_rounds_per_s']:14,.0f} "
                          f"{_fmt(r['iterations_per_round'], '9.1f')} {_fmt(r['flagged'], '8.1%')} "
                          f"{r['mb_per_seed']:8.2f}", flush=True)
                p = exponent(done)
                if p is not None:
                    print(f"{'':14s} {d:3d} {'':6s} {agent:12s} cost per seed-round ~ K^{p:.2f} "
                          f"(K = {done[0]['K']}..{done[-1]['K']})", flush=True)
    fits = [{"env": e, "d": d, "agent": a, "exponent": exponent(sorted(
        [r for r in rows if (r["env"], r["d"], r["agent"]) == (e, d, a)], key=lambda r: r["K"]))}
        for e, d, a in sorted({(r["env"], r["d"], r["agent"]) for r in rows})]
    report = {"meta": {"device": str(jax.devices()[0]), "platform": platform.platform(), "jax": jax.__version__,
                       "date": time.strftime("%Y-%m-%d"),
                       # The output paths by file name only: a result records no machine paths.
                       "args": {k: (os.path.basename(v) if k in ("json", "figure") and v else v)
                                for k, v in vars(args).items()}},
              "rows": rows, "skipped": skipped, "exponents": fits}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    if args.figure:
        figure(rows, args.figure)
    return report


if __name__ == "__main__":
    main()
