"""The linear bounds of the paper, checked numerically: Table 1's linear row and the
linear-bounds lemma of Section 3.3, against the certified values of :func:`e2d_jax.linear_acdec`.

For linear bandits with side observations and the divergence ||M_pi (g - f)||^2 (the
convention of the linear-bounds lemma and of ``linear_acdec``):

* Table 1 / the lemma's first part: dec^ac_eps(f) <= eps sqrt(Psi(f)) <=
  eps sqrt(d), and pac-dec_eps(f) <= eps Omega, where

      Omega = min_{mu in simplex} max_b ||phi_b||_{V(mu)^{-1}},   V(mu) = sum_pi mu_pi M_pi^T M_pi.

  Omega^2 <= r (Kiefer-Wolfowitz in the observable span of dimension r <= d), and with a
  revealing action (M_pi_hat^T M_pi_hat >= phi_b phi_b^T for every b) Omega <= 1.
* Second part: dec^ac_eps(f) <= 2 eps^(2/3) Omega^(1/3) Delta_max^(1/3), through the PAC-DEC
  lemma of Section 3.3: dec^ac_eps <= min_p pac-dec_{eps / sqrt(p)} + p Delta_max.

Carrying the first part into the PAC-DEC lemma with pac-dec_eps <= eps Omega gives
min_{p in (0, 1]} p Delta_max + eps Omega / sqrt(p), which at the interior minimiser
p = (eps Omega / (2 Delta_max))^(2/3) is (2^(1/3) + 2^(-2/3)) (eps Omega)^(2/3) Delta_max^(1/3)
~= 1.89 eps^(2/3) Omega^(2/3) Delta_max^(1/3): the exponent of Omega is 2/3, not the lemma's
1/3. The two agree when Omega = 1 and the lemma's is the weaker one when Omega < 1 (a
revealing action), but for Omega > 1 (a plain linear bandit, Omega ~ sqrt(d)) the lemma's
expression is *smaller* than what its proof gives, so it is checked here, not assumed.
:func:`p_dec_bound` is the derived form (exact minimisation over p in (0, 1]), which holds
by the argument above with Delta_max = max_pi (r_f(pi*) - r_f(pi)), the largest gap of f.

:func:`design_constant` computes Omega by its own convex program (mirror-prox on
min_mu max_omega sum_b omega_b ||phi_b||^2_{V(mu)^{-1}}, convex in mu, linear in omega)
with a certified interval, and :func:`check_instances` evaluates every bound on a batch of
instances over a range of eps (``notebooks/03_dec_explorer.ipynb``; the docs' 'What holds').
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from e2d_jax.dec import linear as dec_linear
from e2d_jax.dec import solvers as S
from e2d_jax.dec import saddle
from e2d_jax.envs import linear
from e2d_jax.envs.linear import ObservableSpan
from e2d_jax.experiments import registry
from e2d_jax.plotting import Figure


class DesignConstant(NamedTuple):
    """Omega with its certificate: ``lower <= Omega <= upper`` (``upper`` is attained by ``mu``)."""

    upper: jax.Array  # () max_b ||phi_b||_{V(mu)^{-1}} at the returned mu
    lower: jax.Array  # () certified lower bound on Omega
    mu: jax.Array  # (K,)
    status: jax.Array  # () Status of the solver


def design_constant(span: ObservableSpan, *, maxiter: int = 20_000, rtol: float = 1e-6) -> DesignConstant:
    """Omega = min_mu max_b ||phi_b||_{V(mu)^{-1}} of a linear model's observable span (jittable).

    Solved as min_mu max_omega sum_b omega_b c_b(mu), c_b(mu) = ||phi_b||^2_{V(mu)^{-1}} (the
    square of Omega), by certified mirror-prox (``e2d_jax.dec.saddle``); the certificate's
    lower bound is the linearisation of the convex function c(mu) . omega at the iterate.
    """
    k = span.features.shape[0]
    dtype = span.features.dtype

    def grads(mu, omega):
        c, w = dec_linear.feature_norms(mu, span)
        return dec_linear.info_gradient(w, omega, span), c

    def certificate(mu, omega):
        c, w = dec_linear.feature_norms(mu, span)
        g = dec_linear.info_gradient(w, omega, span)
        return jnp.max(c), omega @ c + jnp.min(g) - g @ mu

    mu0 = jnp.full((k,), 1.0 / k, dtype)
    sol = saddle.solve(grads, certificate, mu0, mu0, maxiter=maxiter, rtol=rtol, check_every=50)
    return DesignConstant(jnp.sqrt(sol.upper), jnp.sqrt(jnp.maximum(sol.lower, 0.0)), sol.mu, sol.status)


def pac_dec(span: ObservableSpan, f_hat_r, eps2, *, maxiter: int = 20_000, rtol: float = 1e-6):
    """The PAC DEC of eq. (pac-dec) for the linear class (jittable): ``(value, lower)``.

    pac-dec_eps(f) = min_mu min_lambda max_b <phi_b - phi_{pi*_f}, f> + ||phi_b||^2_{V(mu)^{-1}}
    / (4 lambda) + lambda eps^2 (the proof of the linear-bounds lemma), i.e. the exact form
    of ``linear_acdec`` with the gap a_b = r_b - max r in place of r_b - mu.r: min_mu max_omega
    omega.a + eps sqrt(omega.c(mu)), solved by the same certified mirror-prox.
    """
    r = span.features @ f_hat_r
    a = r - jnp.max(r)
    eps = jnp.sqrt(eps2)
    k = r.shape[0]

    def grads(mu, omega):
        c, w = dec_linear.feature_norms(mu, span)
        root = jnp.sqrt(omega @ c)
        return eps / (2.0 * root) * dec_linear.info_gradient(w, omega, span), a + eps * c / (2.0 * root)

    def certificate(mu, omega):
        c, w = dec_linear.feature_norms(mu, span)
        upper, om_star, _ = dec_linear.max_sqrt_mixture(a, c, eps)
        lower = -jnp.inf
        for om in (omega, om_star):
            root = jnp.sqrt(om @ c)
            g = eps / (2.0 * root) * dec_linear.info_gradient(w, om, span)
            lower = jnp.maximum(lower, om @ a + eps * root + jnp.min(g) - g @ mu)
        return upper, lower

    mu0 = jnp.full((k,), 1.0 / k, r.dtype)
    sol = saddle.solve(grads, certificate, mu0, mu0, maxiter=maxiter, rtol=rtol, check_every=50)
    return sol.upper, sol.lower


def p_dec_bound(eps, omega, delta_max):
    """min_{p in (0, 1]} p Delta_max + eps Omega / sqrt(p) (the derived second bound)."""
    eps, omega, delta_max = (np.asarray(x, np.float64) for x in (eps, omega, delta_max))
    p = np.clip((eps * omega / (2.0 * np.maximum(delta_max, 1e-300))) ** (2.0 / 3.0), 1e-300, 1.0)
    return p * delta_max + eps * omega / np.sqrt(p)


def lemma_bound(eps, omega, delta_max):
    """The lemma's second bound as printed: 2 eps^(2/3) Omega^(1/3) Delta_max^(1/3)."""
    return 2.0 * np.asarray(eps) ** (2 / 3) * np.asarray(omega) ** (1 / 3) * np.asarray(delta_max) ** (1 / 3)


class BoundTable(NamedTuple):
    """Per instance (I) and radius (E): the certified DEC and every bound."""

    eps: np.ndarray  # (E,)
    value: np.ndarray  # (I, E) dec^ac_eps(f*), upper end of the certificate
    lower: np.ndarray  # (I, E) its certified lower bound
    pac_value: np.ndarray  # (I, E) pac-dec_eps(f*), upper end
    pac_lower: np.ndarray  # (I, E)
    omega: np.ndarray  # (I,) Omega (upper end of its certificate)
    omega_lower: np.ndarray  # (I,)
    delta_max: np.ndarray  # (I,)
    d: int
    rank: int
    sqrt_d: np.ndarray  # (I, E) eps sqrt(d)
    pac: np.ndarray  # (I, E) eps Omega (a bound on pac-dec, not on dec^ac)
    derived: np.ndarray  # (I, E) min(eps sqrt(r), p_dec_bound)
    lemma: np.ndarray  # (I, E) min(eps sqrt(d), lemma_bound)

    def violations(self, bound: str) -> np.ndarray:
        """(I, E) bool: certified violations of ``bound`` (the DEC's *lower* bound exceeds it;
        ``"pac"`` is checked against the PAC DEC)."""
        lower = self.pac_lower if bound == "pac" else self.lower
        return lower > getattr(self, bound) * (1.0 + 1e-6)

    def slack(self, bound: str) -> np.ndarray:
        """(I, E) value / bound (<= 1 where the bound is certified to hold)."""
        value = self.pac_value if bound == "pac" else self.value
        return value / getattr(self, bound)


#: The solver of the checks: certified to a relative gap of 1e-6.
CHECK_SOLVER = S.Saddle(maxiter=20_000, rtol=1e-6, check_every=50)


def _dec_and_pac(s, fr, e2):
    res, _ = dec_linear.solve_acdec(s, fr, e2, CHECK_SOLVER)
    return (res.value, res.lower_bound) + pac_dec(s, fr, e2)


# Compiled once per shape (module level, so repeated checks of one shape do not compile again):
# per instance (outer vmap) and radius (inner vmap).
_dec_and_pac_batch = jax.jit(jax.vmap(jax.vmap(_dec_and_pac, in_axes=(None, None, 0)), in_axes=(0, 0, None)))
_design_constants = jax.jit(jax.vmap(design_constant))


def check_instances(params, eps, *, batch: int = 64) -> BoundTable:
    """Every bound of the module docstring on a batch of linear instances (``LinearEnvParams``
    with a leading instance axis), at f = f* of each instance, for the radii ``eps``."""
    eps = np.asarray(eps, np.float64)
    model = params.model
    span = model.span
    n = model.features.shape[0]
    f_r = jnp.einsum("id,idr->ir", params.theta, span.basis)
    omega = _design_constants(span)
    parts = []
    e2 = jnp.asarray(eps**2, f_r.dtype)
    for i in range(0, n, batch):
        sl = jax.tree_util.tree_map(lambda x: x[i:i + batch], span)
        parts.append([np.asarray(x, np.float64) for x in _dec_and_pac_batch(sl, f_r[i:i + batch], e2)])
    value, lower, pac_value, pac_lower = (np.concatenate([p[j] for p in parts]) for j in range(4))
    gaps = np.asarray(jax.vmap(linear.gaps)(params), np.float64)
    delta_max = gaps.max(-1)
    om, om_lo = np.asarray(omega.upper, np.float64), np.asarray(omega.lower, np.float64)
    d, r = int(model.features.shape[-1]), int(span.features.shape[-1])
    e = eps[None, :]
    return BoundTable(
        eps=eps, value=value, lower=lower, pac_value=pac_value, pac_lower=pac_lower, omega=om, omega_lower=om_lo, delta_max=delta_max, d=d, rank=r,
        sqrt_d=np.broadcast_to(e * np.sqrt(d), value.shape),
        pac=e * om[:, None],
        derived=np.minimum(e * np.sqrt(r), p_dec_bound(e, om[:, None], delta_max[:, None])),
        lemma=np.minimum(e * np.sqrt(d), lemma_bound(e, om[:, None], delta_max[:, None])),
    )


FAMILIES = (("linear-bandit", 3, 10), ("semi-bandit", 3, 10), ("semi-bandit", 30, 10))


def report(instances: int = 100, eps=None, families=FAMILIES) -> dict:
    """``{(env, d, K): BoundTable}`` on instances 0..N-1 of each family (x64 recommended)."""
    eps = np.logspace(-3, 1, 13) if eps is None else np.asarray(eps)
    out = {}
    for env, d, k in families:
        _, params, _ = registry.build_instances(env, list(range(instances)), {"d": d, "arms": k})
        out[env, d, k] = check_instances(params, eps)
    return out


def summarize(tables: dict) -> list:
    """One line per family and bound: instances, max value/bound, certified violations (and
    for the printed second bound, how many of them lie outside eps Omega <= 2 Delta_max)."""
    lines = []
    for (env, d, k), t in tables.items():
        for bound in ("sqrt_d", "pac", "derived", "lemma"):
            v = t.violations(bound)
            outside = (t.eps[None, :] * t.omega[:, None] > 2.0 * t.delta_max[:, None])
            extra = f", {int((v & outside).sum())} with eps Omega > 2 Delta_max" if bound == "lemma" else ""
            lines.append(f"{env} d={d} K={k} ({t.value.shape[0]} instances, Omega in "
                         f"[{t.omega.min():.3f}, {t.omega.max():.3f}]): {bound:7s} max ratio "
                         f"{t.slack(bound).max():.3f}, certified violations {int(v.sum())}/{v.size}{extra}")
    return lines


def plot(tables: dict, path=None):
    """dec^ac_eps(f*) against eps with the bounds (medians over instances; the DEC's range
    over instances as a band), one panel per family."""
    fig = Figure(figsize=(4.2 * len(tables), 3.8), dpi=110)
    axes = np.atleast_1d(fig.subplots(1, len(tables)))
    for ax, ((env, d, k), t) in zip(axes, tables.items()):
        e = t.eps
        ax.fill_between(e, t.value.min(0), t.value.max(0), alpha=0.25, lw=0, color="tab:blue")
        ax.plot(e, np.median(t.value, 0), "o-", ms=3, color="tab:blue", label="dec$^{ac}_\\epsilon(f^*)$ (median, range)")
        ax.plot(e, np.median(t.pac_value, 0), "s-", ms=3, color="tab:cyan", label="pac-dec$_\\epsilon(f^*)$ (median)")
        ax.plot(e, e * np.sqrt(d), "k--", lw=1, label="$\\epsilon\\sqrt{d}$ (Table 1)")
        ax.plot(e, np.median(t.pac, 0), ":", color="tab:cyan", label="$\\epsilon\\Omega$ (pac bound, median)")
        ax.plot(e, np.median(t.derived, 0), "-", color="tab:green", lw=1,
                label="min($\\epsilon\\sqrt{r}$, $\\min_{p\\leq 1} p\\Delta + \\epsilon\\Omega/\\sqrt{p}$)")
        ax.plot(e, np.median(t.lemma, 0), "-", color="tab:red", lw=1,
                label="lemma as printed: min($\\epsilon\\sqrt{d}$, $2\\epsilon^{2/3}\\Omega^{1/3}\\Delta^{1/3}$)")
        nv = int(t.violations("lemma").sum())
        ax.set_title(f"{env}, d={d}, K={k}: {t.value.shape[0]} instances\n"
                     f"printed bound violated (certified) {nv}/{t.value.size}", fontsize=9)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("$\\epsilon$")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("value")
    axes[0].legend(fontsize=6.5)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig
