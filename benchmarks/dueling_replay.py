"""The authors' Anytime-E2D (kirschnj/pm-ids, branch e2d: ``e2d --e2d_anytime_lambda=1
--e2d_delta_f=1``) against e2d_jax's Anytime-E2D, round by round, on their ``random_dueling`` game
(``--seed=0 --d=3 --k=10``: K = 100 pair actions, f* = e_1, unit noise).

Why: at n = 200 their Anytime-E2D has a final regret of about 131 and e2d_jax's ``anytime_e2d()``
(the same algorithm: ridge with V_0 = I, eps_t^2 = 3 / t (their d / t; e2d_jax's r / t with r the
observable span's dimension, 3 here), gaps Delta_f, divergence ||M (g - f)||^2) about 99
(``benchmarks/dueling_agreement.py``). This script measures, on the same
history, where the two sampling distributions differ and what the difference costs.

What: ``--run-authors`` traces their unmodified code, one process per seed (``--force-seeds``):
their ``pm.main`` command line builds their game and strategy objects, and a round loop of this
script's (``TRACE``, passed with ``python -c``) makes ``pm.main.run``'s random draws in the same
order (``get_action``, then the instance's noise) and records every round: their round counter t,
their estimate theta_hat (``lls.theta``) before the round, the distribution mu the action is drawn
from (``strategy.mu`` after ``get_action``), the lambda they choose and their objective there (from
their own log line), the action, the observation and the regret. The traces are stored in
``--json``. Then (or from an existing ``--json``) every trace is replayed through e2d_jax in
float64: the ridge estimator updated with their actions and observations, and in every round

* ``theirs``: their mu; psi(lambda_theirs, mu_theirs) (the Lagrangian of the linear-DEC lemma,
  ``e2d_jax.dec.linear.psi``: checks that e2d_jax's objective is theirs) and the ac-DEC value of
  their mu, g(mu) = min_lambda psi(lambda, mu) (``e2d_jax.dec.linear.exact_value``), with its
  minimising lambda;
* ``agent``: e2d_jax's ``anytime_e2d()`` ``act`` on the same state (its warm start carried along
  their history), the mu it samples from, its value, lambda and certified gap;
* ``optimum``: ``e2d.linear_acdec(model, f_hat, eps2, gap_type="delta_f")`` solved to a tight
  certificate (``rtol`` = ``--rtol``), cold: the ac-DEC's value, lower bound, lambda and mu;
* ``capped``: the best over their lambda grid {sqrt(t) j / 99 : j = 1..99} of the offset DEC solved
  to a certificate (``e2d_jax.dec.linear.solve_offset`` by interior point, all 99 lambdas in one
  vmapped solve) plus lambda eps^2: the ac-DEC restricted to their lambda range, and the mu at the
  best grid point;

and for each mu: the expected regret under f* (sum_a mu_a (max_b <phi_b, f*> - <phi_a, f*>)), the
part of it on informative pairs, the mass on informative pairs (pairs (a, b), a != b) and on the
optimal self-duel, and the expected estimated gap mu . (max r - r) at f_hat. The summaries: their
objective's relative excess over the certified optimum, split into what the cap on lambda costs
(capped - optimum) and what their Frank-Wolfe solve costs (theirs - capped); the share of rounds
whose certified lambda lies beyond sqrt(t) and of rounds where their lambda is the cap sqrt(t);
the summed expected regret of each mu along their history (what each round's choice costs with
the history held fixed); and total variations between the distributions over unordered pairs
((a, b) and (b, a) have the same features and, up to sign, the same observation map).

``--probe-rounds`` (with ``--run-authors``) probes their solver at a few rounds of each trace
(``PROBE``, ``PROBES``): a fresh strategy from their factory, fed the trace's observations
through ``add_observations``, its ``mu`` set to the trace's previous distribution (or uniform),
then their ``update_mu`` with 100 (as run: reproduces the traced mu), 1,000 or 10,000
Frank-Wolfe steps, on their grid or at e2d_jax's certified lambda* (their single-lambda mode,
``e2d_fixed_lambda``). The replay evaluates each probe's mu as above.

``--closed-loop-seeds N`` runs e2d_jax's Anytime-E2D and the same agent with lambda restricted to
(0, sqrt(t)] (``capped_anytime_e2d``: the offset DEC at sqrt(t), solved exactly, where the
certified lambda* exceeds it) on the same N seeds: what their cap alone costs, in closed loop.

Run:  python benchmarks/dueling_replay.py --run-authors /path/to/pm-ids --python /path/to/their/python \\
          --json benchmarks/results/cpu-2core/dueling_replay_n200.json --horizon 200 [--force-seeds 1 2] [--jobs 2] \\
          [--probe-rounds 50 100 200] [--closed-loop-seeds 100] [--verbose]
      python benchmarks/dueling_replay.py --json benchmarks/results/cpu-2core/dueling_replay_n200.json
          (the replay alone, from the stored traces and probes; no need for their code)

Their code needs NumPy 1.x (1.26.4 works), SciPy, pandas, osqp, matplotlib and GPy in its own
environment; their Anytime-E2D takes 1.5 to 3 s a round here (99 lambdas x 99 Frank-Wolfe steps),
so a trace of 200 rounds takes 5 to 15 minutes (2-core machine under load); the probes about 5
minutes a trace, the replay 2 to 3 minutes a trace, the closed loop (100 seeds) about 6 minutes.
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

#: Their Anytime-E2D with gaps Delta_f (the configuration of the paper's figure).
FLAGS = ["--e2d_anytime_lambda=1", "--e2d_delta_f=1"]
GAME = "random_dueling"

#: Run with the authors' Python and their ``pm.main`` arguments: their command line, game and
#: strategy, driven by a round loop of this script's that makes ``pm.main.run``'s random draws in
#: the same order and records every round. Their strategy logs each round's lambda and objective
#: (``logging.info``); a handler catches those lines. Prints the trace as JSON.
TRACE = """
import json, logging, sys
import numpy as np
import pm.main as M

g12 = lambda v: float('%.12g' % v)
lines = []

class Catch(logging.Handler):
    def emit(self, record):
        msg = record.getMessage()
        if msg.startswith('Iteration:'):
            lines.append(msg)

logging.getLogger().addHandler(Catch())
logging.getLogger().setLevel(logging.INFO)

def traced(game_factory, strategy_factory, **params):
    game, instance = game_factory(**params)
    strategy = strategy_factory(game, **params)
    if params['force_seed']:
        np.random.seed(params['force_seed'])
    out = dict(features=np.asarray(game.X).tolist(), observation_maps=np.asarray(game.M).tolist(),
               theta=np.asarray(instance._theta).tolist(), t=[], f_hat=[], mu=[], lam=[], objective=[],
               action=[], observation=[], regret=[])
    total = 0.
    for t in range(params['n']):
        out['t'].append(int(strategy.t))
        out['f_hat'].append([g12(v) for v in strategy.lls.theta])
        x = strategy.get_action()
        out['mu'].append([float('%.10g' % v) for v in strategy.mu])
        reward = instance.get_reward(x)
        regret = instance.max_reward() - reward
        total += regret
        y = instance.get_noisy_observation(x)
        strategy.add_observations(x, y)
        msg = lines[-1]
        out['lam'].append(float(msg.split('lambda: ')[1].split(',')[0]))
        out['objective'].append(float(msg.split('best_obj: ')[1]))
        out['action'].append(int(x)); out['observation'].append(float(y[0])); out['regret'].append(g12(regret))
        print(t + 1, int(x), out['lam'][-1], out['objective'][-1], file=sys.stderr, flush=True)
    out['final_regret'] = float(total)
    print(json.dumps(out))

M.run = traced
M.main()
"""


#: Run with the authors' Python, their ``pm.main`` arguments and the file named by
#: ``PROBE_SPEC`` (JSON: the trace's actions and observations, and a list of probes: round,
#: Frank-Wolfe steps, start, lambda): for each probe a fresh strategy from their factory (with
#: ``e2d_fixed_lambda`` = the probe's lambda where it has one: their single-lambda mode), their
#: estimator fed the trace's first round - 1 observations through ``add_observations``, its
#: ``mu`` set to the start (the trace's previous distribution, or uniform), then their
#: ``update_mu(fw_iter=...)``; no random draws. Prints each probe's lambda, objective and mu as JSON.
PROBE = """
import json, logging, os
import numpy as np
import pm.main as M

lines = []

class Catch(logging.Handler):
    def emit(self, record):
        msg = record.getMessage()
        if msg.startswith('Iteration:'):
            lines.append(msg)

logging.getLogger().addHandler(Catch())
logging.getLogger().setLevel(logging.INFO)

def probe(game_factory, strategy_factory, **params):
    spec = json.load(open(os.environ['PROBE_SPEC']))
    game, instance = game_factory(**params)
    out = []
    for p in spec['probes']:
        kwargs = dict(params)
        if p['lam'] is not None:
            kwargs['e2d_fixed_lambda'] = p['lam']
        strategy = strategy_factory(game, **kwargs)
        for a, y in zip(spec['action'][:p['round'] - 1], spec['observation'][:p['round'] - 1]):
            strategy.add_observations(a, np.array([y]))
        strategy.mu = np.asarray(p['start'], float)
        strategy.update_mu(fw_iter=p['fw_iter'])
        msg = lines[-1]
        out.append(dict(p, start=None, t=int(strategy.t), lam_chosen=float(msg.split('lambda: ')[1].split(',')[0]),
                        objective=float(msg.split('best_obj: ')[1]), mu=[float('%.10g' % v) for v in strategy.mu]))
    print(json.dumps(out))

M.run = probe
M.main()
"""


#: The probes of their solver (``--probe-rounds``): (name, Frank-Wolfe steps, start, lambda) with
#: lambda None for their grid over (0, sqrt(t)] and "optimum" for e2d_jax's certified lambda* of
#: the round (their single-lambda mode, ``--e2d_fixed_lambda``).
PROBES = (("as_run", 100, "previous", None), ("steps_1000", 1000, "previous", None), ("cold", 100, "uniform", None),
          ("optimum_lam", 100, "previous", "optimum"), ("optimum_lam_steps_10000", 10000, "previous", "optimum"))


def base_arms(seed, d, k):
    """The authors' random_dueling base arms of instance seed ``seed``."""
    state = np.random.RandomState(seed)
    return state.normal(size=d * k).reshape(k, d)


def _compact(text):
    """JSON text with every innermost list of numbers on one line."""
    join = lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]"  # noqa: E731
    return re.sub(r"\[\s*([-0-9.eE+,\s]+?)\s*\]", join, text)


def _env(args):
    return {**os.environ, "PYTHONPATH": args.run_authors, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1"}


def _flags(args, s, out):
    return [GAME, "e2d", f"--seed={args.instance_seed}", f"--d={args.d}", f"--k={args.k}", f"--n={args.horizon}",
            f"--outdir={out}", f"--force_seed={s}", *FLAGS]


def _authors_trace(args, s):
    out = tempfile.mkdtemp()
    flags = _flags(args, s, out)
    t0 = time.perf_counter()
    proc = subprocess.run([args.python, "-c", TRACE, *flags], check=True, env=_env(args), cwd=args.run_authors,
                          capture_output=True, text=True)
    trace = json.loads(proc.stdout.strip().splitlines()[-1])
    command = ("python -c TRACE " + " ".join(flags)).replace(out, "OUT")
    return dict(force_seed=s, horizon=args.horizon, seconds=time.perf_counter() - t0,
                command=command + "  (TRACE: benchmarks/dueling_replay.py)", **trace)


def run_probes(args):
    """Their solver at rounds ``--probe-rounds`` of each trace (``PROBE``, ``PROBES``), stored in the
    trace as ``probes``."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import e2d_jax as e2d
    from e2d_jax.envs import dueling

    store = _load(args.json)
    model = dueling.from_base_arms(base_arms(args.instance_seed, args.d, args.k), dtype="float64").model
    for trace in store["authors"]["traces"]:
        probes = []
        for r in args.probe_rounds:
            i = r - 1
            lam_opt = float(e2d.linear_acdec(model, np.asarray(trace["f_hat"][i]), args.d / trace["t"][i],
                                             gap_type="delta_f", rtol=args.rtol).lam)
            k = len(trace["mu"][0])
            previous = trace["mu"][i - 1] if i > 0 else [1.0 / k] * k
            for name, steps, start, lam in PROBES:
                probes.append(dict(name=name, round=r, fw_iter=steps, start_kind=start,
                                   start=previous if start == "previous" else [1.0 / k] * k,
                                   lam=lam_opt if lam == "optimum" else None))
        spec = os.path.join(tempfile.mkdtemp(), "spec.json")
        with open(spec, "w") as f:
            json.dump(dict(action=trace["action"], observation=trace["observation"], probes=probes), f)
        out = tempfile.mkdtemp()
        flags = _flags(args, trace["force_seed"], out)
        t0 = time.perf_counter()
        proc = subprocess.run([args.python, "-c", PROBE, *flags], check=True, env={**_env(args), "PROBE_SPEC": spec},
                              cwd=args.run_authors, capture_output=True, text=True)
        trace["probes"] = json.loads(proc.stdout.strip().splitlines()[-1])
        trace["probe_command"] = ("PROBE_SPEC=SPEC python -c PROBE " + " ".join(flags)).replace(out, "OUT") + \
            "  (PROBE: benchmarks/dueling_replay.py)"
        print(f"probed force_seed {trace['force_seed']} at rounds {args.probe_rounds} "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
        _save(args.json, store)


#: The results file's description.
WHAT = ("the authors' Anytime-E2D (kirschnj/pm-ids, branch e2d, e2d --e2d_anytime_lambda=1 --e2d_delta_f=1) on "
        "random_dueling --seed=0 --d=3 --k=10, traced round by round (authors.traces: their estimate, distribution, "
        "lambda, objective, action, observation, regret), probed (authors.traces[].probes: their solver with more "
        "steps, a cold start, or at e2d_jax's certified lambda), replayed through e2d_jax's estimator, Anytime-E2D "
        "agent and certified DEC solvers (replays), and e2d_jax's Anytime-E2D with and without lambda <= sqrt(t) in "
        "closed loop (closed_loop); made by benchmarks/dueling_replay.py")


def _load(path):
    return json.loads(open(path).read()) if path and os.path.exists(path) else None


def _save(path, store):
    with open(path, "w") as f:
        f.write(_compact(json.dumps(store, indent=1)))


def run_authors(args):
    """Traces their Anytime-E2D for seeds ``--force-seeds``, ``--jobs`` at a time, into ``--json``
    (a trace with the same seed and horizon is replaced; the file is rewritten after each)."""
    commit = subprocess.run(["git", "-C", args.run_authors, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or args.commit
    versions = subprocess.run([args.python, "-c", "import sys, numpy, scipy; print(sys.version.split()[0], "
                               "numpy.__version__, scipy.__version__)"], capture_output=True, text=True,
                              env=_env(args)).stdout.split()
    store = _load(args.json) or {}
    store.setdefault("authors", dict(repo="github.com/kirschnj/pm-ids", branch="e2d", strategy="e2d", flags=FLAGS,
                                     game=GAME, instance_seed=args.instance_seed, d=args.d, k=args.k, traces=[]))
    store["authors"].update(commit=commit, software=dict(zip(("python", "numpy", "scipy"), versions)))
    with ThreadPoolExecutor(args.jobs) as pool:
        for trace in pool.map(lambda s: _authors_trace(args, s), args.force_seeds):
            traces = store["authors"]["traces"]
            store["authors"]["traces"] = [r for r in traces if (r["force_seed"], r["horizon"]) !=
                                          (trace["force_seed"], trace["horizon"])] + [trace]
            print(f"traced force_seed {trace['force_seed']}: final regret {trace['final_regret']:.6f} "
                  f"({trace['seconds']:.0f} s)", flush=True)
            _save(args.json, store)


#: Rounds whose distributions are kept in the results (their five heaviest actions each).
SNAPSHOT_ROUNDS = (1, 2, 3, 5, 10, 20, 50, 100, 150, 200)


def _mu_stats(mu, regrets, informative, best, r):
    """Per-distribution numbers: expected regret under f*, mass on informative pairs and on the
    optimal self-duel, expected estimated gap at f_hat (rewards r)."""
    return dict(expected_regret=float(mu @ regrets), regret_informative=float(mu @ (regrets * informative)),
                informative=float(mu @ informative), optimal=float(mu[best]),
                estimated_gap=float(mu @ (r.max() - r)))


def _unordered(mu, k):
    """Mass on unordered pairs {a, b} (the upper triangle with the diagonal): (a, b) and (b, a)
    have the same features and observation maps up to sign, so they are the same action to both
    algorithms."""
    m = mu.reshape(k, k)
    return (np.triu(m + m.T, 1) + np.diag(np.diag(m)))[np.triu_indices(k)]


def _tv(mu, nu, k):
    """Total variation between two distributions over unordered pairs."""
    return 0.5 * float(np.abs(_unordered(mu, k) - _unordered(nu, k)).sum())


def _top(mu, n=5):
    idx = np.argsort(-mu)[:n]
    return [[int(i), float("%.4g" % mu[i])] for i in idx]


def replay(trace, args):
    """Their traced history through e2d_jax in float64: per round the quantities listed in the
    module docstring. Returns (per-round columns, snapshots, checks)."""
    import jax
    import jax.numpy as jnp

    import e2d_jax as e2d
    from e2d_jax.agents import e2d_linear
    from e2d_jax.dec import linear as dec_linear
    from e2d_jax.dec import solvers as S
    from e2d_jax.envs import dueling

    params = dueling.from_base_arms(base_arms(args.instance_seed, args.d, args.k), dtype="float64")
    model = params.model
    span = model.span
    features = np.asarray(model.features)
    checks = dict(features_equal=bool(np.array_equal(features, np.asarray(trace["features"]))),
                  observation_maps_equal=bool(np.array_equal(np.asarray(model.obs_matrices),
                                                             np.asarray(trace["observation_maps"]))),
                  theta_equal=bool(np.array_equal(np.asarray(params.theta), np.asarray(trace["theta"]))))
    rewards = features @ np.asarray(params.theta)
    regrets = rewards.max() - rewards
    informative = np.asarray(dueling.informative(params, np.arange(features.shape[0])), np.float64)
    best = int(np.argmax(rewards))
    agent = e2d_linear.anytime_e2d()
    state = agent.init(jax.random.key(0), model)
    act, update = jax.jit(agent.act), jax.jit(agent.update)
    inner = S.InteriorPoint(maxiter=50, rtol=args.rtol)

    @jax.jit
    def theirs_on_ours(mu, f_hat, eps2, lam):
        f_r = f_hat @ span.basis
        g, lam_star = dec_linear.exact_value(mu, span, f_r, eps2)
        return dec_linear.psi(lam, mu, span, f_r, eps2), g, lam_star

    @jax.jit
    def capped(f_hat, eps2, t):
        """The offset DEC at each of their 99 lambdas, certified, plus lambda eps^2."""
        lams = jnp.sqrt(t) * jnp.arange(1, 100) / 99.0
        f_r = f_hat @ span.basis
        res = jax.vmap(lambda lam: dec_linear.solve_offset(span, f_r, lam, inner, None, "delta_f")[0])(lams)
        return lams, res.value + lams * eps2, res.lower_bound + lams * eps2, res.mu, res.status

    @jax.jit
    def exact(mu, f_hat, eps2):
        return dec_linear.exact_value(mu, span, f_hat @ span.basis, eps2)

    cols = {}
    add = lambda name, v: cols.setdefault(name, []).append(v)  # noqa: E731
    snaps = []
    f_hat_diff = 0.0
    for i, t in enumerate(trace["t"]):
        f_theirs = np.asarray(trace["f_hat"][i])
        f_ours = np.asarray(state.estimate.f_hat)
        f_hat_diff = max(f_hat_diff, float(np.max(np.abs(f_ours - f_theirs))))
        eps2 = args.d / t  # their eps_t^2 = d / t (exploration multiplier 1)
        mu_a = np.asarray(trace["mu"][i], np.float64)
        mu_a = mu_a / mu_a.sum()
        lam_a = trace["lam"][i]
        psi_a, g_a, lam_star_a = map(float, theirs_on_ours(mu_a, f_theirs, eps2, lam_a))
        # e2d_jax's agent on the same state (its warm start carried along their history)
        _, new_state, info = act(jax.random.key(i), state, model)
        mu_g = np.asarray(new_state.warm.mu)
        g_g = float(exact(mu_g, f_theirs, eps2)[0])
        # the ac-DEC at their f_hat and eps^2, certified, cold
        opt = e2d.linear_acdec(model, f_theirs, eps2, gap_type="delta_f", rtol=args.rtol)
        mu_o = np.asarray(opt.mu)
        # restricted to their lambda grid
        lams, tot, low, mus, status = map(np.asarray, capped(jnp.asarray(f_theirs), eps2, float(t)))
        j = int(np.argmin(tot))
        mu_c = mus[j]
        j_a = int(np.argmin(np.abs(lams - lam_a)))  # their lambda's grid point
        r = features @ f_theirs
        add("t", t)
        add("eps2", eps2)
        add("sqrt_t", float(np.sqrt(t)))
        add("their_lam", lam_a)
        add("their_objective", trace["objective"][i])
        add("psi_at_their_lam_mu", psi_a)
        add("their_mu_acdec", g_a)
        add("their_mu_best_lam", lam_star_a)
        add("their_lam_offset_dec_certified", float(tot[j_a]))
        add("agent_value", float(info.value))
        add("agent_mu_acdec", g_g)
        add("agent_lam", float(info.lam))
        add("agent_gap", float(info.gap))
        add("agent_status", int(info.status))
        add("agent_eps2", float(info.eps2))
        add("optimum_value", float(opt.value))
        add("optimum_lower", float(opt.lower_bound))
        add("optimum_lam", float(opt.lam))
        add("optimum_status", int(opt.status))
        add("capped_value", float(tot[j]))
        add("capped_lower", float(np.min(low)))
        add("capped_lam", float(lams[j]))
        add("capped_mu_acdec", float(exact(mu_c, f_theirs, eps2)[0]))
        add("capped_status_max", int(status.max()))
        # local minima of the grid's values (1: unimodal, so the best lambda <= sqrt(t) is
        # min(lambda*, sqrt(t)) up to the grid's resolution)
        inner_min = (tot[1:-1] < tot[:-2]) & (tot[1:-1] < tot[2:])
        add("capped_local_minima", int(inner_min.sum() + (tot[0] < tot[1]) + (tot[-1] < tot[-2])))
        for name, mu in (("their", mu_a), ("agent", mu_g), ("optimum", mu_o), ("capped", mu_c)):
            for key, v in _mu_stats(mu, regrets, informative, best, r).items():
                add(f"{name}_{key}", v)
        add("tv_their_agent", _tv(mu_a, mu_g, args.k))
        add("tv_their_optimum", _tv(mu_a, mu_o, args.k))
        add("tv_their_capped", _tv(mu_a, mu_c, args.k))
        add("tv_agent_optimum", _tv(mu_g, mu_o, args.k))
        add("tv_capped_optimum", _tv(mu_c, mu_o, args.k))
        add("action", trace["action"][i])
        add("realized_regret", trace["regret"][i])
        if i + 1 in SNAPSHOT_ROUNDS:
            snaps.append(dict(round=i + 1, t=t, their=_top(mu_a), agent=_top(mu_g), optimum=_top(mu_o),
                              capped=_top(mu_c)))
        obs = jnp.asarray([trace["observation"][i]], jnp.float64)
        state = update(new_state, jnp.asarray(trace["action"][i], jnp.int32), obs, model)
        if args.verbose and ((i + 1) % 20 == 0 or i < 3):
            print(f"  round {i + 1:3d}: theirs {psi_a:.4f} (g {g_a:.4f}, lam {lam_a:.3f}), optimum {opt.value:.4f} "
                  f"[{opt.lower_bound:.4f}] lam {opt.lam:.3f}, capped {tot[j]:.4f} lam {lams[j]:.3f}, sqrt t "
                  f"{np.sqrt(t):.3f}; E regret theirs {cols['their_expected_regret'][-1]:.3f} agent "
                  f"{cols['agent_expected_regret'][-1]:.3f} optimum {cols['optimum_expected_regret'][-1]:.3f} "
                  f"capped {cols['capped_expected_regret'][-1]:.3f}", flush=True)
    probes = []
    for p in trace.get("probes", []):
        i = p["round"] - 1
        f_theirs, eps2 = np.asarray(trace["f_hat"][i]), args.d / trace["t"][i]
        mu = np.asarray(p["mu"], np.float64)
        mu = mu / mu.sum()
        psi_p, g_p, lam_star_p = map(float, theirs_on_ours(mu, f_theirs, eps2, p["lam_chosen"]))
        opt = cols["optimum_value"][i]
        probes.append(dict(name=p["name"], round=p["round"], fw_iter=p["fw_iter"], start=p["start_kind"],
                           lam=p["lam_chosen"], sqrt_t=float(np.sqrt(trace["t"][i])),
                           optimum_lam=cols["optimum_lam"][i],
                           objective=p["objective"], objective_check_rel=abs(psi_p - p["objective"]) / abs(opt),
                           objective_excess=(p["objective"] - opt) / opt, acdec_excess=(g_p - opt) / opt,
                           best_lam_for_mu=lam_star_p,
                           tv_to_traced=0.5 * float(np.abs(mu - np.asarray(trace["mu"][i]) /
                                                           np.sum(trace["mu"][i])).sum()),
                           optimum_expected_regret=cols["optimum_expected_regret"][i],
                           capped_expected_regret=cols["capped_expected_regret"][i],
                           their_expected_regret=cols["their_expected_regret"][i],
                           **_mu_stats(mu, regrets, informative, best, features @ f_theirs)))
    checks.update(f_hat_max_abs_diff=f_hat_diff,
                  objective_max_rel_diff=float(np.max(np.abs(np.asarray(cols["psi_at_their_lam_mu"])
                                                             - np.asarray(cols["their_objective"]))
                                                      / np.abs(np.asarray(cols["their_objective"])))),
                  eps2_max_rel_diff=float(np.max(np.abs(np.asarray(cols["agent_eps2"]) - np.asarray(cols["eps2"]))
                                                 / np.asarray(cols["eps2"]))))
    return cols, snaps, checks, probes


def summarize(cols):
    """The replay's summary numbers (see the module docstring)."""
    c = {k: np.asarray(v, np.float64) for k, v in cols.items()}
    opt = c["optimum_value"]
    rel = lambda x: x / opt  # noqa: E731
    stat = lambda x: dict(mean=float(np.mean(x)), median=float(np.median(x)), max=float(np.max(x)))  # noqa: E731
    phases = {"1-20": slice(0, 20), "21-100": slice(20, 100), "101-200": slice(100, 200)}
    n = len(opt)
    out = dict(
        rounds=n,
        certified=dict(optimum_max_rel_gap=float(np.max((opt - c["optimum_lower"]) / opt)),
                       optimum_not_ok=int(np.sum(c["optimum_status"] != 0)),
                       capped_not_ok=int(np.sum(c["capped_status_max"] != 0)),
                       agent_max_rel_gap=float(np.max(c["agent_gap"] / c["agent_value"])),
                       agent_not_ok=int(np.sum(c["agent_status"] != 0))),
        # the objective's excess over the certified optimum, relative to it
        capped_grid_not_unimodal=int(np.sum(c["capped_local_minima"] > 1)),
        excess=dict(their_objective=dict(stat(rel(c["their_objective"] - opt)),
                                         min=float(np.min(rel(c["their_objective"] - opt)))),
                    their_mu_at_its_best_lam=stat(rel(c["their_mu_acdec"] - opt)),
                    lambda_cap=stat(rel(c["capped_value"] - opt)),
                    frank_wolfe=stat(rel(c["their_objective"] - c["capped_value"])),
                    frank_wolfe_at_their_lam=stat(rel(c["their_objective"] - c["their_lam_offset_dec_certified"])),
                    agent=stat(rel(c["agent_value"] - opt))),
        lam=dict(optimum_beyond_sqrt_t=float(np.mean(c["optimum_lam"] > c["sqrt_t"] * (1 + 1e-9))),
                 their_at_cap=float(np.mean(np.abs(c["their_lam"] - c["sqrt_t"]) <= 1e-9 * c["sqrt_t"])),
                 capped_at_cap=float(np.mean(np.abs(c["capped_lam"] - c["sqrt_t"]) <= 1e-9 * c["sqrt_t"])),
                 optimum_over_sqrt_t={k: float(np.median(c["optimum_lam"][s] / c["sqrt_t"][s]))
                                      for k, s in phases.items()},
                 their_over_sqrt_t={k: float(np.median(c["their_lam"][s] / c["sqrt_t"][s])) for k, s in phases.items()},
                 their_mu_best_over_sqrt_t={k: float(np.median(c["their_mu_best_lam"][s] / c["sqrt_t"][s]))
                                            for k, s in phases.items()}),
        realized_regret=float(np.sum(c["realized_regret"])),
    )
    for name in ("their", "agent", "optimum", "capped"):
        out[name] = dict(expected_regret_sum=float(np.sum(c[f"{name}_expected_regret"])),
                         expected_regret_by_rounds={k: float(np.sum(c[f"{name}_expected_regret"][s]))
                                                    for k, s in phases.items()},
                         informative_mean=float(np.mean(c[f"{name}_informative"])),
                         informative_by_rounds={k: float(np.mean(c[f"{name}_informative"][s]))
                                                for k, s in phases.items()},
                         expected_regret_sum_informative=float(np.sum(c[f"{name}_regret_informative"])),
                         optimal_self_duel_mean=float(np.mean(c[f"{name}_optimal"])),
                         estimated_gap_mean=float(np.mean(c[f"{name}_estimated_gap"])))
    out["tv_unordered_pairs"] = {k: stat(c[f"tv_{k}"]) for k in ("their_agent", "their_optimum", "their_capped",
                                                                  "agent_optimum", "capped_optimum")}
    return out


def _cli_final(args, trace):
    """Their command line's final regret for the trace's seed (``--reference``, the runs of
    ``benchmarks/dueling_agreement.py``), next to the trace's: the trace's loop makes the same draws."""
    ref = _load(args.reference)
    for run in (ref or {}).get("runs", []):
        if run["strategy"] == "anytime-e2d" and run["horizon"] == trace["horizon"]:
            for final, cmd in zip(run["final_regret"], run["commands"]):
                if f"--force_seed={trace['force_seed']} " in cmd + " ":
                    return dict(command=final, trace=trace["final_regret"],
                                equal_to_1e_6=abs(final - trace["final_regret"]) <= 1e-6)
    return None


def replay_all(args):
    import jax

    jax.config.update("jax_enable_x64", True)
    import e2d_jax as e2d

    store = _load(args.json)
    if not store or not store.get("authors", {}).get("traces"):
        raise SystemExit(f"{args.json}: no traces of the authors' runs (run with --run-authors first)")
    store.update(what=WHAT, jax=jax.__version__, e2d_jax=e2d.__version__, dtype="float64", optimum_rtol=args.rtol,
                 replays=[])
    for trace in store["authors"]["traces"]:
        t0 = time.perf_counter()
        print(f"replay force_seed {trace['force_seed']} ({len(trace['t'])} rounds, their final regret "
              f"{trace['final_regret']:.2f})", flush=True)
        cols, snaps, checks, probes = replay(trace, args)
        checks["final_regret_as_their_command"] = _cli_final(args, trace)
        summary = summarize(cols)
        s = summary
        print(f"  checks: {checks}")
        print(f"  objective excess over the certified optimum (mean / median / max): theirs "
              f"{s['excess']['their_objective']['mean']:.1%} / {s['excess']['their_objective']['median']:.1%} / "
              f"{s['excess']['their_objective']['max']:.1%}; of which the lambda cap "
              f"{s['excess']['lambda_cap']['mean']:.1%}, Frank-Wolfe {s['excess']['frank_wolfe']['mean']:.1%}; "
              f"their mu at its best lambda {s['excess']['their_mu_at_its_best_lam']['mean']:.1%}; e2d_jax's agent "
              f"{s['excess']['agent']['mean']:.2%}")
        print(f"  lambda: certified optimum beyond sqrt(t) in {s['lam']['optimum_beyond_sqrt_t']:.0%} of rounds, "
              f"theirs at sqrt(t) in {s['lam']['their_at_cap']:.0%}; optimum / sqrt(t) by rounds "
              f"{s['lam']['optimum_over_sqrt_t']}, theirs {s['lam']['their_over_sqrt_t']}")
        for name in ("their", "agent", "optimum", "capped"):
            print(f"  {name:8s} expected regret along the history {s[name]['expected_regret_sum']:7.2f} "
                  f"{s[name]['expected_regret_by_rounds']} (informative pairs "
                  f"{s[name]['expected_regret_sum_informative']:.2f}); informative mass "
                  f"{s[name]['informative_mean']:.1%} "
                  f"{s[name]['informative_by_rounds']}; optimal self-duel {s[name]['optimal_self_duel_mean']:.1%}")
        for p in probes:
            print(f"  probe {p['name']:24s} round {p['round']:3d}: lambda {p['lam']:7.3f} (sqrt t {p['sqrt_t']:.3f}, "
                  f"lambda* {p['optimum_lam']:.3f}), objective {p['objective_excess']:+.2%} over the optimum, "
                  f"E regret {p['expected_regret']:.3f} (traced {p['their_expected_regret']:.3f}, capped "
                  f"{p['capped_expected_regret']:.3f}, optimum {p['optimum_expected_regret']:.3f}), informative "
                  f"{p['informative']:.1%}, TV to the traced mu {p['tv_to_traced']:.2g}")
        print(f"  realized regret {s['realized_regret']:.2f}; TV over unordered pairs: theirs-optimum mean "
              f"{s['tv_unordered_pairs']['their_optimum']['mean']:.2f}, theirs-capped "
              f"{s['tv_unordered_pairs']['their_capped']['mean']:.2f}, capped-optimum "
              f"{s['tv_unordered_pairs']['capped_optimum']['mean']:.2f}, agent-optimum "
              f"{s['tv_unordered_pairs']['agent_optimum']['mean']:.2f} "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
        store["replays"].append(dict(force_seed=trace["force_seed"], horizon=trace["horizon"],
                                     final_regret=trace["final_regret"], checks=checks, summary=summary,
                                     snapshots=snaps, probes=probes,
                                     per_round={k: [float("%.8g" % x) for x in v] for k, v in cols.items()}))
        _save(args.json, store)


def capped_anytime_e2d(cap=1.0):
    """e2d_jax's Anytime-E2D with lambda restricted to (0, cap sqrt(t)], solved exactly: the
    library agent's round (its ac-DEC, warm-started, which it carries on to the next round), and
    where its lambda* exceeds cap sqrt(t) the offset DEC at lambda = cap sqrt(t) by interior point
    (warm-started from the round's ac-DEC solution, certified to 1e-3), sampled with the same key.
    Where the Lagrangian over lambda is unimodal (checked on every round of the replays) this is
    the ac-DEC restricted to their range. A closed-loop measure of what their cap costs alone."""
    import jax
    import jax.numpy as jnp

    from e2d_jax.agents import e2d_linear
    from e2d_jax.dec import linear as dec_linear
    from e2d_jax.dec import solvers as S
    from e2d_jax.types import Agent, E2DInfo, Status

    base = e2d_linear.anytime_e2d()

    def act(key, state, model):
        _, new_state, info = base.act(key, state, model)
        span = model.span
        lam_cap = cap * jnp.sqrt(new_state.t.astype(model.features.dtype))
        res, _ = dec_linear.solve_offset(span, state.estimate.f_hat @ span.basis, lam_cap, S.E2D_ROUND,
                                         new_state.warm, "delta_f")
        use = (info.lam > lam_cap) & (res.status != Status.NONFINITE)
        mu = jnp.where(use, res.mu, new_state.warm.mu)
        action = jax.random.categorical(key, jnp.log(mu)).astype(jnp.int32)
        info = E2DInfo(status=jnp.where(use, res.status, info.status).astype(jnp.int32),
                       value=jnp.where(use, res.value + lam_cap * info.eps2, info.value),
                       lam=jnp.where(use, lam_cap, info.lam), gap=jnp.where(use, res.gap, info.gap),
                       iterations=info.iterations + res.iterations, eps2=info.eps2)
        return action, new_state, info

    return Agent(init=base.init, act=act, update=base.update, config=None)


def closed_loop(args):
    """e2d_jax's Anytime-E2D and :func:`capped_anytime_e2d` on the same seeds (float32, as
    ``benchmarks/dueling_agreement.py``): final regrets with 95% CIs and their paired difference."""
    import e2d_jax as e2d
    from e2d_jax.agents import e2d_linear
    from e2d_jax.envs import dueling

    params = dueling.from_base_arms(base_arms(args.instance_seed, args.d, args.k), dtype="float32")
    out = dict(seeds=args.closed_loop_seeds, horizon=args.horizon, dtype="float32", agents={})
    finals = {}
    for name, agent in (("anytime_e2d", e2d_linear.anytime_e2d()), ("capped_sqrt_t", capped_anytime_e2d(1.0))):
        t0 = time.perf_counter()
        sim = e2d.simulate(params, agent, horizon=args.horizon, num_seeds=args.closed_loop_seeds,
                           record_every=args.horizon)
        final = np.asarray(sim.result.regret, np.float64)[:, -1]
        finals[name] = final
        counts = np.asarray(sim.result.action_counts)
        share = float((counts[:, np.asarray(dueling.informative(params, np.arange(counts.shape[-1])))].sum(-1)
                       / counts.sum(-1)).mean())
        m, lo, hi = _ci(final)
        out["agents"][name] = dict(mean=m, ci95=[lo, hi], informative_share=share,
                                   seconds=time.perf_counter() - t0)
        print(f"closed loop {name:14s} {m:7.2f} [{lo:7.2f}, {hi:7.2f}] ({args.closed_loop_seeds} seeds; "
              f"informative pairs {share:.1%}; {time.perf_counter() - t0:.0f} s)", flush=True)
    m, lo, hi = _ci(finals["capped_sqrt_t"] - finals["anytime_e2d"])
    out["paired_difference"] = dict(mean=m, ci95=[lo, hi])
    print(f"closed loop capped - uncapped (paired): {m:.2f} [{lo:.2f}, {hi:.2f}]", flush=True)
    for run in (_load(args.reference) or {}).get("runs", []):
        if run["strategy"] == "anytime-e2d" and run["horizon"] == args.horizon:
            m, lo, hi = _ci(run["final_regret"])
            out["authors_command_line"] = dict(mean=m, ci95=[lo, hi], seeds=len(run["final_regret"]),
                                               source=os.path.basename(args.reference))
            print(f"their command line (--reference): {m:.2f} [{lo:.2f}, {hi:.2f}] ({len(run['final_regret'])} seeds)")
    return out


def _ci(values):
    values = np.asarray(values, np.float64)
    half = 1.96 * values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else 0.0
    return float(values.mean()), float(values.mean() - half), float(values.mean() + half)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", required=True, help="the traces and the replay's results (read and rewritten)")
    parser.add_argument("--run-authors", default=None, help="a copy of kirschnj/pm-ids, branch e2d, to trace first")
    parser.add_argument("--python", default="python", help="the Python that runs their code")
    parser.add_argument("--commit", default=None, help="their commit, when --run-authors is not a git checkout")
    parser.add_argument("--force-seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--jobs", type=int, default=2, help="traces at a time")
    parser.add_argument("--instance-seed", type=int, default=0)
    parser.add_argument("--d", type=int, default=3)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--horizon", type=int, default=200)
    parser.add_argument("--reference", default="benchmarks/results/cpu-2core/pm_ids_dueling_n200.json",
                        help="their command line's runs (benchmarks/dueling_agreement.py), to check the traces against")
    parser.add_argument("--rtol", type=float, default=1e-4, help="certificate tolerance of the optimum's solve")
    parser.add_argument("--trace", action=argparse.BooleanOptionalAction, default=True,
                        help="with --run-authors: trace their runs (--no-trace: only probe the stored traces)")
    parser.add_argument("--probe-rounds", type=int, nargs="*", default=[50, 100, 200],
                        help="with --run-authors: rounds at which their solver is probed (PROBES)")
    parser.add_argument("--closed-loop-seeds", type=int, default=0,
                        help="also run e2d_jax's Anytime-E2D with and without the cap lambda <= sqrt(t) on this many "
                             "seeds (closed loop)")
    parser.add_argument("--verbose", action="store_true", help="print every 20th round of the replays")
    parser.add_argument("--replay", action=argparse.BooleanOptionalAction, default=True,
                        help="replay the traces through e2d_jax (--no-replay: only trace theirs)")
    args = parser.parse_args()
    if args.run_authors and args.trace:
        run_authors(args)
    if args.run_authors and args.probe_rounds:
        run_probes(args)
    if args.replay:
        replay_all(args)
    if args.closed_loop_seeds:
        result = closed_loop(args)
        store = _load(args.json) or {}
        store.update(what=WHAT, closed_loop=result)
        _save(args.json, store)


if __name__ == "__main__":
    main()
