"""Theta updates from preference pairs: Bayesian optimisation or Bradley-Terry MCMC.

Host-only NumPy (and scikit-optimize). A trajectory's return is `R_theta = theta . Phi`, so
every objective evaluation is a matrix product over the pairs' feature differences
`dPhi = Phi[i] - Phi[j]`; nothing is re-simulated.

Bradley-Terry scale. `Phi` sums features over 100-2000 moves, so return differences are large.
The likelihood uses `sigmoid(beta * (R_i - R_j) / scale)` with one positive scalar
`scale = bt_scale(Phi, prefs)`: the mean L2 norm of `dPhi` over the pairs (1 if that is 0).
Then `|R_i - R_j| / scale <= ||theta|| * ||dPhi|| / scale` is O(||theta||), and a single
scalar leaves the order induced by every theta unchanged.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import skopt
import threadpoolctl

from sailor_jax.config import AlignmentConfig
from sailor_jax.reward import RewardSpec
from sailor_jax.types import Preferences

METHODS = ("bo", "bt_mcmc")
OBJECTIVES = ("error", "bt_nll")
ACQ_FUNCS = ("gp_hedge", "EI", "PI", "LCB")


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


@dataclasses.dataclass(frozen=True)
class UpdateResult:
    """Outcome of `update_theta` (host-only).

    `objective_*` (`cfg.objective`) and `error_*` (weighted pair error) are of the input and
    the returned theta (NaN when the preferences carry no weight); `message` says what happened.

    `history_x` lists the evaluated points in tunable coordinates (`spec.tunable_index`
    order; for bt_mcmc: the current theta and the posterior mean), `history_y` their objective.
    """

    theta: np.ndarray  # float32[F], the returned theta
    accepted: bool
    objective_before: float
    objective_after: float
    error_before: float
    error_after: float
    num_evaluations: int
    message: str
    history_x: list[list[float]] = dataclasses.field(default_factory=list)
    history_y: list[float] = dataclasses.field(default_factory=list)


def _check_phi(Phi, num_features: int | None = None) -> np.ndarray:
    phi = np.asarray(Phi, dtype=np.float64)
    num_features = phi.shape[-1] if num_features is None and phi.ndim else num_features
    if phi.ndim != 2 or phi.shape[1] != num_features or phi.shape[0] == 0:
        raise ValueError(f"Phi must have shape [M, {num_features}] with M >= 1, got {phi.shape}")
    rows = np.flatnonzero(~np.all(np.isfinite(phi), axis=-1))
    if rows.size:
        raise ValueError(f"Phi has non-finite entries in rows {rows}")
    return phi


def _pair_diffs(phi: np.ndarray, prefs: Preferences) -> tuple[np.ndarray, np.ndarray]:
    """Validate `prefs` against `M = len(phi)`; return `dPhi float64[P, F]` and `w float64[P]`."""
    i, j, w = (np.asarray(a) for a in (prefs.i, prefs.j, prefs.w))
    p = len(prefs)
    if i.shape != (p,) or j.shape != (p,) or w.shape != (p,) or np.shape(prefs.discordant) != (p,):
        raise ValueError(f"Preferences fields must all have shape ({p},)")
    if p and not (np.issubdtype(i.dtype, np.integer) and np.issubdtype(j.dtype, np.integer)):
        raise ValueError(f"pair indices must be integers, got {i.dtype} and {j.dtype}")
    m = phi.shape[0]
    bad = np.flatnonzero((i < 0) | (i >= m) | (j < 0) | (j >= m) | (i == j))
    if bad.size:
        raise ValueError(f"pair indices must be distinct and in [0, {m}); bad pairs at {bad}")
    w = w.astype(np.float64)
    ok = np.isfinite(w) & (w >= 0)
    if not np.all(ok):
        raise ValueError(f"pair weights must be finite and >= 0, got {w[~ok]}")
    return phi[i] - phi[j], w


def _batched(thetas, num_features: int) -> tuple[np.ndarray, bool]:
    arr = np.asarray(thetas, dtype=np.float64)
    if arr.ndim not in (1, 2) or arr.shape[-1] != num_features:
        raise ValueError(
            f"thetas must have shape [F] or [K, F] with F = {num_features}, got {arr.shape}"
        )
    return np.atleast_2d(arr), arr.ndim == 1


def _error(thetas: np.ndarray, dphi: np.ndarray, w: np.ndarray) -> np.ndarray:
    """`float64[K]` weighted fraction of pairs ordered wrongly (ties 1/2); NaN if no weight."""
    margin = thetas @ dphi.T
    wrong = (margin < 0) + 0.5 * (margin == 0)
    return wrong @ w / w.sum() if w.sum() > 0 else np.full(len(thetas), np.nan)


def _nll(thetas: np.ndarray, dphi: np.ndarray, w: np.ndarray, beta: float, scale: float):
    """`float64[K]` weighted mean of `-log sigmoid(beta * margin / scale)`; NaN if no weight.

    Uses the stable softplus form `max(-z, 0) + log1p(exp(-|z|))`, equal to
    `np.logaddexp(0, -z)` but several times faster (it runs at every MCMC step).
    """
    z = (thetas * (beta / scale)) @ dphi.T
    loss = np.maximum(-z, 0.0) + np.log1p(np.exp(-np.abs(z)))
    return loss @ w / w.sum() if w.sum() > 0 else np.full(len(thetas), np.nan)


def pair_error(thetas, Phi, prefs: Preferences):
    """Weighted fraction of preference pairs that `R_theta` orders wrongly.

    Host-only; vectorised over thetas. A pair counts 1 if `R_i < R_j`, 1/2 if `R_i == R_j`.

    Args:
      thetas: `float[K, F]` candidate weights (or `float[F]` for one).
      Phi: `float[M, F]` per-trajectory feature sums.
      prefs: Pairs over the `M` trajectories, `i` preferred.

    Returns:
      `float64[K]` errors in [0, 1] (a float for `[F]` input); NaN if the total weight is 0.

    Raises:
      ValueError: bad shapes, non-finite `Phi`, or pair indices out of range.
    """
    phi = _check_phi(Phi)
    batch, single = _batched(thetas, phi.shape[1])
    out = _error(batch, *_pair_diffs(phi, prefs))
    return float(out[0]) if single else out


def bt_scale(Phi, prefs: Preferences) -> float:
    """Return the Bradley-Terry scale: mean L2 norm of `Phi[i] - Phi[j]` over pairs, or 1.

    Host-only. Raises ValueError like `pair_error`.
    """
    dphi, _ = _pair_diffs(_check_phi(Phi), prefs)
    return _scale(dphi)


def _scale(dphi: np.ndarray) -> float:
    scale = float(np.mean(np.linalg.norm(dphi, axis=1))) if len(dphi) else 0.0
    return scale if scale > 0 else 1.0


def bt_nll(thetas, Phi, prefs: Preferences, beta: float, scale: float):
    """Weighted mean Bradley-Terry negative log-likelihood of the pairs.

    Host-only; vectorised over thetas; numerically stable for any margin.

    Args:
      thetas: `float[K, F]` candidate weights (or `float[F]` for one).
      Phi: `float[M, F]` per-trajectory feature sums.
      prefs: Pairs over the `M` trajectories, `i` preferred.
      beta: Boltzmann rationality (> 0).
      scale: Positive return scale, e.g. `bt_scale(Phi, prefs)`.

    Returns:
      `float64[K]` of `sum_p w_p * -log sigmoid(beta * (R_i - R_j) / scale) / sum_p w_p`
      (a float for `[F]` input); NaN if the total weight is 0.

    Raises:
      ValueError: bad shapes, non-finite `Phi`, or pair indices out of range.
    """
    phi = _check_phi(Phi)
    batch, single = _batched(thetas, phi.shape[1])
    out = _nll(batch, *_pair_diffs(phi, prefs), beta, scale)
    return float(out[0]) if single else out


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
        name = name or self.cfg.objective
        if name == "error":
            return _error(self.thetas(x), self.dphi, self.w)
        return _nll(self.thetas(x), self.dphi, self.w, self.cfg.beta, self.scale)

    def log_lik(self, x: np.ndarray) -> np.ndarray:
        """`float64[K]` weighted Bradley-Terry log-likelihood `sum_p w_p log sigmoid(...)`."""
        return -self.w.sum() * self.objective(x, "bt_nll")

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
                  box=None):
    theta = spec.validate(theta)
    dphi, w = _pair_diffs(_check_phi(Phi, spec.num_features), prefs)
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
    return _Problem(theta, index, lo, hi, dphi, w, _scale(dphi), cfg)


def _run_bo(problem: _Problem, rng: np.random.Generator):
    cfg, free = problem.cfg, problem.free
    x0 = problem.theta[problem.index[free]].astype(np.float64)
    y0 = float(problem.objective(x0[None])[0])
    if np.any(x0 < problem.lo[free]) or np.any(x0 > problem.hi[free]):
        x0, y0 = None, None  # a box that excludes the current theta (forced move)
    else:
        x0 = x0.tolist()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The objective has been evaluated")
        res = skopt.gp_minimize(
            lambda x: float(problem.objective(np.asarray([x]))[0]),
            dimensions=list(zip(problem.lo[free].tolist(), problem.hi[free].tolist(), strict=True)),
            x0=x0,
            y0=y0,
            n_calls=cfg.bo_calls,
            n_initial_points=cfg.bo_initial_points,
            acq_func=cfg.acq_func,
            random_state=int(rng.integers(2**31 - 1)),
        )
    points, values = np.asarray(res.x_iters, dtype=np.float64), np.asarray(res.func_vals)
    return points[int(np.argmin(values))], points, values, len(values), ""


def _run_mcmc(problem: _Problem, rng: np.random.Generator):
    cfg, free = problem.cfg, problem.free
    lo, hi = problem.lo[free], problem.hi[free]
    # Chains start at the current theta, or at its nearest point of a box that excludes it.
    x0 = np.clip(problem.theta[problem.index[free]].astype(np.float64), lo, hi)
    x = np.tile(x0, (cfg.mcmc_chains, 1))
    lp = problem.log_lik(x)
    noise = rng.normal(scale=cfg.mcmc_step, size=(cfg.mcmc_samples, *x.shape))
    log_u = np.log(rng.uniform(size=(cfg.mcmc_samples, cfg.mcmc_chains)))
    running_sum, moves = np.zeros_like(x0), 0
    for step in range(cfg.mcmc_samples):
        proposal = x + noise[step]
        inside = np.all((proposal >= lo) & (proposal <= hi), axis=1)
        lp_proposal = np.where(inside, problem.log_lik(proposal), -np.inf)
        take = log_u[step] < lp_proposal - lp
        x, lp = np.where(take[:, None], proposal, x), np.where(take, lp_proposal, lp)
        moves += int(take.sum())
        if step >= cfg.mcmc_burn_in:
            running_sum += x.sum(axis=0)
    mean = np.clip(running_sum / (cfg.mcmc_chains * (cfg.mcmc_samples - cfg.mcmc_burn_in)), lo, hi)
    points = np.stack([x0, mean])
    note = f"MH acceptance rate {moves / (cfg.mcmc_chains * cfg.mcmc_samples):.2f}; "
    return mean, points, problem.objective(points), x.shape[0] * (1 + cfg.mcmc_samples), note


def _values(problem: _Problem, theta: np.ndarray) -> tuple[float, float]:
    """(objective, weighted pair error) of a full float32 theta."""
    x = theta[problem.index[problem.free]].astype(np.float64)[None]
    return float(problem.objective(x)[0]), float(problem.objective(x, "error")[0])


def _skip_reason(problem: _Problem, num_pairs: int) -> str:
    if num_pairs == 0:
        return "no preference data (rankings agree); theta unchanged"
    if problem.w.sum() <= 0:
        return "preference weights sum to 0; theta unchanged"
    if not np.any(problem.free):
        return "no tunable entry can move (none tunable, or zero-width boxes); theta unchanged"
    return ""


def update_theta(
    theta,
    Phi,
    prefs: Preferences,
    spec: RewardSpec,
    cfg: AlignmentConfig,
    rng: np.random.Generator | int,
    *,
    box: tuple | None = None,
    accept_ties: bool = False,
) -> UpdateResult:
    """Update the tunable entries of theta to agree better with the preference pairs.

    Host-only. "bo" runs `skopt.gp_minimize` on `cfg.objective` over the box
    bounds ∩ [theta +/- trust_region], starting from the current theta (passed as `x0`/`y0`);
    the best point is accepted if its objective is strictly lower. "bt_mcmc" follows Zeng et al.
    (2024), "Learning Reward for Robot Skills Using Large Language Models via Self-Alignment":
    Metropolis-Hastings (Gaussian random walk, `cfg.mcmc_chains` chains) on the Bradley-Terry
    posterior `prod_p sigmoid(beta (R_i - R_j) / scale) ** w_p` under a uniform prior on
    bounds ∩ [theta +/- mcmc_trust_region] (∩ trust_region); the posterior mean after burn-in
    is accepted only if its weighted pair error is strictly lower. Non-tunable entries are
    returned bit-for-bit; the result is always within the bounds and trust region.

    Args:
      theta: `float[F]` current weights, valid for `spec`.
      Phi: `float[M, F]` per-trajectory feature sums (finite).
      prefs: Pairs over the `M` trajectories, `i` preferred (see `preferences.py`).
      spec: Names, bounds and tunable mask of theta.
      cfg: Method and budgets.
      rng: NumPy generator or int seed (makes the update deterministic).
      box: optional `(lower, upper)` (scalars or `float[F]`) intersected with the search box.
        A box that excludes the current theta forces a move (LLM-guided refinement's
        one-sided interval, see `sailor_jax.refinement`); an empty box leaves theta unchanged.
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
    run = _run_mcmc if mcmc else _run_bo
    # Small GP fits and [K, 8] x [8, P] products: BLAS threads only add contention (10x slower
    # on a busy 2-core host), so run single-threaded.
    with threadpoolctl.threadpool_limits(limits=1):
        x_best, points, values, evaluations, note = run(problem, np.random.default_rng(rng))
    candidate = problem.to_theta(x_best)
    obj_new, err_new = _values(problem, candidate)
    what = "weighted pair error" if mcmc else f"objective ({cfg.objective})"
    before, after = (err, err_new) if mcmc else (obj, obj_new)
    accepted = after <= before if accept_ties else after < before
    message = f"{note}accepted: {what} {before:.6g} -> {after:.6g}"
    if not accepted:
        relation = "is above" if accept_ties else "is not below"
        message = f"{note}rejected: {what} {after:.6g} {relation} {before:.6g}; theta unchanged"
        candidate, obj_new, err_new = problem.theta, obj, err
    history_x = np.tile(problem.theta[problem.index].astype(np.float64), (len(points), 1))
    history_x[:, problem.free] = points
    return UpdateResult(
        theta=candidate,
        accepted=accepted,
        objective_before=obj,
        objective_after=obj_new,
        error_before=err,
        error_after=err_new,
        num_evaluations=evaluations,
        message=message,
        history_x=history_x.tolist(),
        history_y=np.asarray(values, dtype=np.float64).tolist(),
    )
