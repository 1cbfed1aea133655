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

Agents: their ``ucb`` and ``ts`` (ridge with V_0 = I, their anytime confidence level) against
``ucb(delta="anytime")`` and ``thompson_sampling()``; their ``e2d`` at its defaults (gaps
Delta, lambda_t = sqrt(t), eps_t^2 = d / t, 100 Frank-Wolfe steps a round) against this
library's Anytime-E2D at its defaults (the ac-DEC solved exactly, gaps Delta_f), and with
``--delta-seeds N`` also Anytime-E2D with gaps Delta (the authors' E2D's gaps; its certified
lambda search costs about 40 times a round with Delta_f on these 100 actions).

Run:  python benchmarks/dueling_agreement.py --run-authors /path/to/pm-ids --python /path/to/their/python \\
          --reference benchmarks/results/cpu-2core/pm_ids_dueling.json --horizon 200
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

OURS = {"ucb": lambda: e2d.ucb(delta="anytime"), "ts": e2d.thompson_sampling, "e2d": e2d.anytime_e2d}


def base_arms(seed, d, k):
    """The authors' random_dueling base arms of instance seed ``seed``."""
    state = np.random.RandomState(seed)
    return state.normal(size=d * k).reshape(k, d)


def ci(values):
    values = np.asarray(values, np.float64)
    half = 1.96 * values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else 0.0
    return float(values.mean()), float(values.mean() - half), float(values.mean() + half)


def run_authors(args):
    runs = []
    for strategy in args.strategies:
        finals, commands = [], []
        for s in range(1, args.authors_seeds + 1):
            out = tempfile.mkdtemp()
            cmd = [args.python, "-m", "pm.main", "random_dueling", strategy, f"--seed={args.instance_seed}",
                   f"--d={args.d}", f"--k={args.k}", f"--n={args.horizon}", f"--outdir={out}", f"--force_seed={s}"]
            env = {**os.environ, "PYTHONPATH": args.run_authors, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
            subprocess.run(cmd, check=True, env=env, cwd=args.run_authors, capture_output=True)
            (csv,) = glob.glob(os.path.join(out, "*", "*", "run-*.csv"))
            finals.append(float(np.loadtxt(csv)[-1, 1]))
            commands.append(" ".join(cmd[1:]))
            print(strategy, s, finals[-1], flush=True)
        commit = subprocess.run(["git", "-C", args.run_authors, "rev-parse", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        runs.append(dict(strategy=strategy, game="random_dueling", d=args.d, k=args.k, instance_seed=args.instance_seed,
                         horizon=args.horizon, final_regret=finals, commands=commands, commit=commit, branch="e2d",
                         repo="github.com/kirschnj/pm-ids"))
    with open(args.reference, "w") as f:
        json.dump({"what": "final regret of the authors' code on its random_dueling game, one process per seed",
                   "runs": runs}, f, indent=1)


def compare(args):
    runs = json.loads(open(args.reference).read())["runs"]
    rows = []
    print(f"{'agent':9s} {'n':>5s}  {'pm-ids':30s} {'e2d_jax':30s} agree  informative")
    cases = [(run, run["strategy"], OURS[run["strategy"]](), args.seeds) for run in runs]
    if args.delta_seeds:  # the authors' E2D uses gaps Delta: Anytime-E2D with them too
        cases += [(run, "e2d-delta", e2d.anytime_e2d(gap_type="delta"), args.delta_seeds)
                  for run in runs if run["strategy"] == "e2d"]
    for run, label, agent, seeds in cases:
        params = dueling.from_base_arms(base_arms(run["instance_seed"], run["d"], run["k"]), dtype="float32")
        sim = e2d.simulate(params, agent, horizon=run["horizon"], num_seeds=seeds, record_every=run["horizon"])
        ours = ci(np.asarray(sim.result.regret)[:, -1])
        theirs = ci(run["final_regret"])
        # Equal means agree also where both CIs have width 0 (UCB: the same self-duel on every seed).
        agree = bool(theirs[1] <= ours[0] <= theirs[2] or ours[1] <= theirs[0] <= ours[2]
                     or abs(ours[0] - theirs[0]) <= 1e-5 * max(1.0, abs(theirs[0])))
        counts = np.asarray(sim.result.action_counts)
        share = float((counts[:, np.asarray(dueling.informative(params, np.arange(counts.shape[-1])))].sum(-1)
                       / counts.sum(-1)).mean())
        fmt = lambda m, lo, hi: f"{m:8.2f} [{lo:8.2f}, {hi:8.2f}]"
        print(f"{label:9s} {run['horizon']:5d}  {fmt(*theirs):30s} {fmt(*ours):30s} "
              f"{'yes' if agree else 'NO':5s}  {share:.1%}", flush=True)
        rows.append(dict(strategy=run["strategy"], e2d_jax_agent=label, horizon=run["horizon"],
                         pm_ids=dict(mean=theirs[0], ci95=list(theirs[1:]), seeds=len(run["final_regret"])),
                         e2d_jax=dict(mean=ours[0], ci95=list(ours[1:]), seeds=seeds, informative_share=share),
                         within_each_others_ci=agree))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"jax": jax.__version__, "e2d_jax": e2d.__version__, "rows": rows}, f, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reference", required=True, help="the authors' runs (JSON): written by --run-authors")
    parser.add_argument("--run-authors", default=None, help="a checkout of kirschnj/pm-ids, branch e2d, to run first")
    parser.add_argument("--python", default="python", help="the Python that runs their code")
    parser.add_argument("--strategies", nargs="+", default=["ucb", "ts", "e2d"])
    parser.add_argument("--authors-seeds", type=int, default=20)
    parser.add_argument("--instance-seed", type=int, default=0)
    parser.add_argument("--d", type=int, default=3)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--horizon", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--delta-seeds", type=int, default=0,
                        help="also run Anytime-E2D with gaps Delta (the authors' E2D's gaps) for this many seeds")
    parser.add_argument("--json", default=None, help="write the comparison here")
    args = parser.parse_args()
    if args.run_authors:
        run_authors(args)
    compare(args)


if __name__ == "__main__":
    main()
