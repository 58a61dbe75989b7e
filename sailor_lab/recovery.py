"""Reward recovery against a linear oracle (`experiments/oracle_recovery.py`).

Feature-sum pools of real 2048 games played by freshly initialised (near-uniform) policies,
a store that merges the preference pairs of several pools into one pool, the cosine between
two weight vectors on the tunable entries, and `recover_theta`, the alignment iterations
against `LinearOracleRanker`. Host-only, except the compiled sampler.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import jax
import numpy as np

from sailor_jax.agents.networks import make_network
from sailor_jax.agents.rollout import make_collect
from sailor_jax.alignment.preferences import build_preferences, pair_agreement
from sailor_jax.alignment.updates import update_theta
from sailor_jax.config import AlignmentConfig, NetworkConfig, PreferenceConfig
from sailor_jax.game.reward import RewardSpec
from sailor_jax.judges.oracles import LinearOracleRanker
from sailor_jax.types import Preferences, TrajectoryBatch


def make_sample_pool(net: NetworkConfig, num: int, max_len: int):
    """Build the compiled `sample(key) -> TrajectoryBatch` of `num` games.

    Each call initialises a fresh random policy (`net`) from `key` (orthogonal init, 0.01
    policy head: near-uniform over legal moves) and plays `num` games of at most `max_len`
    moves with it. Static: `net`, `num`, `max_len`. Raises ValueError like `make_collect`.
    """
    init_params, _ = make_network(net)
    collect = make_collect(net, num, max_len)

    def sample(key: jax.Array) -> TrajectoryBatch:
        key_params, key_collect = jax.random.split(key)
        return collect(init_params(key_params), key_collect)

    return jax.jit(sample)


def sample_phi(net: NetworkConfig, num: int, max_len: int, *, seed: int, iterations: int,
               heldout: int) -> tuple[list[np.ndarray], np.ndarray, dict]:
    """Sample `iterations` pools of `num` games and a held-out pool; return their `Phi`.

    Host-only. Pool `t` uses `fold_in(key_pools, t)`, held-out chunk `c` (of `num` games)
    `fold_in(key_heldout, c)`, where `key_pools, key_heldout = split(PRNGKey(seed))`.

    Returns:
      `(pools, heldout, info)`: `iterations` arrays `float64[num, F]`, `float64[heldout, F]`,
      and sampling statistics (compile and sampling seconds, game lengths, truncations).
    """
    sample = make_sample_pool(net, num, max_len)
    key_pools, key_heldout = jax.random.split(jax.random.PRNGKey(seed))
    t0 = time.perf_counter()
    sample = sample.lower(key_pools).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    chunks = -(-heldout // num)
    keys = ([jax.random.fold_in(key_pools, t) for t in range(iterations)]
            + [jax.random.fold_in(key_heldout, c) for c in range(chunks)])
    batches = [jax.device_get(sample(k)) for k in keys]
    lengths = np.concatenate([b.lengths for b in batches])
    info = {"compile_s": compile_s, "sample_s": time.perf_counter() - t0,
            "length_mean": float(lengths.mean()), "length_min": int(lengths.min()),
            "length_max": int(lengths.max()),
            "truncated": int(sum(int(np.sum(b.truncated)) for b in batches))}
    phis = [np.asarray(b.Phi, dtype=np.float64) for b in batches]
    return phis[:iterations], np.concatenate(phis[iterations:])[:heldout], info


def phi_batch(phi: np.ndarray) -> TrajectoryBatch:
    """A host batch carrying only `Phi float[M, F]`: all a linear oracle looks at."""
    return TrajectoryBatch(boards=None, actions=None, score_gains=None, lengths=None,
                           truncated=None, score=None, max_tile=None, Phi=phi)


def tunable_cosine(theta, theta_star, spec: RewardSpec) -> float:
    """Cosine similarity of two `float[F]` weight vectors on `spec`'s tunable entries.

    Host-only. NaN if either is 0 there.
    """
    a = np.asarray(theta, np.float64)[spec.tunable_index]
    b = np.asarray(theta_star, np.float64)[spec.tunable_index]
    norm = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / norm) if norm > 0 else float("nan")


class PairStore:
    """Preference pairs of several pools, with their `Phi`, as one pool. Host-only."""

    def __init__(self) -> None:
        self.phis: list[np.ndarray] = []
        self.prefs: list[Preferences] = []

    def add(self, phi: np.ndarray, prefs: Preferences) -> tuple[np.ndarray, Preferences]:
        """Append a pool `float[M, F]` and its pairs; return the union `(Phi, prefs)`.

        The new pairs' indices are offset by the number of trajectories stored before.
        """
        offset = sum(len(p) for p in self.phis)
        self.phis.append(phi)
        self.prefs.append(dataclasses.replace(prefs, i=prefs.i + offset, j=prefs.j + offset))
        union = Preferences(*(np.concatenate([getattr(p, f) for p in self.prefs])
                              for f in ("i", "j", "w", "discordant")))
        return np.concatenate(self.phis), union


def recover_theta(theta_star: np.ndarray, pools: Sequence[np.ndarray], heldout: np.ndarray,
                  spec: RewardSpec, cfg: AlignmentConfig, pref_cfg: PreferenceConfig, *,
                  seed: int, rule_index: int = 0, accumulate: bool = False
                  ) -> tuple[np.ndarray, list[dict]]:
    """Alignment iterations from `spec.start` against `LinearOracleRanker(theta_star)`.

    Host-only. Iteration t ranks pool t with the oracle and with `Phi @ theta`, builds
    preference pairs (`build_preferences`) and updates theta (`update_theta`), as
    `loop.align_step` does; its host generator is `default_rng([seed, rule_index, t])`.

    Args:
      theta_star: `float[F]` oracle weights.
      pools: per-iteration `float[M, F]` trajectory feature sums.
      heldout: `float[H, F]` feature sums of the held-out trajectories.
      spec, cfg, pref_cfg: the reward spec (start, tunable mask), update and pair settings.
      seed, rule_index: the host generators' seed.
      accumulate: each update fits every pair so far (`PairStore`), not only pool t's.

    Returns:
      `(theta float64[F], rows)`: one row per iteration with `cosine` (`tunable_cosine`) and
      `heldout_agreement` (`pair_agreement` of `heldout @ theta` with the oracle); row 0 is
      theta0 before any update, later rows add the pair counts, the update's errors, whether
      it was accepted and its seconds.
    """
    oracle = LinearOracleRanker(theta_star)
    heldout_ranking = oracle.rank(phi_batch(heldout))
    theta, store = spec.validate(spec.start), PairStore()

    def row(t: int, **extra) -> dict:
        return {"iteration": t, "cosine": tunable_cosine(theta, theta_star, spec),
                "heldout_agreement": pair_agreement(heldout @ theta, heldout_ranking), **extra}

    rows = [row(0)]
    for t, phi in enumerate(pools, start=1):
        t0 = time.perf_counter()
        rng = np.random.default_rng([seed, rule_index, t])
        prefs = build_preferences(phi @ theta, oracle.rank(phi_batch(phi)), rng, pref_cfg)
        phi_used, prefs_used = store.add(phi, prefs) if accumulate else (phi, prefs)
        result = update_theta(theta, phi_used, prefs_used, spec, cfg, rng)
        theta = result.theta
        rows.append(row(t, num_discordant=prefs.num_discordant,
                        num_concordant=prefs.num_concordant, pairs_used=len(prefs_used),
                        error_before=result.error_before, error_after=result.error_after,
                        accepted=result.accepted, seconds=time.perf_counter() - t0))
    return theta, rows
