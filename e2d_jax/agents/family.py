"""One name per algorithm for both model families.

``anytime_e2d(...)`` and ``fixed_horizon_e2d(...)`` here take the arguments of the linear
(``e2d_jax.agents.e2d``) and finite (``e2d_jax.agents.finite``) versions, which share their
names and defaults (``eps2_schedule``, ``eps2_scale``, ``lam``, ``lam_scale``, ``horizon``,
``gaps="delta_f"``, ``solver``). The returned agent dispatches on the model class it is given
(``LinearModel`` or ``FiniteModel``: a Python choice at trace time, nothing at run time).
Arguments are checked when the factory is called: those that fit neither family raise a
ValueError at once, and those that fit one family only (``divergence`` and ``reg`` are linear,
``estimate``, ``eta`` and ``lam_search`` finite; a ``LinearSolverConfig`` or
``FiniteSolverConfig`` picks its family) raise when the agent meets the other family's model,
with the reason. UCB and Thompson sampling run on both families already (finite classes
through their linear view).
"""
from __future__ import annotations

from e2d_jax.agents import e2d as linear_agents
from e2d_jax.agents import finite as finite_agents
from e2d_jax.types import Agent


def family_of(model) -> str:
    """``"linear"`` or ``"finite"`` for a model class; a ValueError naming what was given."""
    from e2d_jax.envs.finite import FiniteEnvParams, FiniteModel
    from e2d_jax.envs.linear import LinearEnvParams, LinearModel

    if isinstance(model, LinearModel):
        return "linear"
    if isinstance(model, FiniteModel):
        return "finite"
    if isinstance(model, (LinearEnvParams, FiniteEnvParams)):
        raise ValueError("got the instance (env params); agents take the model class the learner "
                         "knows: env.model(params), i.e. params.model")
    raise ValueError(f"model must be a LinearModel or FiniteModel, got {type(model).__name__}")


def _dispatch(name: str, builders: dict, kwargs: dict) -> Agent:
    agents, errors = {}, {}
    for family, build in builders.items():
        try:
            agents[family] = build(**kwargs)
        except (TypeError, ValueError) as err:
            errors[family] = err
    if not agents:
        messages = {str(e) for e in errors.values()}
        if len(messages) == 1:
            raise ValueError(messages.pop())
        detail = "; ".join(f"{fam}: {err}" for fam, err in errors.items())
        raise ValueError(f"{name}: no model family accepts these arguments ({detail})")

    def pick(model) -> Agent:
        family = family_of(model)
        if family not in agents:
            raise ValueError(f"{name}({', '.join(f'{k}=...' for k in kwargs)}) cannot run on a {family} "
                             f"model: {errors[family]}")
        return agents[family]

    return Agent(
        init=lambda key, model: pick(model).init(key, model),
        act=lambda key, state, model: pick(model).act(key, state, model),
        update=lambda state, action, obs, model: pick(model).update(state, action, obs, model),
    )


def anytime_e2d(**kwargs) -> Agent:
    """Anytime-E2D (Algorithm 1) for linear models (ridge) or finite classes (EWA).

    Takes the keyword arguments of ``e2d_jax.agents.e2d.anytime_e2d`` (linear) and
    ``e2d_jax.agents.finite.anytime_e2d`` (finite); see the module docstring.
    """
    return _dispatch("anytime_e2d", {"linear": linear_agents.anytime_e2d,
                                     "finite": finite_agents.anytime_e2d}, kwargs)


def fixed_horizon_e2d(**kwargs) -> Agent:
    """Fixed-horizon E2D (offset DEC at a fixed lambda) for either model family.

    ``horizon=n`` tunes lambda for n (the paper's sqrt(n / (4 log n)) on linear models; the
    regret-bound minimiser of :func:`e2d_jax.agents.finite.tune_lambda` on finite classes),
    ``lam`` gives it, ``lam_scale`` multiplies it.
    """
    return _dispatch("fixed_horizon_e2d", {"linear": linear_agents.fixed_horizon_e2d,
                                           "finite": finite_agents.fixed_horizon_e2d}, kwargs)


def tune_lambda(horizon: int, model=None) -> float:
    """E2D's lambda for a horizon n: sqrt(n / (4 log n)) for linear models (the paper's; no
    model needed), the regret-bound minimiser for a finite class (``model`` required)."""
    if model is None or family_of(model) == "linear":
        return linear_agents.tune_lambda(horizon)
    return finite_agents.tune_lambda(model, horizon).lam
