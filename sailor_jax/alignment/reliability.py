"""The Bradley-Terry posterior with the judge's reliability, sampled by NUTS.

Host-side JAX (a small program on the CPU). The judge is modelled as answering a pair by the
reward with probability `eta` and by a fair coin otherwise (the mixture of Christiano et al.
2017, "Deep reinforcement learning from human preferences", and of Crowd-BT, Chen et al. 2013):

    P(i > j | theta, eta) = eta * sigmoid(beta * (R_i - R_j) / scale) + (1 - eta) / 2.

At `eta = 0` the likelihood is flat in theta, so a judge's verdicts move theta only as far as
they show the judge to be reliable. theta's free coordinates and `eta` are sampled jointly by
blackjax's NUTS after Stan's window adaptation, `CHAINS` chains side by side. The likelihood
reads theta clipped into its bounds (the reward a theta outside them gives), so the posterior
beyond a bound is the prior's. What an update learns is carried to the next as a `Belief`:
theta's posterior mean and covariance (the next update's Gaussian prior, no direction wider than
the first prior's) and eta's moment-matched Beta, so that what earlier verdicts showed is not
spent and forgotten.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from sailor_jax.alignment.pair_objectives import pad_pairs

CHAINS = 4
"""NUTS chains run side by side (vectorised), each adapted on its own."""


@dataclasses.dataclass(frozen=True)
class Belief:
    """What a seed's updates so far say about theta and the judge (host NumPy).

    Attributes:
      mean: `float64[D]` theta's free coordinates, posterior mean.
      cov: `float64[D, D]` their posterior covariance (the next update's Gaussian prior).
      eta_a, eta_b: the Beta distribution of the judge's reliability `eta`.
    """

    mean: np.ndarray
    cov: np.ndarray
    eta_a: float
    eta_b: float

    @classmethod
    def prior(cls, mean, sd: float, eta_a: float, eta_b: float) -> Belief:
        """The first update's prior: theta ~ N(`mean`, `sd`^2 I), eta ~ Beta(a, b)."""
        mean = np.asarray(mean, np.float64)
        return cls(mean, np.eye(len(mean)) * sd**2, float(eta_a), float(eta_b))

    def to_json(self) -> dict:
        """JSON-ready lists and floats (`from_json` reads them back)."""
        return {"mean": self.mean.tolist(), "cov": self.cov.tolist(),
                "eta_a": self.eta_a, "eta_b": self.eta_b}

    @classmethod
    def from_json(cls, d: dict) -> Belief:
        return cls(np.asarray(d["mean"], np.float64), np.asarray(d["cov"], np.float64),
                   float(d["eta_a"]), float(d["eta_b"]))

    @property
    def eta_mean(self) -> float:
        return self.eta_a / (self.eta_a + self.eta_b)


@dataclasses.dataclass(frozen=True)
class Posterior:
    """One update's posterior: the belief it leaves and how well the chains mixed."""

    belief: Belief
    rhat: float
    """The largest potential scale reduction over theta's free coordinates and eta."""
    ess: float
    """The smallest effective sample size over them."""
    divergences: float
    """The share of post-adaptation NUTS transitions that diverged."""


def beta_moments(mean: float, var: float, floor: float = 1e-3) -> tuple[float, float]:
    """The Beta `(a, b)` with this mean and variance (the variance capped below
    `mean (1 - mean)`, the mean kept inside `[floor, 1 - floor]`)."""
    m = float(np.clip(mean, floor, 1 - floor))
    v = float(np.clip(var, 1e-12, m * (1 - m) * (1 - 1e-6)))
    k = m * (1 - m) / v - 1
    return m * k, (1 - m) * k


def sample(belief: Belief, lo, hi, a, b, w, seed: int, warmup: int, samples: int,
           max_sd: float) -> Posterior:
    """Sample theta's free coordinates and eta given pairs and the prior `belief`.

    The log density is `sum_p w_p log(eta sigmoid(a_p . clip(x) + b_p) + (1 - eta) / 2)` plus
    the Gaussian prior `N(belief.mean, belief.cov)` on `x` and `Beta(eta_a, eta_b)` on eta
    (NUTS runs on `x` and the logit of eta, with its Jacobian).

    Args:
      belief: the prior (`D` free coordinates).
      lo, hi: `float64[D]` theta's bounds on the free coordinates (lo < hi).
      a: `float64[P, D]` each pair's scaled feature difference on the free coordinates
        (`beta / scale * dPhi`); b: `float64[P]` the fixed coordinates' part; w: `float64[P]`
        pair weights.
      seed: the chains' random seed.
      warmup: adaptation steps per chain; samples: kept draws per chain.
      max_sd: no direction of the returned covariance is wider than this (the first prior's
        sd), so sampling noise cannot widen the belief from update to update.

    Returns:
      `Posterior` with the new belief (theta's sample mean and covariance, eta's Beta
      moment-matched), max R-hat, min ESS and the divergence share.
    """
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    d = len(lo)
    chol = np.linalg.cholesky(belief.cov + np.eye(d) * 1e-12)
    pa, pb, pw = pad_pairs(np.asarray(a, np.float64), np.asarray(b, np.float64),
                           np.asarray(w, np.float64))
    import jax

    with jax.default_device(jax.devices("cpu")[0]):  # a tiny program: on the host, GPU or not
        x, eta, rhat, ess, div = (np.asarray(v, np.float64) for v in _program(warmup, samples)(
            seed, belief.mean, chol, np.array([belief.eta_a, belief.eta_b]), lo, hi, pa, pb,
            pw))
    flat = x.reshape(-1, d)
    values, vectors = np.linalg.eigh(np.atleast_2d(np.cov(flat, rowvar=False)))
    cov = (vectors * np.minimum(values, max_sd**2)) @ vectors.T
    ea, eb = beta_moments(float(eta.mean()), float(eta.var()))
    return Posterior(Belief(flat.mean(0), cov, ea, eb), float(rhat), float(ess), float(div))


@functools.cache
def _program(warmup: int, samples: int):
    """The jitted sampler: `(seed, m [D], chol [D, D], (eta_a, eta_b), lo, hi, a [P, D],
    b [P], w [P])` -> `(x [C, N, D], eta [C, N], max R-hat, min ESS, divergence share)`."""
    import blackjax
    import jax
    import jax.numpy as jnp
    from jax.scipy.linalg import solve_triangular

    def run(seed, m, chol, eta_ab, lo, hi, a, b, w):
        def log_density(z):
            x, v = z[:-1], z[-1]
            log_eta, log_not = jax.nn.log_sigmoid(v), jax.nn.log_sigmoid(-v)
            judged = jnp.logaddexp(log_eta + jax.nn.log_sigmoid(a @ jnp.clip(x, lo, hi) + b),
                                   log_not - jnp.log(2.0))
            white = solve_triangular(chol, x - m, lower=True)
            # Beta prior on eta = sigmoid(v), with the Jacobian eta (1 - eta)
            return (jnp.sum(w * judged) - 0.5 * white @ white
                    + eta_ab[0] * log_eta + eta_ab[1] * log_not)

        def chain(key):
            k_adapt, k_init, k_run = jax.random.split(key, 3)
            z0 = jnp.concatenate([m, jnp.zeros(1)]) + 0.1 * jax.random.normal(
                k_init, (m.shape[0] + 1,))
            (state, params), _ = blackjax.window_adaptation(blackjax.nuts, log_density).run(
                k_adapt, z0, warmup)
            kernel = blackjax.nuts(log_density, **params)

            def step(s, k):
                s, info = kernel.step(k, s)
                return s, (s.position, info.is_divergent)
            return jax.lax.scan(step, state, jax.random.split(k_run, samples))[1]

        z, divergent = jax.vmap(chain)(jax.random.split(jax.random.key(seed), CHAINS))
        x, eta = z[..., :-1], jax.nn.sigmoid(z[..., -1])
        both = jnp.concatenate([x, eta[..., None]], axis=-1)
        return (x, eta, jnp.max(blackjax.diagnostics.potential_scale_reduction(both)),
                jnp.min(blackjax.diagnostics.effective_sample_size(both)), divergent.mean())

    return jax.jit(run)
