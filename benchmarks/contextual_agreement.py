"""e2d_jax's IDS against the IDS of the authors' code (kirschnj/pm-ids, branch e2d) on their
contextual game ``contextual_simple_bandit``: the same instance, the same horizon.

The game: L contexts, each with K actions whose features are N(0, 1) in R^d, drawn under
``fixed_seed(SEED)`` (``np.random.seed(SEED)``, then one ``np.random.normal(size=d * K)`` per
context, reshaped (K, d); the global state is restored afterwards), f* = e_1, bandit feedback
with unit Gaussian noise, contexts uniform (their ``np.random.choice`` each round). Their
defaults are d = 3, K = 10, L = 3.

Their IDS on a contextual game (``pm/strategies/ids.py``, ``gaps.py``, ``infogain.py``,
``lls.py``), per round t with context c: ridge regression with V_0 = I on every observation so
far; beta_t^{1/2} = sqrt(log det V_t + 2 log(1 / delta_t)) + 1 with delta_t = 1 / (s log s), s =
max(2, t) (their anytime level; unit noise); the gap estimates of context c's actions only,
``ValueGap`` Delta(a) = max_b UCB(x_b(c)) - LCB(x_a(c)) or ``DiffGap`` Delta(a) = max_b UCB(x_b(c) -
x_a(c)); ``WorstCaseInfoGain`` I(a) = log(1 + ||x_a(c)||^2_{V_t^{-1}}) (the only information gain
of theirs that accepts a context: the others fail on this game); the winner a_hat = argmin
Delta; and with ``--ids_sampling=fast`` (their default) the best pair (a_hat, j), with ``full``
the best pair over all pairs, each pair's mixing p minimising ((1 - p) D_1 + p D_2)^2 / ((1 - p)
I_1 + p I_2) in closed form. That is e2d_jax's ``linear_ids(info_gain="worst-case",
gap_estimate="value" | "difference", sampling="fast" | "full")`` with its defaults (reg = 1,
delta None: the same anytime level, S = ||f*|| = 1) acting on the round's context model, the
estimator kept across rounds. Their ``--ids_sampling=contextual`` has no counterpart in e2d_jax
and is run as a reference only (``value-contextual``): a policy mu (L x K) minimising (sum_c q_c
mu_c . Delta_c)^2 / (sum_c q_c mu_c . I_c), q the context distribution, by ``--ids_fw_steps`` - 2
= 98 Frank-Wolfe steps of size 1/s (s = 2..99) from the uniform policy, the action drawn from the
round's context's row; their code fills every row Delta_c with the round's context's gap
estimates (``gaps(context)`` for every c) while I_c is context c's.

What: ``--run-authors`` runs their unmodified code, one process per seed
(``python -m pm.main contextual_simple_bandit ids --seed=SEED --d=D --k=K --l=L --n=N
--force_seed=s FLAGS``, s = 1..``--authors-seeds``, ``--timeit`` for their loop's seconds), and
records each run's final regret with its command in ``--reference``, together with the
instance's arrays as their game factory builds them and, for ``fast`` and ``full``, one traced
run (force_seed 1): their own ``pm.main`` command line and game and strategy objects, driven by
a round loop of this script's that makes their loop's random draws in the same order and records each round's context, action,
observation, gap estimates, information gains and IDS pair. Then (or with an existing
``--reference``) this script reproduces their draw, checks that the arrays equal theirs, builds
the instance with ``e2d_jax.envs.contextual.from_contexts``, and

* per round: replays each trace through e2d_jax's agent (its ``act`` on the same history; the
  state updated with their action and observation) and reports the largest relative differences
  of the IDS distribution's ratio, expected gap estimate and expected information gain (every
  round), of the gap estimates and information gains (in the rounds the trace keeps them: the
  first 20 and every 25th; the trace keeps these, the ratios and the expectations to 12
  significant digits), the total variation between the two IDS distributions and the rounds
  whose winners differ;
* per seed: runs the matching agent with ``e2d.simulate`` for ``--seeds`` seeds and prints both
  mean final regrets with their 95% CIs (1.96 standard errors) and whether each mean lies in
  the other's CI.

Run:  python benchmarks/contextual_agreement.py --run-authors /path/to/pm-ids --python /path/to/their/python \\
          --reference benchmarks/results/cpu-2core/pm_ids_contextual_n500.json --horizon 500 \\
          [--instance-seeds 0 1] [--l 3 5] [--configs value-fast difference-fast value-full value-contextual] \\
          [--authors-seeds 100] [--jobs 2] [--seeds 500] [--json OUT]
      python benchmarks/contextual_agreement.py --reference benchmarks/results/cpu-2core/pm_ids_contextual_n500.json \\
          [--seeds 500] [--json benchmarks/results/cpu-2core/contextual_agreement_n500.json]

Their code needs NumPy 1.x (1.26.4 works), SciPy, pandas, osqp, matplotlib and GPy in its own
environment; their round loop takes about 0.1 ms a round with ``fast`` sampling, 0.2 ms with
``full`` and 2.3 ms with ``contextual`` on an idle core (0.3, 0.7 and 6 ms on the shared 2-core
machine under load; a process takes about 1.5 s, mostly imports).
"""
import argparse
import json
import os
import re
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: The authors' configurations by label: the flags after ``ids``. ``value-fast`` is their README's
#: IDS (``--ids_info=WorstCaseInfoGain --ids_gap=ValueGap``) at their default sampling (``fast``).
AUTHORS = {
    "value-fast": ["--ids_info=WorstCaseInfoGain", "--ids_gap=ValueGap"],
    "difference-fast": ["--ids_info=WorstCaseInfoGain", "--ids_gap=DiffGap"],
    "value-full": ["--ids_info=WorstCaseInfoGain", "--ids_gap=ValueGap", "--ids_sampling=full"],
    "value-contextual": ["--ids_info=WorstCaseInfoGain", "--ids_gap=ValueGap", "--ids_sampling=contextual"],
}
#: e2d_jax's matching ``linear_ids`` arguments (None: no counterpart).
OURS = {
    "value-fast": dict(info_gain="worst-case", gap_estimate="value", sampling="fast"),
    "difference-fast": dict(info_gain="worst-case", gap_estimate="difference", sampling="fast"),
    "value-full": dict(info_gain="worst-case", gap_estimate="value", sampling="full"),
    "value-contextual": None,
}
GAME = "contextual_simple_bandit"

#: Run with the authors' Python (argument: a JSON list of the game factory's keyword arguments):
#: prints the instance their game factory builds.
DUMP = """
import json, sys
import numpy as np
from pm.main import contextual_simple_bandit
game, instance = contextual_simple_bandit(**json.loads(sys.argv[1]))
print(json.dumps(dict(features=np.asarray(game.X).tolist(), observation_maps=np.asarray(game.M).tolist(),
                      theta=np.asarray(instance._theta).tolist(), probs=np.asarray(game.cdistr).tolist())))
"""

#: Run with the authors' Python and their ``pm.main`` arguments: their command line, game and
#: strategy, driven by a round loop of this script's that makes ``pm.main.run``'s random draws in
#: the same order and records every round; each round's gap estimates are the estimator's cached
#: ones of the round's context, the information gains are evaluated again (no random draws) and
#: the pair is their pair search without its final draw. Prints the trace as JSON.
TRACE = """
import json, sys
import numpy as np
import pm.main as M

g12 = lambda v: float('%.12g' % v)

def traced(game_factory, strategy_factory, **params):
    game, instance = game_factory(**params)
    strategy = strategy_factory(game, **params)
    sampling = params['ids_sampling']
    if params['force_seed']:
        np.random.seed(params['force_seed'])
    out = dict(context=[], action=[], observation=[], winner=[], i=[], j=[], p=[], ratio=[], expected_gap=[],
               expected_info=[], vector_rounds=[], gaps=[], info=[])
    total = 0.
    for t in range(params['n']):
        context = np.random.choice(game.num_context, p=game.cdistr)
        x = strategy.get_action(context=context)
        est = strategy.gap_estimator
        gaps = np.asarray(est.gaps(), float)
        info = np.asarray(strategy.info_gain.info(est, context), float)
        w = int(est.winner())
        best = (np.inf, None, None, None)
        firsts = [w] if sampling == 'fast' else range(len(gaps))
        for i in firsts:
            for j in range(len(gaps)):
                p, r = strategy._two_action_ratio(gaps[i], gaps[j], info[i], info[j])
                if r < best[0]:
                    best = (r, i, j, p)
        reward = instance.get_reward(x, context)
        total += instance.max_reward(context) - reward
        y = instance.get_noisy_observation(x, context)
        strategy.add_observations(x, y, context)
        r, i, j, p = best
        out['context'].append(int(context)); out['action'].append(int(x)); out['observation'].append(float(y[0]))
        out['winner'].append(w); out['i'].append(int(i)); out['j'].append(int(j)); out['p'].append(g12(p))
        out['ratio'].append(g12(r)); out['expected_gap'].append(g12((1 - p) * gaps[i] + p * gaps[j]))
        out['expected_info'].append(g12((1 - p) * info[i] + p * info[j]))
        if t < 20 or (t + 1) % 25 == 0:
            out['vector_rounds'].append(t + 1)
            out['gaps'].append([g12(v) for v in gaps]); out['info'].append([g12(v) for v in info])
    out['final_regret'] = float(total)
    print(json.dumps(out))

M.run = traced
M.main()
"""


def authors_features(seed, d, k, l):
    """Their ``fixed_seed(seed)`` draw: ``np.random.seed(seed)`` and one ``normal(size=d * k)`` per
    context, in order, from that one state (so the concatenation of the l draws)."""
    state = np.random.RandomState(seed)
    return np.stack([state.normal(size=d * k).reshape(k, d) for _ in range(l)])


def _compact(text):
    """JSON text with every innermost list of numbers on one line."""
    join = lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]"
    return re.sub(r"\[\s*([-0-9.eE+,\s]+?)\s*\]", join, text)


def ci(values):
    values = np.asarray(values, np.float64)
    half = 1.96 * values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else 0.0
    return float(values.mean()), float(values.mean() - half), float(values.mean() + half)


def _env(args):
    return {**os.environ, "PYTHONPATH": args.run_authors, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1"}


def _game_flags(args, seed, l):
    return [f"--seed={seed}", f"--d={args.d}", f"--k={args.k}", f"--l={l}", f"--n={args.horizon}"]


def _authors_run(args, label, seed, l, s):
    """One run of their code: (final regret, seconds of their round loop, command)."""
    out = tempfile.mkdtemp()
    cmd = [args.python, "-m", "pm.main", GAME, "ids", *_game_flags(args, seed, l), f"--outdir={out}",
           f"--force_seed={s}", "--timeit", *AUTHORS[label]]
    subprocess.run(cmd, check=True, env=_env(args), cwd=args.run_authors, capture_output=True)
    final = seconds = None
    for root, _, files in os.walk(out):
        for name in files:
            if name.startswith("run-"):
                final = float(np.loadtxt(os.path.join(root, name))[-1, 1])
            elif name.startswith("time-"):
                seconds = float(np.loadtxt(os.path.join(root, name)))
    # The command as recorded: no machine paths (the output folder is a fresh temporary one).
    return final, seconds, " ".join(["python", *cmd[2:]]).replace(out, "OUT")


def _authors_trace(args, label, seed, l):
    out = tempfile.mkdtemp()
    flags = [GAME, "ids", *_game_flags(args, seed, l), f"--outdir={out}", "--force_seed=1", *AUTHORS[label]]
    proc = subprocess.run([args.python, "-c", TRACE, *flags], check=True, env=_env(args), cwd=args.run_authors,
                          capture_output=True, text=True)
    trace = json.loads(proc.stdout.strip().splitlines()[-1])
    command = ("python -c TRACE " + " ".join(flags)).replace(out, "OUT")
    return dict(config=label, instance_seed=seed, l=l, force_seed=1, horizon=args.horizon,
                command=command + "  (TRACE: benchmarks/contextual_agreement.py)", **trace)


def run_authors(args):
    """Runs their configurations ``--configs`` on every instance (``--instance-seeds`` x ``--l``),
    seeds 1..``--authors-seeds``, ``--jobs`` at a time, and adds them to ``--reference`` (a run
    already there with the same configuration, instance and horizon is replaced); the file is
    rewritten after every configuration."""
    commit = subprocess.run(["git", "-C", args.run_authors, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or args.commit
    versions = subprocess.run([args.python, "-c", "import sys, numpy, scipy; print(sys.version.split()[0], "
                               "numpy.__version__, scipy.__version__)"], capture_output=True, text=True,
                              env=_env(args)).stdout.split()
    store = json.loads(open(args.reference).read()) if os.path.exists(args.reference) else dict(
        what=f"final regret of the authors' IDS on their {GAME} game, one process per seed, run unmodified",
        repo="github.com/kirschnj/pm-ids", branch="e2d", instances=[], runs=[], traces=[])
    store.update(commit=commit, software=dict(zip(("python", "numpy", "scipy"), versions)))

    def save():
        with open(args.reference, "w") as f:
            f.write(_compact(json.dumps(store, indent=1)))

    for seed in args.instance_seeds:
        for l in args.l:
            where = lambda r: (r["instance_seed"], r["l"], r.get("horizon", args.horizon)) == (seed, l, args.horizon)
            kwargs = dict(seed=seed, d=args.d, k=args.k, l=l, noise_var=1.0, normalize_actions=False)
            proc = subprocess.run([args.python, "-c", DUMP, json.dumps(kwargs)], check=True, env=_env(args),
                                  cwd=args.run_authors, capture_output=True, text=True)
            inst = dict(game=GAME, instance_seed=seed, d=args.d, k=args.k, l=l, noise_var=1.0,
                        **json.loads(proc.stdout.strip().splitlines()[-1]))
            store["instances"] = [r for r in store["instances"] if (r["instance_seed"], r["l"]) != (seed, l)] + [inst]
            for label in args.configs:
                run = dict(config=label, strategy="ids", flags=AUTHORS[label], game=GAME, instance_seed=seed, d=args.d,
                           k=args.k, l=l, horizon=args.horizon, final_regret=[], loop_seconds=[], commands=[])
                store["runs"] = [r for r in store["runs"] if not (r["config"] == label and where(r))] + [run]
                seeds = range(1, args.authors_seeds + 1)
                with ThreadPoolExecutor(args.jobs) as pool:
                    for s, (final, secs, cmd) in zip(seeds, pool.map(
                            lambda s: _authors_run(args, label, seed, l, s), seeds)):
                        run["final_regret"].append(final)
                        run["loop_seconds"].append(secs)
                        run["commands"].append(cmd)
                m, lo, hi = ci(run["final_regret"])
                print(f"authors {label:17s} seed={seed} l={l} n={args.horizon}: {m:.2f} [{lo:.2f}, {hi:.2f}] "
                      f"({len(seeds)} seeds, {np.median(run['loop_seconds']) / args.horizon * 1e3:.3f} ms a round)",
                      flush=True)
                if args.trace and OURS[label] is not None and (seed, l) == (args.instance_seeds[0], args.l[0]):
                    trace = _authors_trace(args, label, seed, l)
                    trace["cli_final_regret"] = run["final_regret"][0]
                    store["traces"] = [r for r in store["traces"] if not (r["config"] == label and where(r))] + [trace]
                    print(f"  traced run (force_seed 1): final regret {trace['final_regret']:.6f}, their command's "
                          f"{run['final_regret'][0]:.6f}", flush=True)
                save()


def replay(trace, features, theta, dtype):
    """Their traced history through e2d_jax's agent: every round ``act`` on the same state, its
    gap estimates, information gains and IDS distribution against theirs, then the state updated
    with their action and observation. Returns the largest differences."""
    import jax
    import jax.numpy as jnp

    from e2d_jax.agents import ids as ids_mod
    from e2d_jax.envs import contextual

    agent = ids_mod.linear_ids(**OURS[trace["config"]])
    k = features.shape[1]
    models = [contextual.from_contexts(features[c][None], theta, sigma=1.0, radius=1.0, dtype=dtype).model
              for c in range(features.shape[0])]
    state = agent.init(jax.random.key(0), models[0])
    kind, sampling = OURS[trace["config"]]["gap_estimate"], OURS[trace["config"]]["sampling"]

    @jax.jit
    def step(key, state, model):
        t = state.t + 1
        beta = ids_mod.confidence_width(state.estimate, model, t)
        gaps = ids_mod.linear_gap_estimates(state.estimate, model, beta, kind)
        info = ids_mod.worst_case_info(state.estimate.v_inv, model.obs_matrices)
        i, j, p, _ = ids_mod.ids_distribution(gaps, info, sampling, jnp.argmin(gaps))
        mu = jnp.zeros(gaps.shape, gaps.dtype).at[i].add(1 - p).at[j].add(p)
        _, new_state, out = agent.act(key, state, model)
        return new_state, gaps, info, mu, out

    update = jax.jit(agent.update)
    rel = lambda a, b: float(np.max(np.abs(np.asarray(a) - np.asarray(b)) / np.maximum(np.abs(np.asarray(b)), 1e-12)))
    vectors = dict(zip(trace["vector_rounds"], zip(trace["gaps"], trace["info"])))
    worst = dict(gaps_rel=0.0, info_rel=0.0, distribution_tv=0.0, ratio_rel=0.0, expected_gap_rel=0.0,
                 expected_info_rel=0.0, winner_mismatches=0, vector_rounds=len(vectors))
    for t, c in enumerate(trace["context"]):
        model = models[c]
        new_state, gaps, info, mu, out = step(jax.random.key(t), state, model)
        gaps, info, mu = np.asarray(gaps), np.asarray(info), np.asarray(mu)
        i, j, p = trace["i"][t], trace["j"][t], trace["p"][t]
        mu_a = np.zeros(k)
        mu_a[i] += 1 - p
        mu_a[j] += p
        if t + 1 in vectors:
            worst["gaps_rel"] = max(worst["gaps_rel"], rel(gaps, vectors[t + 1][0]))
            worst["info_rel"] = max(worst["info_rel"], rel(info, vectors[t + 1][1]))
        worst["distribution_tv"] = max(worst["distribution_tv"], 0.5 * float(np.abs(mu - mu_a).sum()))
        worst["ratio_rel"] = max(worst["ratio_rel"], rel(out.ratio, trace["ratio"][t]))
        worst["expected_gap_rel"] = max(worst["expected_gap_rel"], rel(out.delta, trace["expected_gap"][t]))
        worst["expected_info_rel"] = max(worst["expected_info_rel"], rel(out.info, trace["expected_info"][t]))
        worst["winner_mismatches"] += int(np.argmin(gaps) != trace["winner"][t])
        obs = jnp.asarray([trace["observation"][t]], gaps.dtype)
        state = update(new_state, jnp.asarray(trace["action"][t], jnp.int32), obs, model)
    return dict(worst, rounds=len(trace["context"]))


def compare(args):
    if args.dtype == "float64":
        import jax
        jax.config.update("jax_enable_x64", True)
    import jax

    import e2d_jax as e2d
    from e2d_jax.agents.ids import linear_ids
    from e2d_jax.envs import contextual

    ref = json.loads(open(args.reference).read())
    out = dict(jax=jax.__version__, e2d_jax=e2d.__version__, dtype=args.dtype, authors_commit=ref.get("commit"),
               instances=[], replays=[], rows=[])
    arrays = {}
    for inst in ref["instances"]:
        theirs = np.asarray(inst["features"], np.float64)
        ours = authors_features(inst["instance_seed"], inst["d"], inst["k"], inst["l"])
        equal = bool(np.array_equal(ours, theirs))
        maps_equal = bool(np.array_equal(np.asarray(inst["observation_maps"]).reshape(theirs.shape), theirs))
        arrays[inst["instance_seed"], inst["l"]] = (theirs, np.asarray(inst["theta"], np.float64),
                                                    np.asarray(inst["probs"], np.float64))
        print(f"instance seed={inst['instance_seed']} l={inst['l']}: features equal to theirs: {equal} "
              f"(max |diff| {np.max(np.abs(ours - theirs)):.1e}); observation maps = features: {maps_equal}; "
              f"theta {inst['theta']}; context probabilities {inst['probs']}")
        out["instances"].append(dict(instance_seed=inst["instance_seed"], l=inst["l"], d=inst["d"], k=inst["k"],
                                     features_equal=equal, observation_maps_equal_features=maps_equal))
    for trace in ref.get("traces", []):
        features, theta, _ = arrays[trace["instance_seed"], trace["l"]]
        t0 = time.perf_counter()
        worst = replay(trace, features, theta, args.dtype)
        print(f"replay {trace['config']:17s} seed={trace['instance_seed']} l={trace['l']}: {worst['rounds']} rounds, "
              f"max rel. diff. gaps {worst['gaps_rel']:.1e}, info {worst['info_rel']:.1e}, ratio "
              f"{worst['ratio_rel']:.1e}, expected gap {worst['expected_gap_rel']:.1e}, expected info "
              f"{worst['expected_info_rel']:.1e}; max TV of the IDS "
              f"distributions {worst['distribution_tv']:.1e}; winner mismatches {worst['winner_mismatches']} "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)
        out["replays"].append(dict(config=trace["config"], instance_seed=trace["instance_seed"], l=trace["l"],
                                   force_seed=trace["force_seed"], traced_final_regret=trace["final_regret"],
                                   cli_final_regret=trace.get("cli_final_regret"), **worst))
    print(f"{'config':17s} {'seed':>4s} {'l':>2s} {'n':>5s}  {'pm-ids':34s} {'e2d_jax':34s} agree")
    fmt = lambda m, lo, hi, s: f"{m:7.2f} [{lo:7.2f}, {hi:7.2f}] ({s})"
    for run in ref["runs"]:
        features, theta, probs = arrays[run["instance_seed"], run["l"]]
        theirs = ci(run["final_regret"])
        row = dict(config=run["config"], authors_flags=run["flags"], instance_seed=run["instance_seed"], d=run["d"],
                   k=run["k"], l=run["l"], horizon=run["horizon"],
                   pm_ids=dict(mean=theirs[0], ci95=list(theirs[1:]), seeds=len(run["final_regret"]),
                               ms_per_round=float(np.median(run["loop_seconds"])) / run["horizon"] * 1e3))
        if OURS[run["config"]] is None:
            print(f"{run['config']:17s} {run['instance_seed']:4d} {run['l']:2d} {run['horizon']:5d}  "
                  f"{fmt(*theirs, len(run['final_regret'])):34s} {'(no counterpart)':34s} -", flush=True)
            out["rows"].append(dict(row, e2d_jax=None, within_each_others_ci=None))
            continue
        params = contextual.from_contexts(features, theta, probs=probs, sigma=1.0, radius=1.0, dtype=args.dtype)
        agent = linear_ids(**OURS[run["config"]])
        t0 = time.perf_counter()
        sim = e2d.simulate(params, agent, horizon=run["horizon"], num_seeds=args.seeds, record_every=run["horizon"])
        final = np.asarray(sim.result.regret)[:, -1]
        seconds = time.perf_counter() - t0
        ours = ci(final)
        ours_in_theirs, theirs_in_ours = theirs[1] <= ours[0] <= theirs[2], ours[1] <= theirs[0] <= ours[2]
        se = np.hypot((theirs[2] - theirs[0]) / 1.96, (ours[2] - ours[0]) / 1.96)
        row.update(e2d_jax=dict(agent=f"linear_ids({', '.join(f'{k}={v!r}' for k, v in OURS[run['config']].items())})",
                                mean=ours[0], ci95=list(ours[1:]), seeds=args.seeds, seconds=seconds,
                                invalid_rounds=int(np.asarray(sim.result.invalid_rounds).sum())),
                   e2d_jax_mean_in_pm_ids_ci=bool(ours_in_theirs), pm_ids_mean_in_e2d_jax_ci=bool(theirs_in_ours),
                   within_each_others_ci=bool(ours_in_theirs or theirs_in_ours),
                   difference_z=float((ours[0] - theirs[0]) / se) if se > 0 else 0.0)
        out["rows"].append(row)
        print(f"{run['config']:17s} {run['instance_seed']:4d} {run['l']:2d} {run['horizon']:5d}  "
              f"{fmt(*theirs, len(run['final_regret'])):34s} {fmt(*ours, args.seeds):34s} "
              f"{'yes' if ours_in_theirs else 'no'}/{'yes' if theirs_in_ours else 'no'}  "
              f"(z {row['difference_z']:+.2f})",
              flush=True)
    print("agree: e2d_jax's mean in pm-ids' CI / pm-ids' mean in e2d_jax's CI; z: the difference of the means in "
          "standard errors")
    if args.json:
        with open(args.json, "w") as f:
            f.write(_compact(json.dumps(out, indent=1)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reference", required=True, help="the authors' runs (JSON): written by --run-authors")
    parser.add_argument("--run-authors", default=None, help="a copy of kirschnj/pm-ids, branch e2d, to run first")
    parser.add_argument("--python", default="python", help="the Python that runs their code")
    parser.add_argument("--commit", default=None, help="their commit, when --run-authors is not a git checkout")
    parser.add_argument("--configs", nargs="+", default=["value-fast", "difference-fast", "value-full"],
                        choices=sorted(AUTHORS), help="the authors' configurations to run (see AUTHORS)")
    parser.add_argument("--jobs", type=int, default=2, help="authors' runs at a time")
    parser.add_argument("--authors-seeds", type=int, default=100)
    parser.add_argument("--instance-seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--d", type=int, default=3)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--l", type=int, nargs="+", default=[3])
    parser.add_argument("--horizon", type=int, default=500)
    parser.add_argument("--seeds", type=int, default=500)
    parser.add_argument("--trace", action=argparse.BooleanOptionalAction, default=True,
                        help="trace one run (force_seed 1) of each configuration on the first instance")
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    parser.add_argument("--compare", action=argparse.BooleanOptionalAction, default=True,
                        help="compare with e2d_jax after the authors' runs (--no-compare: only run theirs)")
    parser.add_argument("--json", default=None, help="write the comparison here")
    args = parser.parse_args()
    if args.run_authors:
        run_authors(args)
    if args.compare:
        compare(args)


if __name__ == "__main__":
    main()
