"""Theta updates from preference pairs: Bayesian optimisation or Bradley-Terry MCMC.

Host-only NumPy (and scikit-optimize). Both rules minimise the pair objectives of
`sailor_jax.alignment.pair_objectives` (weighted pair error, Bradley-Terry NLL with one scale
`bt_scale`) over a box of the tunable entries of theta; nothing is re-simulated. `pair_error`,
`bt_nll` and `bt_scale` are re-exported here.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings

import numpy as np
import threadpoolctl

from sailor_jax.alignment.pair_objectives import (
    bt_nll,
    bt_scale,
    check_phi,
    diff_scale,
    pad_pairs,
    pair_diffs,
    pair_error,
    weighted_error,
    weighted_nll,
)
from sailor_jax.config import AlignmentConfig
from sailor_jax.config.judge import METHODS, OBJECTIVES
from sailor_jax.game.reward import RewardSpec
from sailor_jax.types import Preferences

BO_POINTS = 1000
"""Random points the acquisition is evaluated at per BO step; `gp_minimize` maximises it as the
best of them ("sampling"; scikit-optimize's default: 10000, then L-BFGS from 5 starts)."""
BO_GP_RESTARTS = 0
"""Extra restarts of the GP's kernel-hyperparameter fit per BO step (scikit-optimize's
default: 2)."""
BO_GP_FIT_MAXITER = 10
"""L-BFGS iterations of each GP hyperparameter fit (scikit-learn's default: until converged;
the fits are most of an update's time)."""
BO_ACQ_FUNC = "gp_hedge"
"""scikit-optimize's acquisition function (its default: a hedge over EI, PI and LCB)."""
MCMC_CHAINS = 4
"""Metropolis-Hastings chains run side by side (vectorised), all started at the current theta."""
MCMC_STEP = 0.05
"""Std of the Gaussian random-walk proposal (theta units)."""

__all__ = ["METHODS", "OBJECTIVES", "AlignmentConfig", "UpdateResult", "bt_nll",
           "bt_scale", "pair_error", "update_theta"]


@dataclasses.dataclass(frozen=True)
class UpdateResult:
    """Outcome of `update_theta` (host-only).

    `objective_*` (`cfg.objective`) and `error_*` (weighted pair error) are of the input and
    the returned theta (NaN when the preferences carry no weight); `message` says what happened.
    """

    theta: np.ndarray  # float32[F], the returned theta
    accepted: bool
    objective_before: float
    objective_after: float
    error_before: float
    error_after: float
    num_evaluations: int
    message: str
    proposal: np.ndarray | None = None
    """`float32[F]` the optimiser's point whatever the decision (None: no optimiser ran)."""
    diagnostics: dict | None = None
    """The sampler's convergence diagnostics after burn-in (`blackjax.diagnostics`): `{"rhat":
    the largest potential scale reduction, "ess": the smallest effective sample size}` over
    the free coordinates (bt_reliability's also over eta, with "divergences", "eta" and
    "mixed"); None for bo or when no sampler ran."""
    belief: dict | None = None
    """bt_reliability's posterior, the seed's next prior (`alignment.reliability.Belief`
    as JSON; the prior it started from where the chains did not mix); None: another method
    or no sampler ran."""


@dataclasses.dataclass(frozen=True)
class _Problem:
    """The update in tunable coordinates; `free` marks tunable entries with a non-empty box."""

    theta: np.ndarray  # float32[F] current theta
    index: np.ndarray  # int[T] spec.tunable_index
    lo: np.ndarray  # float64[T] search box
    hi: np.ndarray  # float64[T]
    dphi: np.ndarray  # float64[P, F]
    w: np.ndarray  # float64[P]
    scale: float
    cfg: AlignmentConfig

    @property
    def free(self) -> np.ndarray:
        return self.lo < self.hi

    def thetas(self, x: np.ndarray) -> np.ndarray:
        """Full `float64[K, F]` thetas from free-coordinate points `x [K, D]`."""
        out = np.tile(self.theta.astype(np.float64), (len(x), 1))
        out[:, self.index[self.free]] = x
        return out

    def objective(self, x: np.ndarray, name: str | None = None) -> np.ndarray:
        """`float64[K]` objective `name` (default `cfg.objective`) of the points `x [K, D]`."""
        name = name or self.cfg.objective
        if name == "error":
            return weighted_error(self.thetas(x), self.dphi, self.w)
        return weighted_nll(self.thetas(x), self.dphi, self.w, self.cfg.beta, self.scale)

    def log_lik(self, x: np.ndarray) -> np.ndarray:
        """`float64[K]` weighted Bradley-Terry log-likelihood `sum_p w_p log sigmoid(...)`."""
        return -self.w.sum() * self.objective(x, "bt_nll")

    def linear_terms(self) -> tuple[np.ndarray, np.ndarray]:
        """Each pair's Bradley-Terry logit `beta (R_i - R_j) / scale` as `a . x + b` in the
        free coordinates `x`: `(a float64[P, D], b float64[P])`, `b` from the entries that do
        not move."""
        coef = self.cfg.beta / self.scale
        fixed = self.thetas(np.zeros((1, int(self.free.sum()))))[0]
        return self.dphi[:, self.index[self.free]] * coef, self.dphi @ fixed * coef

    def to_theta(self, x: np.ndarray) -> np.ndarray:
        """float32 theta from free coordinates `x [D]`, rounded into the box."""
        theta = self.theta.copy()
        theta[self.index[self.free]] = _snap(x, self.lo[self.free], self.hi[self.free])
        return theta


def _snap(x, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Round to float32 without leaving `[lo, hi]` (float64 bounds; one ulp inward if needed)."""
    y = np.asarray(x, dtype=np.float64).astype(np.float32)
    y = np.where(y > hi, np.nextafter(y, np.float32(-np.inf)), y)
    return np.where(y < lo, np.nextafter(y, np.float32(np.inf)), y)


def _make_problem(theta, Phi, prefs, spec: RewardSpec, cfg: AlignmentConfig, half_width,
                  box=None) -> _Problem:
    """Validate the inputs; box = bounds ∩ trust regions ∩ `box`. Raises ValueError."""
    theta = spec.validate(theta)
    dphi, w = pair_diffs(check_phi(Phi, spec.num_features), prefs)
    index = spec.tunable_index
    lo, hi = np.asarray(spec.lower)[index], np.asarray(spec.upper)[index]
    # float32 rounding can put a bound-valued weight one ulp outside its bound: pull it in.
    theta[index] = _snap(theta[index], lo, hi)
    current = theta[index].astype(np.float64)
    for hw in (cfg.trust_region, half_width):
        if hw is not None:
            lo, hi = np.maximum(lo, current - hw), np.minimum(hi, current + hw)
    if box is not None:
        box_lo, box_hi = (np.broadcast_to(np.asarray(b, np.float64), (spec.num_features,))
                          for b in box)
        if np.any(np.isnan(box_lo)) or np.any(np.isnan(box_hi)):
            raise ValueError(f"box bounds must not be NaN, got {box_lo}, {box_hi}")
        lo, hi = np.maximum(lo, box_lo[index]), np.minimum(hi, box_hi[index])
    return _Problem(theta, index, lo, hi, dphi, w, diff_scale(dphi), cfg)


def _gp_fit(obj_func, initial_theta, bounds, maxiter: int) -> tuple[np.ndarray, float]:
    """scikit-learn's GP hyperparameter fit (L-BFGS-B on the negative log marginal likelihood,
    with its gradient) capped at `maxiter` iterations: the `optimizer` callable that
    `GaussianProcessRegressor` documents."""
    import scipy.optimize

    res = scipy.optimize.minimize(obj_func, initial_theta, method="L-BFGS-B", jac=True,
                                  bounds=bounds, options={"maxiter": maxiter})
    return res.x, float(res.fun)


def _run_bo(problem: _Problem, rng: np.random.Generator) -> tuple:
    """`skopt.gp_minimize` from the current theta: `(best point [D], evaluations, note,
    None, None)`."""
    import skopt  # deferred: with scipy.stats, a third of a script's start

    cfg, free = problem.cfg, problem.free
    x0 = problem.theta[problem.index[free]].astype(np.float64)
    y0 = float(problem.objective(x0[None])[0])
    if np.any(x0 < problem.lo[free]) or np.any(x0 > problem.hi[free]):
        x0, y0 = None, None  # a box that excludes the current theta (forced move)
    else:
        x0 = x0.tolist()
    dimensions = list(zip(problem.lo[free].tolist(), problem.hi[free].tolist(), strict=True))
    seed = int(rng.integers(2**31 - 1))
    gp = skopt.utils.cook_estimator("GP", space=skopt.space.Space(dimensions), random_state=seed,
                                    noise="gaussian", n_restarts_optimizer=BO_GP_RESTARTS)
    gp.set_params(optimizer=functools.partial(_gp_fit, maxiter=BO_GP_FIT_MAXITER))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The objective has been evaluated")
        res = skopt.gp_minimize(
            lambda x: float(problem.objective(np.asarray([x]))[0]),
            dimensions=dimensions,
            base_estimator=gp,
            x0=x0,
            y0=y0,
            n_calls=cfg.bo_calls,
            n_initial_points=cfg.bo_initial_points,
            acq_func=BO_ACQ_FUNC,
            acq_optimizer="sampling",
            n_points=BO_POINTS,
            random_state=seed,
        )
    points, values = np.asarray(res.x_iters, dtype=np.float64), np.asarray(res.func_vals)
    return points[int(np.argmin(values))], len(values), "", None, None


def _run_mcmc(problem: _Problem, rng: np.random.Generator) -> tuple:
    """Random-walk Metropolis-Hastings on the Bradley-Terry posterior (blackjax's
    `additive_step_random_walk`, `MCMC_CHAINS` chains from the current theta): `(posterior
    mean [D], evaluations, note, diagnostics, None)`; the note gives the acceptance rate, the
    diagnostics the chains' largest R-hat and smallest effective sample size after burn-in
    over the free coordinates (`blackjax.diagnostics`)."""
    cfg, free = problem.cfg, problem.free
    lo, hi = problem.lo[free], problem.hi[free]
    # Chains start at the current theta, or at its nearest point of a box that excludes it.
    x0 = np.clip(problem.theta[problem.index[free]].astype(np.float64), lo, hi)
    a, b, w = pad_pairs(*problem.linear_terms(), problem.w)
    seed = int(rng.integers(2**31 - 1))
    import jax

    with jax.default_device(jax.devices("cpu")[0]):  # a tiny program: on the host, GPU or not
        mean, moves, rhat, ess = (np.asarray(v, np.float64) for v in _mcmc_program(
            cfg.mcmc_samples, cfg.mcmc_burn_in)(seed, x0, lo, hi, a, b, w))
    mean = np.clip(mean, lo, hi)
    note = (f"MH acceptance rate {float(moves):.2f}, R-hat {float(rhat):.3f}, "
            f"ESS {float(ess):.0f}; ")
    return mean, MCMC_CHAINS * (1 + cfg.mcmc_samples), note, {"rhat": float(rhat),
                                                               "ess": float(ess)}, None


@functools.cache
def _mcmc_program(num_samples: int, burn_in: int):
    """The jitted sampler: `(seed, x0 [D], lo [D], hi [D], a [P, D], b [P], w [P])` ->
    `(post-burn-in mean over chains and steps [D], acceptance rate, max R-hat, min ESS)`;
    the log density is `sum_p w_p log sigmoid(a_p . x + b_p)` inside the box, -inf outside."""
    import blackjax
    import jax
    import jax.numpy as jnp

    def run(seed, x0, lo, hi, a, b, w):
        def log_density(x):
            inside = jnp.all((x >= lo) & (x <= hi))
            return jnp.where(inside, jnp.sum(w * jax.nn.log_sigmoid(a @ x + b)), -jnp.inf)

        kernel = blackjax.additive_step_random_walk(
            log_density, blackjax.mcmc.random_walk.normal(jnp.full(x0.shape, MCMC_STEP)))

        def chain(key):
            def step(state, k):
                state, info = kernel.step(k, state)
                return state, (state.position, info.is_accepted)
            return jax.lax.scan(step, kernel.init(x0), jax.random.split(key, num_samples))[1]

        keys = jax.random.split(jax.random.key(seed), MCMC_CHAINS)
        positions, accepted = jax.vmap(chain)(keys)  # [C, N, D], [C, N]
        kept = positions[:, burn_in:]
        return (kept.mean(axis=(0, 1)), accepted.mean(),
                jnp.max(blackjax.diagnostics.potential_scale_reduction(kept)),
                jnp.min(blackjax.diagnostics.effective_sample_size(kept)))

    return jax.jit(run)


RELIABILITY_RHAT_LIMIT = 1.1
"""bt_reliability keeps theta and its belief when the chains' largest R-hat exceeds this (or
is not finite): a posterior the chains disagree on is not stepped to."""


def _run_reliability(problem: _Problem, rng: np.random.Generator, belief: dict | None) -> tuple:
    """NUTS on theta and the judge's reliability (`alignment.reliability.sample`) from the
    carried `belief` (None: the prior around the current theta): `(posterior mean [D],
    evaluations, note, diagnostics, new belief)`; the diagnostics hold R-hat, ESS, the
    divergence share and eta's posterior mean; the belief is `Belief.to_json`."""
    from sailor_jax.alignment import reliability

    cfg, free = problem.cfg, problem.free
    x0 = problem.theta[problem.index[free]].astype(np.float64)
    prior = (reliability.Belief.from_json(belief) if belief is not None else
             reliability.Belief.prior(x0, cfg.prior_sd, *cfg.reliability_prior))
    post = reliability.sample(
        prior, problem.lo[free], problem.hi[free], *problem.linear_terms(), problem.w,
        int(rng.integers(2**31 - 1)), cfg.mcmc_burn_in, cfg.mcmc_samples - cfg.mcmc_burn_in,
        cfg.prior_sd)
    mixed = bool(np.isfinite(post.rhat) and post.rhat <= RELIABILITY_RHAT_LIMIT)
    diagnostics = {"rhat": post.rhat, "ess": post.ess, "divergences": post.divergences,
                   "eta": post.belief.eta_mean, "mixed": mixed}
    note = (f"NUTS R-hat {post.rhat:.3f}, ESS {post.ess:.0f}, judge reliability eta "
            f"{post.belief.eta_mean:.2f}; ")
    step = np.clip(post.belief.mean, problem.lo[free], problem.hi[free]) if mixed else x0
    return step, reliability.CHAINS * cfg.mcmc_samples, note, diagnostics, \
        (post.belief if mixed else prior).to_json()


def _values(problem: _Problem, theta: np.ndarray) -> tuple[float, float]:
    """(objective, weighted pair error) of a full float32 theta."""
    x = theta[problem.index[problem.free]].astype(np.float64)[None]
    return float(problem.objective(x)[0]), float(problem.objective(x, "error")[0])


def _skip_reason(problem: _Problem, num_pairs: int) -> str:
    """Why no optimiser can run (empty string if one can)."""
    if num_pairs == 0:
        return "no preference data (rankings agree); theta unchanged"
    if problem.w.sum() <= 0:
        return "preference weights sum to 0; theta unchanged"
    if not np.any(problem.free):
        return "no tunable entry can move (none tunable, or zero-width boxes); theta unchanged"
    return ""


def _decide(problem: _Problem, candidate: np.ndarray, before: tuple[float, float],
            evaluations: int, note: str, accept_ties: bool, mixed: bool = True) -> UpdateResult:
    """Accept `candidate` (float32[F]) if it beats the current theta, whose values are `before`.

    bo compares the objective, bt_mcmc the weighted pair error; `accept_ties` accepts equality.
    bt_reliability steps to its posterior mean whenever its chains `mixed`.
    """
    (obj, err), (obj_new, err_new) = before, _values(problem, candidate)
    mcmc = problem.cfg.method != "bo"
    what = "weighted pair error" if mcmc else f"objective ({problem.cfg.objective})"
    old, new = (err, err_new) if mcmc else (obj, obj_new)
    accepted = new <= old if accept_ties else new < old
    if problem.cfg.method == "bt_reliability":
        accepted = mixed and not np.array_equal(candidate, problem.theta)
    message = f"{note}accepted: {what} {old:.6g} -> {new:.6g}"
    if not accepted:
        relation = "is above" if accept_ties else "is not below"
        message = f"{note}rejected: {what} {new:.6g} {relation} {old:.6g}; theta unchanged"
        proposal, candidate, obj_new, err_new = candidate, problem.theta, obj, err
    else:
        proposal = candidate
    return UpdateResult(theta=candidate, accepted=accepted, objective_before=obj,
                        objective_after=obj_new, error_before=err, error_after=err_new,
                        num_evaluations=evaluations, message=message, proposal=proposal)


def update_theta(theta, Phi, prefs: Preferences, spec: RewardSpec, cfg: AlignmentConfig,
                 rng: np.random.Generator | int, belief: dict | None = None, *,
                 box: tuple | None = None, accept_ties: bool = False) -> UpdateResult:
    """Update the tunable entries of theta to agree better with the preference pairs.

    Host-only. "bo" runs `skopt.gp_minimize` on `cfg.objective` over the box
    bounds ∩ [theta +/- trust_region], starting from the current theta (passed as `x0`/`y0`);
    the best point is accepted if its objective is strictly lower. "bt_mcmc" follows Zeng et al.
    (2024), "Learning Reward for Robot Skills Using Large Language Models via Self-Alignment":
    Metropolis-Hastings (Gaussian random walk, `MCMC_CHAINS` chains) on the Bradley-Terry
    posterior `prod_p sigmoid(beta (R_i - R_j) / scale) ** w_p` under a uniform prior on
    bounds ∩ [theta +/- mcmc_trust_region] (∩ trust_region); the posterior mean after burn-in
    is accepted only if its weighted pair error is strictly lower. "bt_reliability" samples
    theta and the judge's reliability jointly by NUTS from `belief` (what the seed's earlier
    updates left, `alignment.reliability`) and steps to theta's posterior mean clipped into the
    bounds (no trust region), unless the chains did not mix. Non-tunable entries are returned
    bit-for-bit; the result is always within the bounds and trust region.

    Args:
      theta: `float[F]` current weights, valid for `spec`.
      Phi: `float[M, F]` per-trajectory feature sums (finite).
      prefs: Pairs over the `M` trajectories, `i` preferred (see `preferences.py`).
      spec: Names, bounds and tunable mask of theta.
      cfg: Method and budgets.
      rng: NumPy generator or int seed (makes the update deterministic).
      belief: bt_reliability's prior, the previous update's `UpdateResult.belief` (None:
        the first update's prior around `theta`); other methods ignore it.
      box: optional `(lower, upper)` (scalars or `float[F]`) intersected with the search box.
        A box that excludes the current theta forces a move (LLM-guided refinement's
        one-sided interval, see `sailor_jax.alignment.refinement`); an empty box leaves theta
        unchanged.
      accept_ties: accept a candidate whose objective equals the current one (with a forced
        move: keep agreement while moving in the suggested direction).

    Returns:
      `UpdateResult` with the new `float32[F]` theta (the input when not accepted).

    Raises:
      ValueError: theta invalid for `spec`, `Phi` of the wrong shape or non-finite, or bad
        pair indices or weights.
    """
    mcmc = cfg.method == "bt_mcmc"
    problem = _make_problem(theta, Phi, prefs, spec, cfg, cfg.mcmc_trust_region if mcmc else None,
                            box)
    obj, err = _values(problem, problem.theta)
    skip = _skip_reason(problem, len(prefs))
    if skip:
        return UpdateResult(problem.theta, False, obj, obj, err, err, 0, skip)
    run = {"bo": _run_bo, "bt_mcmc": _run_mcmc,
           "bt_reliability": functools.partial(_run_reliability, belief=belief)}[cfg.method]
    # Small GP fits and [K, 8] x [8, P] products: BLAS threads only add contention (10x slower
    # on a busy 2-core host), so run single-threaded.
    with threadpoolctl.threadpool_limits(limits=1):
        x_best, evaluations, note, diagnostics, belief = run(problem,
                                                             np.random.default_rng(rng))
    result = _decide(problem, problem.to_theta(x_best), (obj, err), evaluations, note,
                     accept_ties, (diagnostics or {}).get("mixed", True))
    return dataclasses.replace(result, diagnostics=diagnostics, belief=belief)

