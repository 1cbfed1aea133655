"""Anytime-E2D throughput through the CLI at 1,000 seeds, from two horizons (issue: speed).

What: runs `e2d-jax run --agents anytime-e2d --seeds 1000` (one device unless
--host-devices) at two horizons per case and reports seed-rounds/s = seeds x (n2 - n1) /
(run_seconds(n2) - run_seconds(n1)) from each run's summary.json, so start-up and compilation
cancel; with the final regret and its 95% CI at n2. ROOT is a checkout with its own
``.venv`` (e.g. a `git worktree` of an older commit, to compare in the same session).

Run:  python benchmarks/cli_two_horizon.py ROOT LABEL [--host-devices N] [--seeds 1000]
      [--cases exp1,exp2,finite-mab,finite-revealing] [--python PY] [--json OUT.json]
On an accelerator the CLI uses every local device (the host-devices flag is for CPUs).

Results of 2026-11-27 (idle 2-core CPU): benchmarks/results/cli_1000seeds_cpu2_*.json.
"""
import argparse, json, os, subprocess, sys, time
p = argparse.ArgumentParser()
p.add_argument("root"); p.add_argument("label")
p.add_argument("--host-devices", type=int, default=1)
p.add_argument("--seeds", type=int, default=1000)
p.add_argument("--cases", default="exp1,exp2,finite-mab,finite-revealing")
p.add_argument("--python", default=None, help="interpreter (default: ROOT/.venv/bin/python)")
p.add_argument("--json", default=None, help="report path (default: cli_two_horizon_LABEL_DEVICES.json)")
a = p.parse_args()
CASES = {
    "exp1": (["--env", "semi-bandit", "--d", "3", "--arms", "10"], (1000, 2000)),
    "exp2": (["--env", "semi-bandit", "--d", "30", "--arms", "10"], (500, 1000)),
    "finite-mab": (["--env", "finite-mab"], (100, 200)),
    "finite-revealing": (["--env", "finite-revealing"], (100, 200)),
}
env = dict(os.environ, PYTHONPATH=a.root, E2D_JAX_CACHE_DIR="off")
out = []
for case in a.cases.split(","):
    args, hs = CASES[case]
    runs = []
    for h in hs:
        d = f"/tmp/cli_tp/{a.label}/{case}-{h}-{a.host_devices}"
        subprocess.run(["rm", "-rf", d])
        cmd = [a.python or os.path.join(a.root, ".venv/bin/python"), "-c", "import sys; from e2d_jax.cli import main; sys.exit(main())", "run", *args,
               "--agents", "anytime-e2d", "--seeds", str(a.seeds), "--horizon", str(h), "--out", d, "--quiet"]
        if a.host_devices > 1:
            cmd += ["--host-devices", str(a.host_devices)]
        t = time.perf_counter()
        # From ROOT: `python -c` puts the working directory first on sys.path, ahead of PYTHONPATH.
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=a.root)
        wall = time.perf_counter() - t
        if r.returncode != 0:
            print(case, h, "FAILED", r.stderr[-2000:]); break
        s = json.load(open(f"{d}/summary.json"))
        ag = s["agents"]["anytime-e2d"]
        runs.append(dict(h=h, wall=wall, run_s=ag.get("run_seconds"), compile_s=ag.get("compile_seconds"),
                         regret=ag["final_regret_mean"], ci=ag["final_regret_ci95"], src=s["versions"].get("e2d_jax_source")))
    if len(runs) < 2: continue
    key = "run_s" if runs[0]["run_s"] is not None else "wall"
    rate = a.seeds * (hs[1] - hs[0]) / (runs[1][key] - runs[0][key])
    row = dict(label=a.label, case=case, host_devices=a.host_devices, seeds=a.seeds, horizons=hs,
               seed_rounds_per_s=rate, timed_by=key, runs=runs)
    out.append(row)
    r1 = runs[1]
    print(f"{a.label:8s} {case:17s} dev={a.host_devices} {rate:10.0f} seed-rounds/s  regret@{hs[1]} {r1['regret']:.2f} "
          f"[{r1['ci'][0]:.2f}, {r1['ci'][1]:.2f}]  run_s {runs[0][key]:.1f}/{runs[1][key]:.1f} compile {r1['compile_s']}", flush=True)
    json.dump(out, open(a.json or f"cli_two_horizon_{a.label}_{a.host_devices}.json", "w"), indent=1)
