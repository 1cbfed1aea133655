"""Command-line names for finite model classes and their agents (imported by
``e2d_jax.registry``).

Environments (f* is model 0 of the class; ``--instance-seed`` draws the class):

* ``finite-mab`` - K-armed Gaussian bandit, M random mean vectors in [0, 1]^K (K=5, M=30);
* ``finite-revealing`` - ordinary arms plus an informative but costly action whose
  observation is the whole reward vector amplified 3x (K=10, M=30; see
  ``e2d_jax.envs.finite.revealing_class``);
* ``finite-revealing-plain`` - the same with gain 1 (the exact analogue of the paper's
  revealing action);
* ``finite-bernoulli`` - K-armed Bernoulli bandit, M random probability vectors (K=5, M=30).

Agents on finite classes:

* ``anytime-e2d[@opts]`` - Anytime-E2D with EWA; ``opts`` joined by '+' from ``delta`` /
  ``delta_f`` (gaps), ``sample`` / ``mixture`` (EWA estimate), ``track`` / ``global``
  (lambda search), e.g. ``anytime-e2d@delta+track``; default: ``--gaps`` (delta_f unless
  given), ``sample``, ``global``;
* ``e2d[@n]`` - fixed-horizon E2D with lam tuned for horizon n (default: the run's horizon),
  gaps from ``--gaps``;
* ``ts-finite`` - Thompson sampling on the finite class (EWA posterior);
* ``ucb``, ``ts`` - the foundation's linear UCB / TS through the class's linear view
  (Gaussian bandit classes only).

Names that other families also use (``anytime-e2d``, ``e2d``, ``ucb``, ``ts``) are chained:
the factory dispatches on the model class (a ``FiniteModel`` comes here, anything else to the
entry registered before), so one ``--agents`` list works for every family.
"""
from __future__ import annotations

import jax

from e2d_jax import registry
from e2d_jax.registry import AgentSpec, EnvSpec, register_env


def _dtype(spec: EnvSpec):
    return spec.dtype


def _key(spec: EnvSpec):
    return jax.random.key(spec.instance_seed)


@register_env("finite-mab", "finite", "K-armed Gaussian bandit with M random mean vectors (finite class; K=5, M=30)")
def _finite_mab(spec: EnvSpec):
    from e2d_jax.envs import finite

    params = finite.multi_armed_bandit_class(_key(spec), spec.arms or 5, spec.models or 30, sigma=spec.sigma,
                                             dtype=_dtype(spec))
    return finite.ENVIRONMENT, params


@register_env("finite-revealing", "finite",
              "finite class with an informative but costly revealing action, gain 3 (K=10, M=30)")
def _finite_revealing(spec: EnvSpec):
    from e2d_jax.envs import finite

    params = finite.revealing_class(_key(spec), spec.arms or 10, spec.models or 30, sigma=spec.sigma, gain=3.0,
                                    dtype=_dtype(spec))
    return finite.ENVIRONMENT, params


@register_env("finite-revealing-plain", "finite",
              "finite class with the paper's revealing action, gain 1 (K=10, M=30)")
def _finite_revealing_plain(spec: EnvSpec):
    from e2d_jax.envs import finite

    params = finite.revealing_class(_key(spec), spec.arms or 10, spec.models or 30, sigma=spec.sigma, gain=1.0,
                                    dtype=_dtype(spec))
    return finite.ENVIRONMENT, params


@register_env("finite-bernoulli", "finite", "K-armed Bernoulli bandit with M random probability vectors (K=5, M=30)")
def _finite_bernoulli(spec: EnvSpec):
    from e2d_jax.envs import finite

    params = finite.bernoulli_bandit_class(_key(spec), spec.arms or 5, spec.models or 30, dtype=_dtype(spec))
    return finite.ENVIRONMENT, params


# --- agents ------------------------------------------------------------------------------

_ANYTIME_OPTIONS = {
    "delta": ("gaps", "delta"), "delta_f": ("gaps", "delta_f"),
    "sample": ("estimate", "sample"), "mixture": ("estimate", "mixture"),
    "track": ("lam_search", "track"), "global": ("lam_search", "global"),
}


def _shared_options(spec: AgentSpec) -> dict:
    """Reads the E2D flags shared with the linear family (see ``registry.AGENT_FLAGS``).

    ``--gaps`` applies as is (default delta_f, the paper's experiments); finite classes always
    use the KL divergence and the interior-point game solver, so ``--divergence squared`` and
    ``--solver`` / ``--solver-iters`` are refused rather than silently ignored.
    """
    opts = spec.options
    if opts.get("divergence") not in (None, "kl"):
        raise ValueError(f"--divergence {opts['divergence']}: finite classes use the KL divergence")
    for flag in ("solver", "solver_iters"):
        if opts.get(flag) is not None:
            raise ValueError(f"--{flag.replace('_', '-')}: the finite E2D agents solve matrix games by "
                             "an interior-point method; this flag applies to linear models only")
    return {"gaps": opts.get("gaps") or "delta_f"}


def _anytime_finite(spec: AgentSpec, model):
    from e2d_jax.agents import finite as agents

    kwargs = {"lam_search": "global", **_shared_options(spec)}
    if spec.param:
        for token in spec.param.split("+"):
            if token not in _ANYTIME_OPTIONS:
                raise ValueError(f"--agents: {spec.label}: unknown option {token!r} "
                                 f"(choose from {', '.join(_ANYTIME_OPTIONS)}, joined by '+')")
            field, value = _ANYTIME_OPTIONS[token]
            kwargs[field] = value
    return agents.anytime_e2d(**kwargs)


def _e2d_finite(spec: AgentSpec, model):
    from e2d_jax.agents import finite as agents

    horizon = spec.horizon
    if spec.param is not None:
        try:
            horizon = int(spec.param)
        except ValueError:
            raise ValueError(f"--agents: {spec.label}: the parameter is the tuning horizon n, an integer") from None
        if horizon < 1:
            raise ValueError(f"--agents: {spec.label}: the tuning horizon must be >= 1")
    gaps = _shared_options(spec)["gaps"]
    return agents.e2d(lam=agents.tune_lambda(model, horizon, gaps=gaps).lam, gaps=gaps)


def _no_param(spec: AgentSpec):
    if spec.param is not None:
        raise ValueError(f"--agents: {spec.name} takes no '@' parameter, got {spec.label!r}")


def _ucb_finite(spec: AgentSpec, model):
    from e2d_jax.agents import finite as agents
    from e2d_jax.agents.ucb import ucb

    _no_param(spec)
    agents._require_linear(model)
    return agents.linear_view(ucb(radius=agents.reward_radius(model)))


def _ts_finite_view(spec: AgentSpec, model):
    from e2d_jax.agents import finite as agents
    from e2d_jax.agents.ts import thompson_sampling

    _no_param(spec)
    agents._require_linear(model)
    return agents.linear_view(thompson_sampling())


def _posterior_sampling(spec: AgentSpec, model):
    from e2d_jax.agents import finite as agents

    _no_param(spec)
    return agents.posterior_sampling()


def _chain(name: str, help: str, finite_builder) -> None:
    """Registers ``name`` for the finite family, keeping any existing entry for the others."""
    previous = registry.AGENTS.get(name)
    families = registry.AGENT_FAMILIES.get(name, ())

    def build(spec: AgentSpec, model):
        from e2d_jax.envs.finite import FiniteModel

        if isinstance(model, FiniteModel):
            return finite_builder(spec, model)
        if previous is None:
            raise ValueError(f"--agents: {name} runs on finite classes only")
        return previous[0](spec, model)

    text = help if previous is None else f"{previous[1]}; finite classes: {help}"
    registry.register_agent(name, tuple(dict.fromkeys(families + ("finite",))), text)(build)


_chain("anytime-e2d", "Anytime-E2D with EWA, eps_t^2 = log|M|/t (@delta, @mixture, @track, joined by '+')",
       _anytime_finite)
_chain("e2d", "fixed-horizon E2D with EWA, lam tuned for horizon n (e2d@n; default: the run's horizon)", _e2d_finite)
_chain("ts-finite", "Thompson sampling on the finite class (EWA posterior, eta = 1)", _posterior_sampling)
_chain("ucb", "UCB through the class's linear view (Gaussian bandit classes)", _ucb_finite)
_chain("ts", "TS through the class's linear view (Gaussian bandit classes)", _ts_finite_view)
