"""The paper's experiments (Appendix E) as Python objects and sweep specs, with named conventions.

* ``exp1``: revealing semi-bandit, d = 3, K = 10, n = 2000; Anytime-E2D, E2D tuned for
  n = 200, 500, 1000, 2000, UCB and TS.
* ``exp2``: d = 30, K = 10, n = 1000; the same agents with E2D tuned for 200, 500, 1000.

One instance (instance seed 0) drawn once and kept fixed, as in the paper (``instances``
redraws: seeds 0..N-1, vmapped); 100 seeds by default, as in the paper.

:func:`experiment` gives an experiment as objects a notebook runs directly (the instance,
the agents with exactly the conventions ``e2d-jax reproduce`` uses, the horizon);
:func:`experiment_spec` gives the same as a sweep.

Conventions. The paper's text writes the information as sigma^2/2 <phi, g - f>^2, but the
authors' implementation (the code behind the paper's figure) uses ||M_pi (g - f)||^2 with no
1/2 in both the offset and the constrained program; both use eps_t^2 = d / t,
lambda = sqrt(n / (4 log n)) for E2D and the gaps Delta_f. (The library's Anytime-E2D
defaults to r / t; the presets here pin the paper's d / t.)

* ``"implementation"`` (default): E2D agents with ``divergence="squared"`` (the library's
  default);
* ``"paper-text"``: ``divergence="kl"`` (the Gaussian KL ||M (g - f)||^2 / (2 sigma^2); with
  sigma = 1 the text's factor 1/2).

UCB and TS do not depend on the convention. The DEC solver is the library's exact saddle
point solver in both (the authors' 100 Frank-Wolfe steps on a 50-point lambda grid is
the solver ``"paper"``).
"""
from __future__ import annotations

from typing import NamedTuple

from e2d_jax import _checks as V
from e2d_jax.envs.linear import LinearEnvParams
from e2d_jax.experiments import registry
from e2d_jax.experiments.spec import CONVENTIONS, SweepAgent, SweepSpec
from e2d_jax.paper import contexts, horizons, preferences, zoo

EXPERIMENTS = {
    "exp1": dict(d=3, arms=10, horizon=2000, tunings=(200, 500, 1000, 2000)),
    "exp2": dict(d=30, arms=10, horizon=1000, tunings=(200, 500, 1000)),
}

DIVERGENCE = {"implementation": "squared", "paper-text": "kl"}


def experiment_spec(name: str, *, seeds: int = 100, conventions: str = "implementation", instances: int = 1,
                    seed: int = 0, solver: str | None = None) -> SweepSpec:
    """The sweep of the paper's Experiment 1 (``"exp1"``) or 2 (``"exp2"``).

    Args:
      name: ``"exp1"`` or ``"exp2"``.
      seeds: seeds per instance (100, as in the paper).
      conventions: ``"implementation"`` or ``"paper-text"`` (see the module docstring).
      instances: instance seeds 0..N-1 (1: the fixed instance of the paper).
      seed: master seed.
      solver: E2D's DEC solver on linear models (``"saddle"``, the default, or ``"paper"``).
    """
    if name not in EXPERIMENTS:
        raise V.ArgumentError("name", f"{V.name('name')} must be one of {sorted(EXPERIMENTS)}, got {name!r}")
    if conventions not in CONVENTIONS:
        raise V.ArgumentError("conventions", f"{V.name('conventions')} must be one of {CONVENTIONS}, got {conventions!r}")
    if instances < 1:
        raise V.ArgumentError("instances", f"{V.name('instances')} must be >= 1, got {instances}")
    e = EXPERIMENTS[name]
    options = {"divergence": DIVERGENCE[conventions]}
    if solver is not None:
        options["solver"] = solver
    agents = [SweepAgent.make("anytime-e2d", {**options, "eps2_schedule": "dim"})]
    agents += [SweepAgent.make(f"e2d-n{n}", options) for n in e["tunings"]]
    agents += [SweepAgent.make("ucb"), SweepAgent.make("ts")]
    return SweepSpec(env="semi-bandit", d=e["d"], arms=e["arms"], horizon=e["horizon"], seeds=seeds, seed=seed,
                     agents=tuple(agents), instance_seeds=tuple(range(instances)),
                     record_every=max(1, e["horizon"] // 200), conventions=conventions, name=name)


# --- the claims, over many instances (the docs' 'What holds') -------------------------------

#: Anytime-E2D's c in eps_t^2 = c d / t: 10^(k/3), k = -6..1 (0.01 ... 2.15; 8 points, 2.3 decades).
EPS2_SCALES = tuple(float(f"{10 ** (k / 3):.4g}") for k in range(-6, 2))
#: E2D's m in lambda = m sqrt(n / (4 log n)): 10^(k/3), k = -3..3 (0.1 ... 10; 7 points, 2 decades).
LAM_SCALES = tuple(float(f"{10 ** (k / 3):.4g}") for k in range(-3, 4))
#: Seeds per instance of the sensitivity sweeps.
SENSITIVITY_SEEDS = {"exp1": 500, "exp2": 200}
#: Instance distributions of the paper's experiments: the text's (unit-sphere features and
#: f*, a suboptimal revealing action) and the authors' code's (``semi-bandit-authors``).
DISTRIBUTIONS = ("semi-bandit", "semi-bandit-authors")


def sensitivity(name: str, *, seeds: int | None = None, instances: int = 20, seed: int = 0,
                env: str = "semi-bandit", env_sigma: float | None = None) -> SweepSpec:
    """Final regret against each algorithm's one hyperparameter, over random instances.

    On the shape of Experiment ``name`` (``"exp1"``: d=3, n=2000, 500 seeds per instance by
    default; ``"exp2"``: d=30, n=1000, 200 seeds), ``instances`` instances (seeds 0..N-1):

    * ``anytime-e2d``: eps_t^2 = c d / t for c in :data:`EPS2_SCALES` (a vmapped grid);
    * ``e2d-nN`` (N the horizon): lambda = m sqrt(N / (4 log N)) for m in :data:`LAM_SCALES`;
    * on the exp1 shape, E2D tuned for the paper's other horizons (``e2d-n200`` ...) at m = 1
      (the cost of tuning for the wrong horizon, Experiment 1's claim);
    * all of these in the implementation convention (||M(g - f)||^2); the paper-text
      convention (Gaussian KL, the 1/2) at the default multipliers: ``anytime-e2d-kl`` and
      ``e2d-nN-kl``, run as the implementation convention's programs with c = 2 sigma^2 and
      m = 1 / (2 sigma^2) (the same programs: each is a cell of the algorithm's one compiled
      program; their info reports lambda and eps^2 in the squared norm's convention);
    * UCB and TS as references.

    ``env_sigma``: the instances' noise (None: the builder's default, 1).
    """
    if name not in EXPERIMENTS:
        raise V.ArgumentError("name", f"{V.name('name')} must be one of {sorted(EXPERIMENTS)}, got {name!r}")
    if instances < 1:
        raise V.ArgumentError("instances", f"{V.name('instances')} must be >= 1, got {instances}")
    e = EXPERIMENTS[name]
    n = e["horizon"]
    sq = {"divergence": "squared"}
    dim = {"eps2_schedule": "dim"}
    agents = [SweepAgent.make("anytime-e2d", {**sq, **dim}, {"eps2_scale": EPS2_SCALES}),
              SweepAgent.make(f"e2d-n{n}", sq, {"lam_scale": LAM_SCALES})]
    if name == "exp1":
        agents += [SweepAgent.make(f"e2d-n{m}", sq) for m in e["tunings"] if m != n]
    # The paper-text convention: I_KL = ||M (g - f)||^2 / (2 sigma^2), so Anytime-E2D with c and
    # the KL is the program of the squared norm with c 2 sigma^2, and E2D with m is that of the
    # squared norm with m / (2 sigma^2): the same programs, run as cells of the implementation
    # convention's (the tests check the equivalence).
    two_sigma2 = 2.0 * (env_sigma if env_sigma is not None else 1.0) ** 2
    agents += [SweepAgent.make("anytime-e2d", {**sq, **dim, "eps2_scale": two_sigma2}, label="anytime-e2d-kl"),
               SweepAgent.make(f"e2d-n{n}", {**sq, "lam_scale": 1.0 / two_sigma2}, label=f"e2d-n{n}-kl"),
               SweepAgent.make("ucb"), SweepAgent.make("ts")]
    return SweepSpec(env=env, d=e["d"], arms=e["arms"], sigma=env_sigma, horizon=n,
                     seeds=seeds or SENSITIVITY_SEEDS[name], seed=seed, agents=tuple(agents),
                     instance_seeds=tuple(range(instances)), record_every=max(1, n // 100),
                     conventions="implementation", name=f"sensitivity-{name}")


def exp2_candidates(env: str = "semi-bandit", *, instances: int = 100, seeds: int = 20, seed: int = 0) -> SweepSpec:
    """What decides Experiment 2 (d=30, K=10, n=1000), over ``instances`` instances of ``env``
    (``"semi-bandit"`` or ``"semi-bandit-authors"``), implementation convention:

    * ``anytime-e2d`` with c in {0.1, 1} (eps_t^2 = c d / t; c = 1 is the paper's);
    * ``anytime-e2d-rank``: eps_t^2 = r / t (r = 10, the observable span's dimension);
    * ``anytime-e2d-rank-log``: eps_t^2 = r (1 + log t) / t;
    * ``e2d-n1000`` (tuned for the horizon), UCB and TS.

    The paper's solver is compared on fewer instances by :func:`exp2_solver` (it costs about
    two orders of magnitude more per round).

    The convention factor needs no run of its own: the Gaussian KL is ||M(g - f)||^2 / 2, so
    the paper-text convention is c = 2 for Anytime-E2D and m = 1/2 for E2D (the sensitivity
    sweeps measure both conventions; the tests check the equivalence)."""
    if env not in DISTRIBUTIONS:
        raise V.ArgumentError("env", f"{V.name('env')} must be one of {DISTRIBUTIONS}, got {env!r}")
    sq = {"divergence": "squared"}
    agents = (SweepAgent.make("anytime-e2d", {**sq, "eps2_schedule": "dim"}, {"eps2_scale": (0.1, 1.0)}),
              SweepAgent.make("anytime-e2d", {**sq, "eps2_schedule": "rank"}, label="anytime-e2d-rank"),
              SweepAgent.make("anytime-e2d", {**sq, "eps2_schedule": "rank-log"}, label="anytime-e2d-rank-log"),
              SweepAgent.make("e2d-n1000", sq), SweepAgent.make("ucb"), SweepAgent.make("ts"))
    e = EXPERIMENTS["exp2"]
    return SweepSpec(env=env, d=e["d"], arms=e["arms"], horizon=e["horizon"], seeds=seeds, seed=seed,
                     agents=agents, instance_seeds=tuple(range(instances)), record_every=e["horizon"] // 100,
                     conventions="implementation", name=f"exp2-candidates-{env}")


def exp2_solver(env: str = "semi-bandit", *, instances: int = 20, seeds: int = 20, seed: int = 0) -> SweepSpec:
    """The solver as a candidate: Anytime-E2D (eps_t^2 = d/t, implementation convention) with
    the exact saddle-point solver against the paper's budget (100 Frank-Wolfe steps on a
    50-point lambda grid) on the same instances and seeds of Experiment 2's shape."""
    if env not in DISTRIBUTIONS:
        raise V.ArgumentError("env", f"{V.name('env')} must be one of {DISTRIBUTIONS}, got {env!r}")
    sq = {"divergence": "squared"}
    dim = {**sq, "eps2_schedule": "dim"}
    agents = (SweepAgent.make("anytime-e2d", dim),
              SweepAgent.make("anytime-e2d", {**dim, "solver": "paper"}, label="anytime-e2d-paper"))
    e = EXPERIMENTS["exp2"]
    return SweepSpec(env=env, d=e["d"], arms=e["arms"], horizon=e["horizon"], seeds=seeds, seed=seed,
                     agents=agents, instance_seeds=tuple(range(instances)), record_every=e["horizon"] // 100,
                     conventions="implementation", name=f"exp2-solver-{env}")


#: The defaults of ``e2d-jax reproduce`` (and :func:`reproduce_specs`): seeds per instance and
#: instances of each reproduction (None: the reproduction's own, e.g. the sensitivity sweeps'
#: per-shape seeds, or the platform's for ``horizons``).
REPRODUCE_DEFAULTS = {
    "exp1": {"seeds": 100, "instances": 1},
    "exp2": {"seeds": 100, "instances": 1},
    "all": {"seeds": 100, "instances": 1},
    "sensitivity": {"seeds": None, "instances": 20},
    "candidates": {"seeds": 20, "instances": 100},
    "zoo": {"seeds": None, "instances": None},
    "horizons": {"seeds": None, "instances": 1},
    "preferences": {"seeds": None, "instances": 1},
    "contexts": {"seeds": None, "instances": 1},
}
#: The reproductions that take ``conventions`` and ``solver`` (the others measure both
#: conventions and solvers themselves, or run every agent at its defaults).
WITH_CONVENTIONS = ("exp1", "exp2", "all")
#: The solvers a reproduction of the experiments may name for its E2D agents (None: each
#: agent's own).
REPRODUCE_SOLVERS = ("paper", "fast", "tracking")


def reproduce_specs(experiment: str, *, seeds: int | None = None, instances: int | None = None,
                    conventions: str = "implementation", solver: str | None = None, families=None,
                    horizon: int | None = None) -> list:
    """The sweeps of a reproduction (``e2d-jax reproduce EXPERIMENT``), with the defaults of
    :data:`REPRODUCE_DEFAULTS` where ``seeds`` / ``instances`` are None.

    Args:
      experiment: ``"exp1"``, ``"exp2"``, ``"all"`` (both: Figure 1), ``"sensitivity"``,
        ``"candidates"``, ``"zoo"``, ``"horizons"``, ``"preferences"`` or ``"contexts"``.
      seeds: seeds per instance.
      instances: instances (seeds 0..N-1).
      conventions: ``"implementation"`` or ``"paper-text"`` (the experiments only).
      solver: the E2D agents' solver (the experiments only; None: each agent's own):
        ``"paper"``, ``"fast"`` or ``"tracking"``.
      families: zoo, preferences and contexts only: the families to run (default: all of them).
      horizon: horizons, preferences and contexts only: rounds n (default:
        :func:`e2d_jax.paper.horizons.default_horizon`, 10^6 on an accelerator, 2 * 10^5 on a
        CPU; :func:`e2d_jax.paper.preferences.default_horizon`,
        :func:`e2d_jax.paper.contexts.default_horizon`).
    """
    if experiment not in REPRODUCE_DEFAULTS:
        raise ValueError(f"experiment must be one of {sorted(REPRODUCE_DEFAULTS)}, got {experiment!r}")
    d = REPRODUCE_DEFAULTS[experiment]
    seeds = d["seeds"] if seeds is None else seeds
    instances = d["instances"] if instances is None else instances
    if experiment not in WITH_CONVENTIONS and (conventions != "implementation" or solver is not None):
        raise V.ArgumentError("conventions", f"{V.name('conventions')} and {V.name('solver')} do not apply to reproduce {experiment} (it measures both "
                         "conventions and solvers itself, or runs every agent at its defaults)")
    if solver is not None and solver not in REPRODUCE_SOLVERS:
        raise V.ArgumentError("solver", f"{V.name('solver')} must be one of {REPRODUCE_SOLVERS}, got {solver!r}")
    if families is not None and experiment not in ("zoo", "preferences", "contexts"):
        raise V.ArgumentError("families", f"{V.name('families')} applies to reproduce zoo, preferences and contexts only, "
                                          f"not to reproduce {experiment}")
    if horizon is not None and experiment not in ("horizons", "preferences", "contexts"):
        raise V.ArgumentError("horizon", f"{V.name('horizon')} applies to reproduce horizons, preferences and contexts "
                                         f"only, not to reproduce {experiment} (its horizons are the paper's)")
    if experiment == "contexts":
        if instances not in (None, 1):
            raise V.ArgumentError("instances", f"{V.name('instances')} does not apply to reproduce contexts (instance "
                                               f"0 of each family; the datasets are one instance each)")
        return contexts.specs(horizon=horizon, seeds=seeds, families=families)
    if experiment == "preferences":
        return preferences.specs(horizon=horizon, seeds=seeds, instances=instances, families=families)
    if experiment == "horizons":
        return horizons.specs(horizon=horizon, seeds=seeds, instances=instances)
    if experiment == "zoo":
        return zoo.specs(instances=instances or zoo.INSTANCES, seeds=seeds or zoo.SEEDS, families=families)
    if experiment == "sensitivity":
        return [sensitivity(name, seeds=seeds, instances=instances) for name in ("exp1", "exp2")]
    if experiment == "candidates":
        return ([exp2_candidates(env, seeds=seeds, instances=instances) for env in DISTRIBUTIONS]
                + [exp2_solver(env, seeds=seeds, instances=min(instances, 20)) for env in DISTRIBUTIONS])
    names = ["exp1", "exp2"] if experiment == "all" else [experiment]
    return [experiment_spec(name, seeds=seeds, conventions=conventions, instances=instances, solver=solver)
            for name in names]


class Experiment(NamedTuple):
    """One of the paper's experiments as objects: ``e2d_jax.simulate(exp.params, agent,
    horizon=exp.horizon, num_seeds=...)`` for each of ``exp.agents`` is what ``e2d-jax
    reproduce`` runs (on instance seed 0 with the default arguments).

    Attributes:
      name: ``"exp1"`` or ``"exp2"``.
      params: the instance (``instance_key(instance_seed)``).
      agents: ``{label: Agent}``: Anytime-E2D (eps_t^2 = d / t), E2D tuned for each of the
        experiment's horizons, UCB and TS, with the conventions' divergence.
      horizon: the experiment's horizon n.
      spec: the same experiment as a sweep (:func:`experiment_spec`).
    """

    name: str
    params: LinearEnvParams
    agents: dict
    horizon: int
    spec: SweepSpec


def experiment(name: str, *, conventions: str = "implementation", instance_seed: int = 0,
               solver: str | None = None, seeds: int = 100) -> Experiment:
    """The paper's Experiment 1 (``"exp1"``) or 2 (``"exp2"``) as objects (see :class:`Experiment`).

    The agents are built from the sweep's entries by the same registry the command line uses,
    so their conventions are exactly those of ``e2d-jax reproduce`` (and of
    its paper-text conventions with ``conventions="paper-text"``).
    """
    spec = experiment_spec(name, seeds=seeds, conventions=conventions, solver=solver, instances=1)
    spec = SweepSpec.from_dict({**spec.to_dict(), "instance_seeds": [instance_seed]})
    _, params, _ = registry.build_instance(spec.env, instance_seed, spec.builder_options(), spec.dtype)
    agents = {a.label: registry.agent_factory(a.name, horizon=spec.horizon, options=dict(a.options),
                                              family="linear")() for a in spec.agents}
    return Experiment(name=name, params=params, agents=agents, horizon=spec.horizon, spec=spec)
