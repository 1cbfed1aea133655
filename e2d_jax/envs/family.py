"""The two model families and what a caller needs to tell them apart.

Linear models with side observations (:mod:`e2d_jax.envs.linear`) and finite model classes
(:mod:`e2d_jax.envs.finite`) are different pytree types, so every dispatch between them is a
Python ``isinstance`` at trace time and costs nothing at run time.
"""
from __future__ import annotations

from e2d_jax.envs import contextual, datasets, finite, linear, preference
from e2d_jax.types import Environment

#: The families and their instance (params) and model types.
FAMILIES = ("linear", "finite")
_PARAMS = {linear.LinearEnvParams: "linear", finite.FiniteEnvParams: "finite", contextual.ContextualParams: "linear",
           contextual.DrawnContextParams: "linear", datasets.DatasetParams: "linear"}
_MODELS = {linear.LinearModel: "linear", finite.FiniteModel: "finite"}
_ENVIRONMENTS = {"linear": linear.ENVIRONMENT, "finite": finite.ENVIRONMENT}
#: The library's environments of the instance types with their own (``_own_environment``).
_OWN = {preference.PreferenceEnvParams: preference.ENVIRONMENT, contextual.ContextualParams: contextual.ENVIRONMENT,
        contextual.DrawnContextParams: contextual.DRAWN_ENVIRONMENT, datasets.DatasetParams: datasets.ENVIRONMENT}
_NAMES = {id(linear.ENVIRONMENT): "linear", id(finite.ENVIRONMENT): "finite", id(preference.ENVIRONMENT): "preference",
          id(contextual.ENVIRONMENT): "contextual", id(contextual.DRAWN_ENVIRONMENT): "contextual",
          id(datasets.ENVIRONMENT): "dataset"}


def _own_environment(params, family: str) -> Environment:
    """The library environment of an instance of ``family``: preference instances (a linear
    family with Bernoulli feedback), contextual ones and datasets (a linear instance drawn
    every round) have their own."""
    for cls, env in _OWN.items():
        if isinstance(params, cls):
            return env
    return _ENVIRONMENTS[family]


def family_of(model) -> str:
    """``"linear"`` or ``"finite"`` for a model class; a ValueError naming what was given."""
    for cls, family in _MODELS.items():
        if isinstance(model, cls):
            return family
    if isinstance(model, tuple(_PARAMS)):
        raise ValueError("model: got an instance (env params); agents and DEC functions take the model class "
                         "the learner knows, params.model")
    raise ValueError(f"model must be a LinearModel or FiniteModel, got {type(model).__name__}")


def params_family(params) -> str | None:
    """``"linear"`` or ``"finite"`` for an instance, None for a type of the caller's own."""
    for cls, family in _PARAMS.items():
        if isinstance(params, cls):
            return family
    return None


def environment_of(params, env: Environment | None = None) -> Environment:
    """The environment functions of an instance: inferred from the type of ``params`` (a
    ``LinearEnvParams`` or ``FiniteEnvParams``), or ``env`` for an environment of one's own.

    A given ``env`` that does not belong to ``params`` is refused with the reason.
    """
    family = params_family(params)
    if env is not None:
        if not isinstance(env, Environment):
            raise ValueError(f"env must be an e2d_jax.Environment (or None to infer it from params), "
                             f"got {type(env).__name__}")
        own = None if family is None else _own_environment(params, family)
        if own is not None and env is not own and id(env) in _NAMES:
            other = _NAMES[id(env)]
            raise ValueError(f"env: the {other} environment cannot run {type(params).__name__} (a {family} "
                             "instance); leave env out and it is inferred from params")
        return env
    if family is None:
        if isinstance(params, Environment):
            raise ValueError("params must be an instance from a builder (e.g. e2d_jax.semi_bandit(key, 3, 10)), "
                             "got an Environment")
        raise ValueError(f"params: cannot infer the environment of a {type(params).__name__}; pass env= (an "
                         "e2d_jax.Environment) for an instance type of your own, or build the instance with a "
                         "library builder")
    return _own_environment(params, family)


def as_linear_model(model, who: str) -> linear.LinearModel:
    """The linear model an agent of the linear family runs on: the model itself, or the linear
    view of a finite class (``FiniteModel.linear``); a ValueError naming ``who`` otherwise."""
    if isinstance(model, linear.LinearModel):
        return model
    if isinstance(model, finite.FiniteModel):
        if model.linear is None:
            raise ValueError(f"{who} needs a linear model; this finite class has no linear view (model.linear is "
                             "None; the Gaussian bandit builders attach one). Use posterior_sampling() or the "
                             "E2D agents on it instead")
        return model.linear
    family_of(model)  # raises with the reason (an instance instead of its model, a foreign type)
    raise AssertionError("unreachable: family_of accepts only the two model types")
