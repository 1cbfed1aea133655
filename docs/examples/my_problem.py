"""A linear bandit with side observations of one's own: K arms with random features in R^d;
every arm observes its own reward, and one arm, the probe, also observes the first two
coordinates of the unknown parameter. Used by the docs' 'Your own problem'."""
import jax
import jax.numpy as jnp

from e2d_jax.envs.linear import linear_side_observation


def sensor_bandit(key, d=4, arms=5, sigma=1.0, dtype=None):
    """The instance drawn from ``key``: features and f* uniform on the unit sphere; the last arm
    is the probe. Traceable in ``key``, so a sweep draws many instances in one call."""
    k_feat, k_theta = jax.random.split(key)
    features = jax.random.normal(k_feat, (arms, d))
    features = features / jnp.linalg.norm(features, axis=1, keepdims=True)
    theta = jax.random.normal(k_theta, (d,))
    theta = theta / jnp.linalg.norm(theta)
    # Three observation rows per arm, padded with zeros: its own reward, and for the probe
    # the coordinates f_0 and f_1 (rows of zeros observe nothing).
    obs = jnp.zeros((arms, 3, d)).at[:, 0, :].set(features)
    obs = obs.at[arms - 1, 1, 0].set(1.0).at[arms - 1, 2, 1].set(1.0)
    mask = jnp.zeros((arms, 3), bool).at[:, 0].set(True).at[arms - 1, 1:].set(True)
    return linear_side_observation(features, obs, theta, sigma=sigma, obs_mask=mask, radius=1.0, dtype=dtype)
