"""e2d_jax's IDS against the IDS of the authors' code (kirschnj/pm-ids, branch e2d), on the
same instances with the same settings.

What: for each run of the authors' code recorded in a reference file (their unmodified code,
run separately; per run the game, the information gain, the gap estimate, the sampling, the
horizon, the per-seed final regrets and the instance's arrays), this script builds the same
instance in e2d_jax (``linear_side_observation`` from the recorded features, observation maps
and f*), runs ``ids(info_gain=..., gap_estimate=..., sampling="fast")`` (their defaults: the
pairs with the winner) for ``--seeds`` seeds at the same horizon, and reports both means with
their 95% CIs (1.96 standard errors) and whether each mean lies in the other's CI.

Setting names: their WorstCaseInfoGain / DirectedInfoGain are ``info_gain="worst-case"`` /
``"directed"``; ValueGap / DiffGap are ``gap_estimate="value"`` / ``"difference"``. Their
confidence level is delta_t = 1 / (s log s) with s the observation rows received, which is the
default here (``delta=None``); S = 1 and V_0 = I in both.

Run:  python benchmarks/ids_agreement.py --reference benchmarks/results/cpu-2core/pm_ids_reference.json \\
          [--seeds 200] [--json OUT] [--markdown OUT.md]
      python benchmarks/ids_agreement.py --render OUT --markdown OUT.md   (a stored report as Markdown)

Typical printout (2-core shared CPU):

    game         info gain   gap         n     pm-ids (40 seeds)          e2d_jax (200 seeds)        agree
    eoo          directed    difference  2000  77.98 [74.12, 81.84]       79.09 [77.4, 80.8]         yes
"""
import argparse
import json
import time

import jax
import numpy as np

import e2d_jax as e2d
from e2d_jax.agents.ids import ids

INFO = {"WorstCaseInfoGain": "worst-case", "DirectedInfoGain": "directed"}
GAPS = {"ValueGap": "value", "DiffGap": "difference"}


def instance(inst: dict):
    features = np.asarray(inst["features"], np.float64)
    obs = np.asarray(inst["observation_matrices"], np.float64)
    if obs.ndim == 2:
        obs = obs[:, None, :]
    theta = np.asarray(inst["theta"], np.float64)
    return e2d.linear_side_observation(features, obs, theta, sigma=float(inst.get("noise_sigma", 1.0)), radius=1.0,
                                       dtype="float32")


def ci(values):
    values = np.asarray(values, np.float64)
    half = 1.96 * values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else 0.0
    return float(values.mean()), float(values.mean() - half), float(values.mean() + half)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reference", default=None, help="the authors' runs (JSON list)")
    parser.add_argument("--render", default=None, help="a stored --json report: write its --markdown and stop")
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--json", default=None, help="write the table here")
    parser.add_argument("--markdown", default=None, help="write the table as Markdown here")
    args = parser.parse_args()
    if args.render:
        return write_markdown(args.markdown, json.loads(open(args.render).read())["rows"])
    if not args.reference:
        parser.error("--reference is required (or --render a stored report)")
    runs = json.loads(open(args.reference).read())["runs"]
    rows = []
    print(f"{'game':12s} {'info gain':11s} {'gap':11s} {'n':>5s}  {'pm-ids':26s} {'e2d_jax':26s} agree")
    for run in runs:
        if run["strategy"] != "ids":
            continue
        params = instance(run["instance"])
        agent = ids(info_gain=INFO[run["infogain"]], gap_estimate=GAPS[run["gap_estimator"]], sampling="fast")
        t0 = time.perf_counter()
        sim = e2d.simulate(params, agent, horizon=run["horizon"], num_seeds=args.seeds, record_every=run["horizon"])
        ours = ci(np.asarray(sim.result.regret)[:, -1])
        theirs = (run["mean"], *run["ci95"])
        # Within each other's CI; a run that is the same on every seed in both (zero-width
        # intervals) agrees when the two equal up to float32 rounding.
        agree = (theirs[1] <= ours[0] <= theirs[2] or ours[1] <= theirs[0] <= ours[2]
                 or abs(ours[0] - theirs[0]) <= 1e-5 * abs(theirs[0]))
        row = dict(game=run["game"], info_gain=INFO[run["infogain"]], gap_estimate=GAPS[run["gap_estimator"]],
                   horizon=run["horizon"], pm_ids=dict(mean=theirs[0], ci95=list(theirs[1:]), seeds=run["n_seeds"]),
                   e2d_jax=dict(mean=ours[0], ci95=list(ours[1:]), seeds=args.seeds,
                                action_counts=np.asarray(sim.result.action_counts).mean(0).round(1).tolist()),
                   within_each_others_ci=bool(agree), seconds=time.perf_counter() - t0)
        rows.append(row)
        fmt = lambda m, lo, hi: f"{m:8.2f} [{lo:8.2f}, {hi:8.2f}]"
        print(f"{run['game']:12s} {row['info_gain']:11s} {row['gap_estimate']:11s} {run['horizon']:5d}  "
              f"{fmt(*theirs):26s} {fmt(*ours):26s} {'yes' if agree else 'NO'}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"jax": jax.__version__, "e2d_jax": e2d.__version__, "rows": rows}, f, indent=1)
    write_markdown(args.markdown, rows)


def write_markdown(path, rows):
    if path:
        fmt = lambda r: f"{r['mean']:.2f} [{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]"
        lines = ["| instance | information gain | gap estimate | n | pm-ids (40 seeds) | e2d_jax | agree |",
                 "|---|---|---|---|---|---|---|"]
        lines += [f"| {r['game']} | {r['info_gain']} | {r['gap_estimate']} | {r['horizon']} | {fmt(r['pm_ids'])} | "
                  f"{fmt(r['e2d_jax'])} | {'yes' if r['within_each_others_ci'] else 'no'} |" for r in rows]
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
