"""Anytime-E2D throughput through the command line, from two horizons per case.

What: runs ``e2d-jax run --agents anytime-e2d --seeds S`` (S = 1,000 by default) with the
CLI's defaults (but for the divergence, see below) at two horizons n1 < n2 per case and reports

    seed-rounds/s = S x (n2 - n1) / (run_seconds(n2) - run_seconds(n1))

from each run's summary.json, so start-up and compilation cancel; with the final regret and
its 95% CI at n2, and the compile time of the first work unit (``compile_seconds``).

Cases (``--cases``): ``exp1`` (semi-bandit d=3, K=10; n = 1000, 2000), ``exp2`` (d=30, K=10;
500, 1000), ``finite-mab`` (K=5, M=30; 100, 200), ``finite-revealing`` (K=10, M=30; 100, 200)
and, not in the default list, ``exp1-paper`` (Exp. 1 with the paper's solver, ``--solver
paper``; 200, 400). ``--horizons N1,N2`` replaces every case's pair (for a quick check).

Same agent in every arm: the linear cases pass ``--divergence squared`` explicitly (the
current default; versions up to 0.2 defaulted to ``kl``), so checkouts of different versions
run the same algorithm. No other option is passed, so only flags that every version's
``e2d-jax run`` accepts are used. The script only shells out to the CLI, so it measures any
checkout whatever its Python API: ``python -c`` runs ``e2d_jax.cli.entry`` (the console
script: it sets the host device count, then calls ``main``) where the checkout has one, else
``from e2d_jax.cli import main`` (versions up to 0.2, whose ``main`` set the device count
itself), so every arm gets the device count the installed ``e2d-jax`` command would.

Arms: each ARM is ``LABEL=ROOT`` or ``LABEL=ROOT|EXTRA CLI ARGS`` (e.g. ``"new-1dev=../e2d_jax|
--host-devices 1"``); ROOT is a checkout, run with PYTHONPATH=ROOT from ROOT (its own
``.venv/bin/python`` if it has one, else this interpreter; ``--python`` overrides both).
JAX's persistent compilation cache is off (``E2D_JAX_CACHE_DIR=off``) and ``XLA_FLAGS`` is
cleared, so each run compiles afresh with the CLI's own device choice. The arms are
interleaved (for each repeat, for each case, every arm in turn), so a before/after pair
shares the machine's state; the report gives the median over ``--repeats`` and the range. On
a shared machine single runs of identical code were measured up to 1.5x apart, hence this.

Run:  python benchmarks/cli_two_horizon.py old=PATH/TO/OLD/CHECKOUT new=PATH/TO/THIS/CHECKOUT \\
          [--repeats 2] [--seeds 1000] [--cases exp1,exp2,finite-mab,finite-revealing] [--json OUT]

Quick check (two checkouts, toy sizes; the rates at such sizes are noise):
      python benchmarks/cli_two_horizon.py old=OLD new=. --seeds 8 --horizons 20,40 --repeats 1 \\
          --cases exp1,finite-mab

Typical printout (2-core shared x86-64 CPU, three arms over two repeats, 1,000 seeds; arms
``before`` and ``after`` on their default devices (1 and 2), ``after-1dev`` with
``--host-devices 1``; from ``results/cpu-2core/cli_four_cases_before_after_devices.log``,
whose linear cases ran each CLI's default divergence, then ``kl``)::

    rep 0 before       exp1                  128427 seed-rounds/s  regret@2000 79.78 [78.65, 80.91]  run_s 8.9/16.7 compile 5.3 devices 1
    rep 0 after        exp1                  245388 seed-rounds/s  regret@2000 79.78 [78.65, 80.91]  run_s 4.0/8.0 compile 8.3 devices 2
    ...
    median over repeats (range)
    before       exp1                  124311 (120195-128427)  regret 79.78 [78.65, 80.91]
    after        exp1                  252689 (245388-259989)  regret 79.78 [78.65, 80.91]
    after-1dev   exp1                  108560 (98874-118245)  regret 79.78 [78.65, 80.91]
    before       exp2                   18530 (18065-18995)  regret 59.21 [58.17, 60.24]
    after        exp2                   22129 (20896-23362)  regret 59.21 [58.17, 60.24]
    ...
    before       finite-revealing         847 (833-861)  regret 21.20 [20.84, 21.56]
    after        finite-revealing        8585 (8158-9011)  regret 21.21 [20.85, 21.57]
    after-1dev   finite-revealing        5392 (5334-5450)  regret 21.21 [20.85, 21.57]

Results: benchmarks/results/cpu-2core/cli_*.json and benchmarks/results/h200/cli_1000seeds*.json.
"""
import argparse, json, os, shlex, shutil, statistics, subprocess, sys, tempfile, time

LINEAR_AGENT = ["--divergence", "squared"]
# The console script's own start: ``e2d_jax.cli.entry`` where the checkout has it (it sets the
# host device count before JAX starts, then calls ``main``), else ``e2d_jax.cli.main``, which
# did that itself in versions without ``entry``.
LAUNCH = ("import sys, e2d_jax.cli as cli; entry = getattr(cli, 'entry', None); "
          "entry(sys.argv[1:]) if entry else sys.exit(cli.main())")
CASES = {
    "exp1": (["--env", "semi-bandit", "--d", "3", "--arms", "10", *LINEAR_AGENT], (1000, 2000)),
    "exp2": (["--env", "semi-bandit", "--d", "30", "--arms", "10", *LINEAR_AGENT], (500, 1000)),
    "finite-mab": (["--env", "finite-mab"], (100, 200)),
    "finite-revealing": (["--env", "finite-revealing"], (100, 200)),
    # Not in the default list: the paper's solver preset as the agent's solver.
    "exp1-paper": (["--env", "semi-bandit", "--d", "3", "--arms", "10", "--solver", "paper", *LINEAR_AGENT],
                   (200, 400)),
}


def parse_arm(text, python=None):
    label, _, rest = text.partition("=")
    root, _, extra = rest.partition("|")
    if not label or not root:
        raise SystemExit(f"ARM must be LABEL=ROOT[|ARGS], got {text!r}")
    py = os.path.join(root, ".venv/bin/python")
    return dict(label=label, root=os.path.abspath(root), extra=shlex.split(extra),
                python=python or (py if os.path.exists(py) else sys.executable))


def run_seconds(agent: dict, seeds: int, horizon: int) -> float:
    """The agent's simulate time without compile: ``run_seconds`` where the summary records it
    (up to 0.2), else from ``seed_rounds_per_second`` (0.3: seeds x instances x horizon / rate)."""
    if agent.get("run_seconds") is not None:
        return float(agent["run_seconds"])
    inst = int(agent.get("instances", 1))
    return seeds * inst * horizon / float(agent["seed_rounds_per_second"])


def run_once(arm, case, horizon, seeds, workdir):
    args, _ = CASES[case]
    d = os.path.join(workdir, arm["label"], f"{case}-{horizon}")
    subprocess.run(["rm", "-rf", d])
    cmd = [arm["python"], "-c", LAUNCH, "run", *args,
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
    with open(f"{d}/summary.json") as f:
        s = json.load(f)
    ag = s["agents"]["anytime-e2d"]
    return dict(h=horizon, wall=wall, run_s=run_seconds(ag, seeds, horizon), compile_s=ag.get("compile_seconds"),
                regret=ag["final_regret_mean"], ci=ag["final_regret_ci95"], device=s.get("device"),
                version=s["versions"].get("e2d_jax"), src=s["versions"].get("e2d_jax_source"))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("arms", nargs="+", help="LABEL=ROOT or LABEL=ROOT|EXTRA CLI ARGS")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--seeds", type=int, default=1000)
    p.add_argument("--cases", default="exp1,exp2,finite-mab,finite-revealing", help=f"of {', '.join(CASES)}")
    p.add_argument("--horizons", default=None, help="N1,N2 for every case (default: each case's own pair)")
    p.add_argument("--python", default=None, help="interpreter for every arm (default: ROOT/.venv/bin/python "
                                                  "where it exists, else this one)")
    p.add_argument("--workdir", default=None, help="where the runs write and stay (default: a temporary "
                                                   "directory, removed at the end)")
    p.add_argument("--json", default=None, help="report path (default: cli_two_horizon.json)")
    a = p.parse_args()
    cases = a.cases.split(",")
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        p.error(f"--cases: unknown {unknown}; known: {list(CASES)}")
    arms = [parse_arm(x, a.python) for x in a.arms]
    workdir = a.workdir or tempfile.mkdtemp(prefix="cli_two_horizon_")
    out_path = a.json or "cli_two_horizon.json"
    rows = {}
    for rep in range(a.repeats):
        for case in cases:
            hs = tuple(int(h) for h in a.horizons.split(",")) if a.horizons else CASES[case][1]
            for arm in arms:
                runs = [run_once(arm, case, h, a.seeds, workdir) for h in hs]
                rate = a.seeds * (hs[1] - hs[0]) / (runs[1]["run_s"] - runs[0]["run_s"])
                row = rows.setdefault((arm["label"], case), dict(
                    label=arm["label"], extra=arm["extra"], case=case, args=CASES[case][0],
                    seeds=a.seeds, horizons=hs, rates=[], runs=[]))
                row["rates"].append(rate)
                row["runs"].append(runs)
                with open(out_path, "w") as f:  # so far (a stopped run keeps what it measured)
                    json.dump(list(rows.values()), f, indent=1)
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
    with open(out_path, "w") as f:  # with the medians
        json.dump(out, f, indent=1)
    if a.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
