"""e2d_jax's UCB against the UCB of the authors' code (kirschnj/pm-ids, branch e2d), on the
same instances, with the library's fixed confidence level and with the authors' anytime one.

What: for each UCB run of the authors' code recorded in a reference file (their unmodified
code, run separately; per run the game, the horizon, the per-seed final regrets and the
instance's arrays), this script builds the same instance in e2d_jax (as
``benchmarks/ids_agreement.py`` does), runs ``ucb(delta=0.01)`` (the library's default) and
``ucb(delta="anytime")`` (delta_s = 1 / (s log s), s = max(2, 1 + scalar observations so far),
the level their code uses when none is given) for ``--seeds`` seeds at the same horizon, and
reports each mean with its 95% CI (1.96 standard errors) and whether it lies in the authors'
CI or theirs in its. Their confidence width is (sqrt(log det V_t + 2 log(1/delta)) + 1)^2 with
V_0 = I and unit noise, e2d_jax's the same with reg = 1 and S = 1.

Run:  python benchmarks/ucb_agreement.py --reference benchmarks/results/cpu-2core/pm_ids_reference.json \\
          [--seeds 200] [--json OUT] [--markdown OUT.md]

Typical printout (2-core shared CPU, 200 seeds; about 10 s per row):

    game             n  pm-ids (40 seeds)             delta=0.01                   agree  delta=anytime                agree
    eoo           2000     35.93 [   31.68,    40.18]     29.63 [   27.77,    31.49] NO     36.83 [   34.77,    38.88] yes
    eoo          10000     72.76 [   65.96,    79.56]     62.06 [   58.78,    65.34] NO     71.96 [   68.67,    75.26] yes
    semi_bandit   2000     28.97 [   23.80,    34.14]     24.14 [   22.24,    26.03] yes    27.87 [   25.88,    29.85] yes
    semi_bandit  10000     37.60 [   31.90,    43.30]     30.03 [   27.94,    32.12] NO     36.53 [   34.14,    38.92] yes
"""
import argparse
import json

import jax
import numpy as np

import e2d_jax as e2d
from ids_agreement import ci, instance

DELTAS = (0.01, "anytime")


def agree(ours, theirs):
    return bool(theirs[1] <= ours[0] <= theirs[2] or ours[1] <= theirs[0] <= ours[2])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reference", required=True, help="the authors' runs (JSON, key 'runs')")
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--json", default=None, help="write the table here")
    parser.add_argument("--markdown", default=None, help="write the table as Markdown here")
    args = parser.parse_args()
    runs = [r for r in json.loads(open(args.reference).read())["runs"] if r["strategy"] == "ucb"]
    fmt = lambda m, lo, hi: f"{m:8.2f} [{lo:8.2f}, {hi:8.2f}]"
    print(f"{'game':12s} {'n':>5s}  {'pm-ids (40 seeds)':28s}" + "".join(f"  {f'delta={d}':28s} agree" for d in DELTAS))
    rows = []
    for run in runs:
        params = instance(run["instance"])
        theirs = (run["mean"], *run["ci95"])
        row = dict(game=run["game"], horizon=run["horizon"],
                   pm_ids=dict(mean=theirs[0], ci95=list(theirs[1:]), seeds=run["n_seeds"]), e2d_jax={})
        line = f"{run['game']:12s} {run['horizon']:5d}  {fmt(*theirs):28s}"
        for delta in DELTAS:
            sim = e2d.simulate(params, e2d.ucb(delta=delta), horizon=run["horizon"], num_seeds=args.seeds,
                               record_every=run["horizon"])
            ours = ci(np.asarray(sim.result.regret)[:, -1])
            row["e2d_jax"][str(delta)] = dict(mean=ours[0], ci95=list(ours[1:]), seeds=args.seeds,
                                              within_each_others_ci=agree(ours, theirs))
            line += f"  {fmt(*ours):28s} {'yes' if agree(ours, theirs) else 'NO'}"
        rows.append(row)
        print(line, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"jax": jax.__version__, "e2d_jax": e2d.__version__, "rows": rows}, f, indent=1)
    if args.markdown:
        cell = lambda r: f"{r['mean']:.2f} [{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]"
        lines = ["| instance | n | pm-ids UCB (40 seeds) | e2d_jax, delta = 0.01 | e2d_jax, delta = anytime |",
                 "|---|---|---|---|---|"]
        for r in rows:
            ours = [r["e2d_jax"][str(d)] for d in DELTAS]
            lines.append(f"| {r['game']} | {r['horizon']} | {cell(r['pm_ids'])} | "
                         + " | ".join(f"{cell(o)} ({'agrees' if o['within_each_others_ci'] else 'disagrees'})"
                                      for o in ours) + " |")
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
