"""e2d_jax's agents against the authors' code (kirschnj/pm-ids, branch e2d) on their
``random_dueling`` game: the same instance, the same horizon.

What: ``--run-authors`` runs their unmodified code, one process per seed
(``python -m pm.main random_dueling STRATEGY --seed=SEED --d=D --k=K --n=N --force_seed=s``,
s = 1..``--authors-seeds``), and records each run's final regret with its command in
``--reference``. Then (or with an existing ``--reference``) this script builds the same
instance in e2d_jax, ``e2d_jax.envs.dueling.from_base_arms`` of their base arms
(``np.random.seed(SEED); np.random.normal(size=D * K).reshape(K, D)``, f* = e_1, unit noise),
runs the matching agent for ``--seeds`` seeds, and prints both means with their 95% CIs
(1.96 standard errors), whether each mean lies in the other's CI, and the share of rounds in
which e2d_jax's agent played an informative pair (not a self-duel).

Agents (``AUTHORS`` and ``OURS``): their ``ucb`` and ``ts`` (ridge with V_0 = I, their anytime
confidence level) against ``ucb(delta="anytime")`` and ``thompson_sampling()``; their
``anytime-e2d`` (``e2d --e2d_anytime_lambda=1 --e2d_delta_f=1``: the paper's Anytime-E2D, eps_t^2 =
d / t, 99 lambdas in (0, sqrt(t)], gaps Delta_f, 100 Frank-Wolfe steps per lambda a round) against
this library's Anytime-E2D at its defaults (the ac-DEC solved to its certificate, gaps Delta_f);
their ``anytime-e2d-delta`` (the same with gaps Delta) against Anytime-E2D with gaps Delta
(``--delta-seeds N`` seeds: its certified lambda search costs about 40 times a round with Delta_f
on these 100 actions); their ``e2d`` at its defaults (one lambda_t = sqrt(t), gaps Delta: E2D with
an anytime lambda rather than the ac-DEC) against Anytime-E2D at its defaults, and with
``--delta-seeds`` with gaps Delta. Their Anytime-E2D costs about 1.5 s a round here. With
``--paper-seeds N`` their Anytime-E2D is also compared with this library's Anytime-E2D at the
paper's solver budget (``solver="paper"``), and with ``--authors-solver-seeds N`` with their solve
(``solver="authors"``, :class:`e2d_jax.dec.solvers.SubgradientGrid`), which separates the
algorithm from the solve.

Run:  python benchmarks/dueling_agreement.py --run-authors /path/to/pm-ids --python /path/to/their/python \\
          --reference benchmarks/results/cpu-2core/pm_ids_dueling.json --horizon 200 \\
          [--strategies ucb ts e2d anytime-e2d] [--authors-seeds 20] [--jobs 2]
      python benchmarks/dueling_agreement.py --reference benchmarks/results/cpu-2core/pm_ids_dueling.json \\
          [--seeds 100] [--json OUT]
"""
import argparse
import glob
import json
import os
import subprocess
import tempfile

import jax
import numpy as np

import e2d_jax as e2d
from e2d_jax.envs import dueling
from e2d_jax.sim.results import Tables

#: This library's agent compared with each of the authors' configurations.
OURS = {"ucb": lambda: e2d.ucb(delta="anytime"), "ts": e2d.thompson_sampling, "e2d": e2d.anytime_e2d,
        "anytime-e2d": e2d.anytime_e2d, "anytime-e2d-delta": lambda: e2d.anytime_e2d(gap_type="delta")}


def base_arms(seed, d, k):
    """The authors' random_dueling base arms of instance seed ``seed``."""
    state = np.random.RandomState(seed)
    return state.normal(size=d * k).reshape(k, d)


def ci(values):
    values = np.asarray(values, np.float64)
    half = 1.96 * values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else 0.0
    return float(values.mean()), float(values.mean() - half), float(values.mean() + half)


#: The authors' configurations by label: their strategy and its flags. Their ``e2d`` at its defaults
#: is E2D with lambda_t = sqrt(t) (one lambda) and gaps Delta; ``--e2d_anytime_lambda`` makes it the
#: paper's Anytime-E2D (eps_t^2 = d / t, a grid of 99 lambdas in (0, sqrt(t)], the best by the
#: Lagrangian), with gaps Delta, or Delta_f with ``--e2d_delta_f``. Each runs 100 Frank-Wolfe steps a
#: round (per lambda) from the previous round's distribution.
AUTHORS = {
    "ucb": ["ucb"],
    "ts": ["ts"],
    "e2d": ["e2d"],
    "anytime-e2d-delta": ["e2d", "--e2d_anytime_lambda=1"],
    "anytime-e2d": ["e2d", "--e2d_anytime_lambda=1", "--e2d_delta_f=1"],
}


def _authors_run(args, label, s):
    """One run of the authors' code (configuration ``label``, seed ``s``): (final regret, command)."""
    strategy, *flags = AUTHORS[label]
    out = tempfile.mkdtemp()
    cmd = [args.python, "-m", "pm.main", "random_dueling", strategy, f"--seed={args.instance_seed}",
           f"--d={args.d}", f"--k={args.k}", f"--n={args.horizon}", f"--outdir={out}", f"--force_seed={s}", *flags]
    env = {**os.environ, "PYTHONPATH": args.run_authors, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    subprocess.run(cmd, check=True, env=env, cwd=args.run_authors, capture_output=True)
    (csv,) = glob.glob(os.path.join(out, "*", "*", "run-*.csv"))
    # The command as recorded: no machine paths (the output folder is a fresh temporary one).
    return float(np.loadtxt(csv)[-1, 1]), " ".join(cmd[1:]).replace(out, "OUT")


def run_authors(args):
    """Runs the authors' configurations ``--strategies`` for seeds 1..``--authors-seeds``, ``--jobs`` at
    a time, and adds them to ``--reference`` (a configuration already there is replaced); the file
    is rewritten after every finished run, so an interrupted run keeps what it has."""
    from concurrent.futures import ThreadPoolExecutor

    commit = subprocess.run(["git", "-C", args.run_authors, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or None
    store = json.loads(open(args.reference).read()) if os.path.exists(args.reference) else {
        "what": "final regret of the authors' code on its random_dueling game, one process per seed", "runs": []}
    for label in args.strategies:
        run = dict(strategy=label, flags=AUTHORS[label][1:], game="random_dueling", d=args.d, k=args.k,
                   instance_seed=args.instance_seed, horizon=args.horizon, final_regret=[], commands=[],
                   commit=commit, branch="e2d", repo="github.com/kirschnj/pm-ids")
        store["runs"] = [r for r in store["runs"] if (r["strategy"], r["horizon"]) != (label, args.horizon)] + [run]
        with ThreadPoolExecutor(args.jobs) as pool:
            for s, (final, cmd) in zip(range(1, args.authors_seeds + 1),
                                       pool.map(lambda s: _authors_run(args, label, s),
                                                range(1, args.authors_seeds + 1))):
                run["final_regret"].append(final)
                run["commands"].append(cmd)
                print(label, s, final, flush=True)
                with open(args.reference, "w") as f:
                    json.dump(store, f, indent=1)


def compare(args):
    runs = json.loads(open(args.reference).read())["runs"]
    rows = []
    print(f"{'agent':9s} {'n':>5s}  {'pm-ids':30s} {'e2d_jax':30s} agree  informative")
    cases = [(run, run["strategy"], OURS[run["strategy"]](), args.seeds) for run in runs
             if run["strategy"] != "anytime-e2d-delta"]
    cases += [(run, run["strategy"], OURS[run["strategy"]](), args.delta_seeds) for run in runs
              if run["strategy"] == "anytime-e2d-delta" and args.delta_seeds]
    if args.paper_seeds:  # the authors' Anytime-E2D against this library's run with the paper's solver budget
        cases += [(run, "anytime-e2d-paper", e2d.anytime_e2d(solver="paper"), args.paper_seeds)
                  for run in runs if run["strategy"] == "anytime-e2d"]
    if args.authors_solver_seeds:  # their Anytime-E2D against this library's run with their solve
        cases += [(run, "anytime-e2d-authors", e2d.anytime_e2d(solver="authors"), args.authors_solver_seeds)
                  for run in runs if run["strategy"] == "anytime-e2d"]
    if args.delta_seeds:  # the authors' E2D uses gaps Delta: Anytime-E2D with them too
        cases += [(run, "e2d-delta", e2d.anytime_e2d(gap_type="delta"), args.delta_seeds)
                  for run in runs if run["strategy"] == "e2d"]
    if args.only:
        cases = [case for case in cases if case[1] in args.only]
    for run, label, agent, seeds in cases:
        params = dueling.from_base_arms(base_arms(run["instance_seed"], run["d"], run["k"]), dtype="float32")
        sim = e2d.simulate(params, agent, horizon=run["horizon"], num_seeds=seeds, record_every=run["horizon"])
        finals = np.asarray(sim.result.regret)[:, -1]
        ours = ci(finals)
        theirs = ci(run["final_regret"])
        # Equal means agree also where both CIs have width 0 (UCB: the same self-duel on every seed).
        agree = bool(theirs[1] <= ours[0] <= theirs[2] or ours[1] <= theirs[0] <= ours[2]
                     or abs(ours[0] - theirs[0]) <= 1e-5 * max(1.0, abs(theirs[0])))
        flagged = (next(iter(Tables([sim]).cells().values())).get("solver") or {}).get("flagged_fraction")
        counts = np.asarray(sim.result.action_counts)
        share = float((counts[:, np.asarray(dueling.informative(params, np.arange(counts.shape[-1])))].sum(-1)
                       / counts.sum(-1)).mean())
        fmt = lambda m, lo, hi: f"{m:8.2f} [{lo:8.2f}, {hi:8.2f}]"
        print(f"{label:9s} {run['horizon']:5d}  {fmt(*theirs):30s} {fmt(*ours):30s} "
              f"{'yes' if agree else 'NO':5s}  {share:.1%}", flush=True)
        rows.append(dict(strategy=run["strategy"], e2d_jax_agent=label, horizon=run["horizon"],
                         pm_ids=dict(mean=theirs[0], ci95=list(theirs[1:]), seeds=len(run["final_regret"])),
                         e2d_jax=dict(mean=ours[0], ci95=list(ours[1:]), seeds=seeds, informative_share=share,
                                      final_regret=[float(x) for x in finals], flagged_fraction=flagged),
                         within_each_others_ci=agree))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"jax": jax.__version__, "e2d_jax": e2d.__version__, "rows": rows}, f, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reference", required=True, help="the authors' runs (JSON): written by --run-authors")
    parser.add_argument("--run-authors", default=None, help="a checkout of kirschnj/pm-ids, branch e2d, to run first")
    parser.add_argument("--python", default="python", help="the Python that runs their code")
    parser.add_argument("--strategies", nargs="+", default=["ucb", "ts", "e2d"], choices=sorted(AUTHORS),
                        help="the authors' configurations to run (see AUTHORS)")
    parser.add_argument("--jobs", type=int, default=1, help="authors' runs at a time")
    parser.add_argument("--authors-seeds", type=int, default=20)
    parser.add_argument("--instance-seed", type=int, default=0)
    parser.add_argument("--d", type=int, default=3)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--horizon", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--delta-seeds", type=int, default=0,
                        help="also run Anytime-E2D with gaps Delta (the authors' E2D's gaps) for this many seeds")
    parser.add_argument("--paper-seeds", type=int, default=0,
                        help="also run Anytime-E2D with the paper's solver (solver='paper': 100 Frank-Wolfe steps on "
                             "a 50-point lambda grid) against the authors' Anytime-E2D, for this many seeds")
    parser.add_argument("--authors-solver-seeds", type=int, default=0,
                        help="also run Anytime-E2D with the authors' solve (solver='authors': arg-max Frank-Wolfe "
                             "on 99 lambdas in (0, sqrt(t)]) against the authors' Anytime-E2D, for this many seeds")
    parser.add_argument("--only", nargs="+", default=None,
                        help="run only these of e2d_jax's cases (labels as printed, e.g. anytime-e2d-authors)")
    parser.add_argument("--compare", action=argparse.BooleanOptionalAction, default=True,
                        help="compare with e2d_jax's agents after the authors' runs (--no-compare: only run theirs)")
    parser.add_argument("--json", default=None, help="write the comparison here")
    args = parser.parse_args()
    if args.run_authors:
        run_authors(args)
    if args.compare:
        compare(args)


if __name__ == "__main__":
    main()
