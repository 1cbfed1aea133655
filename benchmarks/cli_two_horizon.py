"""Anytime-E2D throughput through the CLI at 1,000 seeds, from two horizons (issue: speed).

What: runs `e2d-jax run --agents anytime-e2d --seeds 1000` with the CLI's defaults at two
horizons per case and reports seed-rounds/s = seeds x (n2 - n1) / (run_seconds(n2) -
run_seconds(n1)) from each run's summary.json, so start-up and compilation cancel; with the
final regret and its 95% CI at n2.

Arms: each ARM is ``LABEL=ROOT`` or ``LABEL=ROOT|EXTRA CLI ARGS`` (e.g.
``"after-1dev=/work/main|--host-devices 1"``); ROOT is a checkout with its own ``.venv`` (e.g.
a `git worktree` of an older commit; without one, this interpreter runs it). The arms are
interleaved (for each repeat, for each case, every arm in turn), so a before/after pair shares
the machine's state; the report gives the median over ``--repeats`` and the range. On a
shared machine single runs of identical code were measured up to 1.5x apart, hence this.

Run:  python benchmarks/cli_two_horizon.py before=/work/before after=/work/main \\
          [--repeats 2] [--seeds 1000] [--cases exp1,exp2,finite-mab,finite-revealing] [--json OUT]
      (--cases exp1-paper: Anytime-E2D with the paper's solver, --solver paper)

Results: benchmarks/results/cli_1000seeds_cpu2_*.json.
"""
import argparse, json, os, shlex, statistics, subprocess, sys, time

CASES = {
    "exp1": (["--env", "semi-bandit", "--d", "3", "--arms", "10"], (1000, 2000)),
    "exp2": (["--env", "semi-bandit", "--d", "30", "--arms", "10"], (500, 1000)),
    "finite-mab": (["--env", "finite-mab"], (100, 200)),
    "finite-revealing": (["--env", "finite-revealing"], (100, 200)),
    # Not in the default list: the paper's solver preset as the agent's solver.
    "exp1-paper": (["--env", "semi-bandit", "--d", "3", "--arms", "10", "--solver", "paper"], (200, 400)),
}


def parse_arm(text):
    label, _, rest = text.partition("=")
    root, _, extra = rest.partition("|")
    if not label or not root:
        raise SystemExit(f"ARM must be LABEL=ROOT[|ARGS], got {text!r}")
    py = os.path.join(root, ".venv/bin/python")
    return dict(label=label, root=os.path.abspath(root), extra=shlex.split(extra),
                python=py if os.path.exists(py) else sys.executable)


def run_once(arm, case, horizon, seeds, tag):
    args, _ = CASES[case]
    d = f"/tmp/cli_tp/{tag}/{arm['label']}/{case}-{horizon}"
    subprocess.run(["rm", "-rf", d])
    cmd = [arm["python"], "-c", "import sys; from e2d_jax.cli import main; sys.exit(main())", "run", *args,
           "--agents", "anytime-e2d", "--seeds", str(seeds), "--horizon", str(horizon), "--out", d, "--quiet",
           *arm["extra"]]
    env = dict(os.environ, PYTHONPATH=arm["root"], E2D_JAX_CACHE_DIR="off")
    env.pop("XLA_FLAGS", None)
    t = time.perf_counter()
    # From ROOT: `python -c` puts the working directory first on sys.path, ahead of PYTHONPATH.
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=arm["root"])
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError(f"{arm['label']} {case} n={horizon} failed:\n{r.stderr[-2000:]}")
    s = json.load(open(f"{d}/summary.json"))
    ag = s["agents"]["anytime-e2d"]
    return dict(h=horizon, wall=wall, run_s=ag["run_seconds"], compile_s=ag.get("compile_seconds"),
                regret=ag["final_regret_mean"], ci=ag["final_regret_ci95"], device=s.get("device"),
                src=s["versions"].get("e2d_jax_source"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("arms", nargs="+", help="LABEL=ROOT or LABEL=ROOT|EXTRA CLI ARGS")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--seeds", type=int, default=1000)
    p.add_argument("--cases", default="exp1,exp2,finite-mab,finite-revealing")
    p.add_argument("--json", default=None, help="report path (default: cli_two_horizon.json)")
    a = p.parse_args()
    arms = [parse_arm(x) for x in a.arms]
    tag = str(os.getpid())
    rows = {}
    for rep in range(a.repeats):
        for case in a.cases.split(","):
            hs = CASES[case][1]
            for arm in arms:
                runs = [run_once(arm, case, h, a.seeds, tag) for h in hs]
                rate = a.seeds * (hs[1] - hs[0]) / (runs[1]["run_s"] - runs[0]["run_s"])
                row = rows.setdefault((arm["label"], case), dict(
                    label=arm["label"], root=arm["root"], extra=arm["extra"], case=case, seeds=a.seeds,
                    horizons=hs, rates=[], runs=[]))
                row["rates"].append(rate)
                row["runs"].append(runs)
                json.dump(list(rows.values()), open(a.json or "cli_two_horizon.json", "w"), indent=1)  # so far
                r1 = runs[1]
                print(f"rep {rep} {arm['label']:12s} {case:17s} {rate:10.0f} seed-rounds/s  regret@{hs[1]} "
                      f"{r1['regret']:.2f} [{r1['ci'][0]:.2f}, {r1['ci'][1]:.2f}]  run_s {runs[0]['run_s']:.1f}/"
                      f"{r1['run_s']:.1f} compile {r1['compile_s']:.1f} devices {len(r1['device'] or [])}", flush=True)
    out = []
    print("\nmedian over repeats (range)")
    for (label, case), row in rows.items():
        row["median"] = statistics.median(row["rates"])
        out.append(row)
        r1 = row["runs"][-1][1]
        print(f"{label:12s} {case:17s} {row['median']:10.0f} ({min(row['rates']):.0f}-{max(row['rates']):.0f})  "
              f"regret {r1['regret']:.2f} [{r1['ci'][0]:.2f}, {r1['ci'][1]:.2f}]")
    json.dump(out, open(a.json or "cli_two_horizon.json", "w"), indent=1)  # with the medians


if __name__ == "__main__":
    main()
