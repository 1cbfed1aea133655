"""The cost of one round of E2D and Anytime-E2D against the number of actions K: the authors'
code (kirschnj/pm-ids, branch e2d) and e2d_jax side by side on the same instance.

Instance: the authors' plain linear bandit ``simple_bandit`` (``pm/main.py``) at instance seed
``--instance-seed``: ``np.random.seed(SEED); X = np.random.normal(size=d * K).reshape(K, d)``
(features not normalised), M_pi = phi_pi^T (each action observes its own reward), f* = e_1,
unit Gaussian noise. e2d_jax builds the same arrays with
:func:`e2d_jax.envs.linear.linear_side_observation` (``X``, ``X``, ``e_1``, sigma 1).

The authors' side (``--run-authors``: their checkout, run unmodified with ``--python``, one
process per run, ``OMP_NUM_THREADS=1``):
``python -m pm.main simple_bandit STRATEGY --seed=SEED --d=D --k=K --n=N --outdir=OUT --force_seed=1 --timeit``
for their ``e2d`` at its defaults (one lambda_t = sqrt(t), gaps Delta) and their Anytime-E2D
(``e2d --e2d_anytime_lambda=1 --e2d_delta_f=1``: eps_t^2 = d / t, 99 lambdas in (0, sqrt(t)],
gaps Delta_f). Each of their rounds runs 99 Frank-Wolfe steps per lambda from the previous
round's distribution, and every step rebuilds sum_pi mu_pi M_pi^T M_pi through a Python loop over
the K actions, so a round is fixed work: about 99 K (E2D) and 99^2 K (Anytime-E2D) small matrix
products. Each configuration runs twice, at N = n and at N = 2n rounds; the seconds per round are
``(T(2n) - T(n)) / n`` with T the game loop's time that ``--timeit`` writes (start-up and the
instance's construction excluded), and the same from the processes' wall times as a check.

e2d_jax's side: ``fixed_horizon_e2d(horizon=2n)`` (E2D at its defaults: lambda_n =
sqrt(n / (4 log n)), gaps Delta_f) and ``anytime_e2d()`` (Anytime-E2D at its defaults: the
ac-DEC solved to its certificate, eps_t^2 = r / t, gaps Delta_f) on the same instance for 2n
rounds, the compiled program of ``e2d_jax.sim.simulate.rollout_program`` (``--lanes`` seeds
side by side), compiled ahead of time (``lower().compile()``, the compile seconds), then one
warm call and the median of ``--repeats`` timed calls, as seconds per seed-round; with the
fraction of flagged rounds (the solver's status ``MAX_ITER``: the certified gap above its
tolerance). Unlike the authors' round, e2d_jax's is not fixed work: the solver runs until its
certificate, so its cost depends on the round t, and the authors' 2n differs between K; so each
K is timed again at one horizon for all K (``--common-horizon``, 20 rounds), which is the
horizon its growth in K is read from. Each dtype (``--dtypes``) is measured in a child process
of its own (float64 needs JAX's x64 mode from the start).

The growth of a round's cost from the smallest to the largest K is the ratio of the per-round
costs (and the exponent p in cost ~ K^p through those two points). The printout: one block per
agent, a line per side (pm-ids; e2d_jax per dtype, seeds and horizon), the seconds per round at
each K and the growth.

Run:  python benchmarks/authors_round_time.py --run-authors /path/to/pm-ids --python /path/to/their/python \\
          --arms 10,100,1000 --dims 3 --json benchmarks/results/cpu-2core/authors_round_time.json
      (e2d_jax's side again, the authors' timings read from an existing --json:)
      python benchmarks/authors_round_time.py --arms 10,100,1000 --dims 3 --json <the same file>
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

#: The authors' configurations: their strategy and its flags.
AUTHORS = {
    "e2d": ["e2d"],
    "anytime-e2d": ["e2d", "--e2d_anytime_lambda=1", "--e2d_delta_f=1"],
}

#: Rounds n per K (the runs are n and 2n rounds long): the authors' round is fixed work that grows
#: linearly in K, and Anytime-E2D's is about 99 times E2D's; these keep each run well under five
#: minutes on a 2-core machine. A K not listed takes the nearest listed K's rule scaled by 1 / K.
DEFAULT_ROUNDS = {"e2d": {10: 100, 100: 50, 1000: 20}, "anytime-e2d": {10: 10, 100: 5, 1000: 4}}


def rounds_for(label: str, k: int, table: dict | None = None) -> int:
    table = table or DEFAULT_ROUNDS[label]
    if k in table:
        return table[k]
    near = min(table, key=lambda x: abs(math.log(x / k)))
    return max(2, int(table[near] * near / k))


def instance_arrays(seed: int, d: int, k: int):
    """The authors' simple_bandit features (K, d) of instance seed ``seed`` and f* = e_1."""
    state = np.random.RandomState(seed)
    features = state.normal(size=d * k).reshape(k, d)
    theta = np.zeros(d)
    theta[0] = 1.0
    return features, theta


def machine() -> dict:
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), None)
    except OSError:
        pass
    return {"description": f"{os.cpu_count()}-core {platform.machine()} CPU, shared", "cpu_count": os.cpu_count(),
            "cpu_model": model, "platform": platform.platform(), "python": platform.python_version()}


# ----------------------------------------------------------------------------------------------
# The authors' side


def _authors_run(args, label: str, d: int, k: int, n: int) -> dict:
    """One run of their code: the game loop's seconds (``--timeit``), the process's wall seconds,
    the final cumulative regret and the command (without machine paths)."""
    strategy, *flags = AUTHORS[label]
    out = tempfile.mkdtemp()
    cmd = [args.python, "-m", "pm.main", "simple_bandit", strategy, f"--seed={args.instance_seed}", f"--d={d}",
           f"--k={k}", f"--n={n}", f"--outdir={out}", f"--force_seed={args.force_seed}", "--timeit", *flags]
    env = {**os.environ, "PYTHONPATH": args.run_authors, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, cwd=args.run_authors, capture_output=True)
    wall = time.perf_counter() - t0
    (tfile,) = glob.glob(os.path.join(out, "*", "*", "time-*.csv"))
    (rfile,) = glob.glob(os.path.join(out, "*", "*", "run-*.csv"))
    loop = float(np.loadtxt(tfile))
    regret = float(np.atleast_2d(np.loadtxt(rfile))[-1, 1])
    shutil.rmtree(out, ignore_errors=True)
    return {"n": n, "loop_s": loop, "wall_s": wall, "final_regret": regret,
            "command": " ".join(["python", *cmd[1:]]).replace(out, "OUT")}


def run_authors(args, store: dict) -> None:
    commit = subprocess.run(["git", "-C", args.run_authors, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or None
    branch = subprocess.run(["git", "-C", args.run_authors, "rev-parse", "--abbrev-ref", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or None
    versions = subprocess.run([args.python, "-c", "import sys, numpy, scipy; print(sys.version.split()[0], "
                               "numpy.__version__, scipy.__version__)"], capture_output=True, text=True).stdout.split()
    store["authors"] = {"repo": "github.com/kirschnj/pm-ids", "branch": branch, "commit": commit,
                        "python": versions[0] if versions else None,
                        "numpy": versions[1] if len(versions) > 1 else None,
                        "scipy": versions[2] if len(versions) > 2 else None,
                        "threads": "OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=1",
                        "date": time.strftime("%Y-%m-%d"), "machine": machine(), "rows": []}
    for d in args.dims:
        for label in args.agents:
            for k in args.arms:
                n = rounds_for(label, k, args.rounds.get(label))
                short = _authors_run(args, label, d, k, n)
                long = _authors_run(args, label, d, k, 2 * n)
                row = {"agent": label, "strategy": AUTHORS[label][0], "flags": AUTHORS[label][1:], "d": d, "K": k,
                       "n": n, "runs": [short, long],
                       "s_per_round": (long["loop_s"] - short["loop_s"]) / n,
                       "s_per_round_wall": (long["wall_s"] - short["wall_s"]) / n,
                       "s_per_round_2n_loop": long["loop_s"] / (2 * n)}
                store["authors"]["rows"].append(row)
                print(f"authors  {label:12s} d={d:<3d} K={k:<6d} n={n:<4d} {row['s_per_round']:10.4g} s/round "
                      f"(wall difference {row['s_per_round_wall']:.4g}; loop {short['loop_s']:.2f} / "
                      f"{long['loop_s']:.2f} s)", flush=True)
                if args.json:  # an interrupted run keeps what it has
                    with open(args.json, "w") as f:
                        json.dump(store, f, indent=1)


# ----------------------------------------------------------------------------------------------
# e2d_jax's side (in a child process per dtype)


def measure_ours(configs: list, dtype: str, lanes: list, repeats: int, instance_seed: int) -> dict:
    import jax

    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    import e2d_jax
    from e2d_jax.agents.e2d import anytime_e2d, fixed_horizon_e2d
    from e2d_jax.envs.linear import linear_side_observation
    from e2d_jax.sim.simulate import rollout_program
    from e2d_jax.types import Status

    agents = {"e2d": lambda horizon: fixed_horizon_e2d(horizon=horizon), "anytime-e2d": lambda horizon: anytime_e2d()}
    rows = []
    for cfg in configs:
        features, theta = instance_arrays(instance_seed, cfg["d"], cfg["K"])
        params = linear_side_observation(features, features, theta, sigma=1.0, dtype=dtype)
        horizon = cfg["horizon"]
        for num in lanes:
            agent = agents[cfg["agent"]](horizon)
            fn, fargs = rollout_program(params, agent, horizon=horizon, record_every=1, lanes=num)
            t0 = time.perf_counter()
            compiled = fn.lower(*fargs).compile()
            compile_s = time.perf_counter() - t0
            out = jax.block_until_ready(compiled(*fargs))  # warm
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                out = jax.block_until_ready(compiled(*fargs))
                times.append(time.perf_counter() - t0)
            run_s = float(np.median(times))
            counts = np.asarray(out.solver.status_counts).sum(axis=0)
            row = {"agent": cfg["agent"], "d": cfg["d"], "K": cfg["K"], "dtype": dtype, "seeds": num,
                   "horizon": horizon, "pass": cfg["pass"], "compile_s": compile_s, "runs_s": [float(t) for t in times],
                   "s_per_seed_round": run_s / (num * horizon),
                   "flagged": float(counts[Status.MAX_ITER] / counts.sum()),
                   "iterations_per_round": float(np.mean(np.asarray(out.info.iterations)))
                   if hasattr(out.info, "iterations") else None,
                   "invalid_rounds": int(np.asarray(out.invalid_rounds).sum())}
            rows.append(row)
            print(f"e2d_jax  {cfg['agent']:12s} d={cfg['d']:<3d} K={cfg['K']:<6d} {dtype} seeds={num:<3d} "
                  f"horizon={horizon:<4d} {row['s_per_seed_round']:10.4g} s/seed-round  compile "
                  f"{compile_s:6.1f} s  flagged {row['flagged']:.1%}", flush=True)
    from e2d_jax.experiments.provenance import source_digest

    return {"jax": jax.__version__, "e2d_jax": e2d_jax.__version__, "e2d_jax_source": source_digest(),
            "device": str(jax.devices()[0]), "rows": rows}


def run_ours(args, configs: list) -> dict:
    """e2d_jax's side, one child process per dtype."""
    out = {"date": time.strftime("%Y-%m-%d"), "machine": machine(), "lanes": args.lanes, "repeats": args.repeats,
           "by_dtype": {}}
    for dtype in args.dtypes:
        with tempfile.TemporaryDirectory() as tmp:
            cfg_path, res_path = os.path.join(tmp, "configs.json"), os.path.join(tmp, "rows.json")
            with open(cfg_path, "w") as f:
                json.dump(configs, f)
            subprocess.run([sys.executable, os.path.abspath(__file__), "--child", dtype, "--child-configs", cfg_path,
                            "--child-out", res_path, "--lanes", ",".join(map(str, args.lanes)),
                            "--repeats", str(args.repeats), "--instance-seed", str(args.instance_seed)], check=True)
            with open(res_path) as f:
                out["by_dtype"][dtype] = json.load(f)
    return out


# ----------------------------------------------------------------------------------------------
# The table


def growth(costs: dict) -> dict | None:
    """Cost at the largest K over the cost at the smallest, and the exponent through them."""
    ks = sorted(k for k, c in costs.items() if c is not None and c > 0)
    if len(ks) < 2:
        return None
    lo, hi = ks[0], ks[-1]
    ratio = costs[hi] / costs[lo]
    return {"from_K": lo, "to_K": hi, "ratio": ratio, "exponent": math.log(ratio) / math.log(hi / lo)}


def summarise(store: dict) -> list:
    """Prints the table (seconds per round; e2d_jax per seed-round) and returns the growth rows."""
    authors = {(r["agent"], r["d"], r["K"]): r for r in store.get("authors", {}).get("rows", [])}
    ours = {}
    for dtype, part in store.get("e2d_jax", {}).get("by_dtype", {}).items():
        for r in part["rows"]:
            ours[(r["agent"], r["d"], r["K"], dtype, r["seeds"], r.get("pass", "2n"))] = r
    dtypes = list(store.get("e2d_jax", {}).get("by_dtype", {}))
    lanes = store.get("e2d_jax", {}).get("lanes", [])
    passes = sorted({key[5] for key in ours}) or ["2n"]
    columns = [("authors", None, None, None)] + [("e2d_jax", dt, s, ps) for ps in passes for dt in dtypes
                                                 for s in lanes]
    keys = sorted({(a, d) for a, d, _ in authors} | {(a, d) for a, d, *_ in ours})
    growths = []
    print("\nseconds per round: pm-ids from two horizons n and 2n; e2d_jax per seed-round, median of the timed "
          "calls, at horizon 2n ('2n') and at one horizon for every K ('common')")
    for agent, d in keys:
        ks = sorted({k for a, dd, k in authors if (a, dd) == (agent, d)}
                    | {key[2] for key in ours if key[:2] == (agent, d)})
        print(f"\n{agent}, d = {d}")
        print(f"{'':31s} " + " ".join(f"{'K=' + str(k):>11s}" for k in ks) + f" {'growth':>16s}")
        for c in columns:
            who, dt, lane, ps = c
            costs = {}
            for k in ks:
                r = authors.get((agent, d, k)) if who == "authors" else ours.get((agent, d, k, dt, lane, ps))
                costs[k] = None if r is None else (r["s_per_round"] if who == "authors" else r["s_per_seed_round"])
            if all(v is None for v in costs.values()):
                continue
            g = growth(costs)
            growths.append({"agent": agent, "d": d, "side": who, "dtype": dt, "seeds": lane, "pass": ps,
                            "s_per_round": {str(k): v for k, v in costs.items()}, **(g or {})})
            name = "pm-ids (float64)" if who == "authors" else f"e2d_jax {dt} {lane:>2d} seed {ps}"
            cells = " ".join(f"{v:11.3e}" if v is not None else f"{'-':>11s}" for v in costs.values())
            print(f"{name:31s} {cells} {('x%.3g (K^%.2f)' % (g['ratio'], g['exponent'])) if g else '-':>16s}")
    return growths


def _command(argv: list) -> str:
    """This script's command line as recorded: the two machine paths by placeholders."""
    names = {"--run-authors": "PM_IDS_CHECKOUT", "--python": "PM_IDS_PYTHON"}
    out, follow = [], None
    for a in argv:
        if follow:
            out.append(follow)
            follow = None
            continue
        flag = a.split("=", 1)[0]
        if flag in names:
            if "=" in a:
                out.append(f"{flag}={names[flag]}")
            else:
                out.append(a)
                follow = names[flag]
            continue
        out.append(a)
    return " ".join(["python", "benchmarks/authors_round_time.py", *out])


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run-authors", default=None, help="a checkout of kirschnj/pm-ids, branch e2d, to time first")
    ap.add_argument("--python", default="python", help="the Python that runs their code")
    ap.add_argument("--arms", default="10,100,1000")
    ap.add_argument("--dims", default="3")
    ap.add_argument("--agents", default="e2d,anytime-e2d")
    ap.add_argument("--rounds", action="append", default=[],
                    help="AGENT=N1,N2,...: the authors' n per K of --arms (runs of n and 2n rounds); default "
                         + "; ".join(f"{a}={','.join(f'{n} at K={k}' for k, n in t.items())}"
                                     for a, t in DEFAULT_ROUNDS.items()))
    ap.add_argument("--instance-seed", type=int, default=0)
    ap.add_argument("--force-seed", type=int, default=1, help="the authors' --force_seed (their rollout's seed)")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--lanes", default="1,16", help="e2d_jax's seeds side by side, each a compiled program")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--common-horizon", type=int, default=20,
                    help="also time e2d_jax at this horizon for every K (0: only at the authors' 2n)")
    ap.add_argument("--no-ours", action="store_true", help="only the authors' side")
    ap.add_argument("--json", default=None, help="results; with no --run-authors, the authors' timings are read here")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-configs", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.lanes = [int(x) for x in str(args.lanes).split(",")]
    if args.child:
        with open(args.child_configs) as f:
            configs = json.load(f)
        result = measure_ours(configs, args.child, args.lanes, args.repeats, args.instance_seed)
        with open(args.child_out, "w") as f:
            json.dump(result, f)
        return
    args.arms = [int(x) for x in args.arms.split(",")]
    args.dims = [int(x) for x in args.dims.split(",")]
    args.agents = args.agents.split(",")
    args.dtypes = args.dtypes.split(",")
    rounds = {}
    for spec in args.rounds:
        label, ns = spec.split("=")
        rounds[label] = dict(zip(args.arms, (int(x) for x in ns.split(","))))
    args.rounds = rounds
    if args.run_authors:
        args.run_authors = os.path.abspath(args.run_authors)
    store = {"what": "seconds per round of E2D and Anytime-E2D against K: the authors' code (kirschnj/pm-ids, "
                     "branch e2d, unmodified) and e2d_jax on the authors' simple_bandit instance",
             "instance": {"game": "simple_bandit", "instance_seed": args.instance_seed, "theta": "e_1",
                          "noise_var": 1.0, "features": "np.random.seed(SEED); np.random.normal(size=d*K).reshape(K, d)"},
             "command": _command(argv if argv is not None else sys.argv[1:])}
    if args.run_authors:
        run_authors(args, store)
    elif args.json and os.path.exists(args.json):
        with open(args.json) as f:
            old = json.load(f)
        store["authors"] = old.get("authors", {})
        store["authors_command"] = old.get("authors_command", old.get("command"))
        print(f"authors' timings read from {args.json} (commit {store['authors'].get('commit')})", flush=True)
    if args.run_authors:
        store["authors_command"] = store["command"]
    configs = [{"agent": r["agent"], "d": r["d"], "K": r["K"], "n": r["n"]}
               for r in store.get("authors", {}).get("rows", [])
               if r["agent"] in args.agents and r["d"] in args.dims and r["K"] in args.arms]
    if not configs:  # no authors' timings: e2d_jax at the default rounds
        configs = [{"agent": a, "d": d, "K": k, "n": rounds_for(a, k, args.rounds.get(a))}
                   for d in args.dims for a in args.agents for k in args.arms]
    # The authors' horizon 2n, then (--common-horizon) one horizon for every K.
    configs = [{**c, "pass": "2n", "horizon": 2 * c["n"]} for c in configs] + (
        [{**c, "pass": "common", "horizon": args.common_horizon} for c in configs] if args.common_horizon else [])
    if not args.no_ours:
        store["e2d_jax"] = run_ours(args, configs)
    store["growth"] = summarise(store)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(store, f, indent=1)
    return store


if __name__ == "__main__":
    main()
