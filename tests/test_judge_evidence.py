"""The judge-evidence gate: held-out Kendall tests, their Stouffer combination, the gate in
`align_step`, and the per-seed history a resumed run reads back."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from scipy.stats import norm

from sailor_jax.alignment import heldout
from sailor_jax.config import PAPER, AlignmentConfig
from sailor_jax.game.reward import RewardSpec
from sailor_jax.judges.oracles import order_by_scores
from sailor_jax.run.phases import heldout_history
from sailor_jax.run.results import IterationRecord, LoopState, SeedUpdate
from sailor_jax.run.theta_update import align_step
from sailor_jax.types import Ranking

SPEC = RewardSpec()


def _reference_p(r: np.ndarray, key: np.ndarray) -> float:
    """Kendall's S over all pairs and its null variance with ties in `key` only (Kendall
    1970, the tie-corrected variance), normal approximation, one-sided: written out pair by
    pair, independent of scipy's implementation."""
    n = len(r)
    s = sum(np.sign(r[a] - r[b]) * np.sign(key[a] - key[b])
            for a, b in itertools.combinations(range(n), 2))
    _, counts = np.unique(key, return_counts=True)
    var = (n * (n - 1) * (2 * n + 5) - sum(u * (u - 1) * (2 * u + 5) for u in counts)) / 18
    return float(norm.sf(s / np.sqrt(var)))


def _ranking(score: np.ndarray) -> Ranking:
    return Ranking(order=order_by_scores(score), scores=score.astype(np.float32))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_heldout_p_matches_a_pair_by_pair_reference(seed):
    rng = np.random.default_rng(seed)
    phi, theta = rng.normal(size=(8, 8)), rng.normal(size=8)
    score = rng.normal(size=8)
    if seed == 2:  # the judge ties two pairs
        score[1], score[3] = score[0], score[2]
    got = heldout.heldout_p(theta, phi, _ranking(score))
    assert got == pytest.approx(_reference_p(phi @ theta, score), rel=1e-9)
    # Without scores the judge's order alone is the key: no ties.
    order_only = Ranking(order=order_by_scores(rng.normal(size=8)))
    key = -order_only.rank.astype(float)
    assert heldout.heldout_p(theta, phi, order_only) == pytest.approx(
        _reference_p(phi @ theta, key), rel=1e-9)


def test_heldout_p_direction_nothing_to_test_and_bad_input():
    phi = np.eye(8)
    theta = np.arange(8.0)
    agree, disagree = _ranking(np.arange(8.0)), _ranking(-np.arange(8.0))
    assert heldout.heldout_p(theta, phi, agree) < 1e-3  # tau 1 of 8: z 3.46
    assert heldout.heldout_p(theta, phi, disagree) > 1 - 1e-3
    assert np.isnan(heldout.heldout_p(np.zeros(8), phi, agree))  # R_theta ties all
    assert np.isnan(heldout.heldout_p(theta, phi, _ranking(np.zeros(8))))  # the judge does
    assert np.isnan(heldout.heldout_p(theta, phi[:2], _ranking(np.arange(2.0))))  # too few
    with pytest.raises(ValueError, match="rows"):
        heldout.heldout_p(theta, phi[:5], agree)


def test_judge_evidence_is_stouffers_z():
    assert heldout.judge_evidence([]) == 0.0
    assert heldout.judge_evidence([None, float("nan")]) == 0.0
    assert heldout.judge_evidence([norm.sf(3.0)]) == pytest.approx(3.0)
    assert heldout.judge_evidence([norm.sf(1.0)] * 9) == pytest.approx(3.0)
    assert heldout.judge_evidence([0.5, None, 0.5]) == pytest.approx(0.0, abs=1e-12)
    assert np.isfinite(heldout.judge_evidence([0.0, 1.0, 1.0]))  # clipped, not infinite


def test_a_judge_with_no_information_rarely_opens_the_gate():
    """Random orders of 8 held-out windows against a fixed theta, 40 updates a run: the
    per-update p-values are about uniform, and z >= 3 is reached at some update in about 1% of
    runs (Monte Carlo of the null: 1.1%); 300 runs here, bound 4% (the chance of 12 or more
    crossings at 1.1% is below 1e-4)."""
    rng = np.random.default_rng(0)
    phi, theta = rng.normal(size=(8, 8)), rng.normal(size=8)
    runs, updates = 300, 40
    p = np.array([[heldout.heldout_p(theta, phi, _ranking(rng.permutation(8).astype(float)))
                   for _ in range(updates)] for _ in range(runs)])
    assert 0.47 < p.mean() < 0.53 and 0.035 < np.mean(p < 0.05) < 0.065
    opened = [any(heldout.judge_evidence(row[:k]) >= 3.0 for k in range(1, updates + 1))
              for row in p]
    assert np.mean(opened) < 0.04


class _Batch:
    def __init__(self, phi):
        self.Phi, self.lengths = phi, np.full(phi.shape[:2], 10)


def _gate_case(evidence_z: float):
    """8 windows whose judge follows feature 1 (empty cells) throughout, theta0 blind to it:
    the held-out half confirms the fitted step."""
    cfg = dataclasses.replace(PAPER, trajectories=8, alignment=dataclasses.replace(PAPER.alignment,
        method="bt_mcmc", heldout=0.5, mcmc_samples=300, mcmc_burn_in=100, update_workers=1,
        mcmc_trust_region=1.0, evidence_z=evidence_z))
    phi = np.zeros((1, 8, 8))
    phi[0, :, 1] = np.arange(8.0)
    phi[0, :, 0] = np.arange(8.0)[::-1] * 0.01
    theta0 = np.asarray(SPEC.start, np.float32)[None]
    return cfg, phi, theta0, _ranking(phi[0, :, 1])


def test_the_gate_refuses_an_update_until_the_judge_has_shown_evidence():
    cfg, phi, theta0, ranking = _gate_case(0.0)
    free, (u_free,) = align_step(theta0, _Batch(phi), [ranking], SPEC, cfg, iteration=0)
    assert u_free.outcome == "moved" and u_free.heldout_p < 0.05
    assert u_free.evidence_z == 0.0  # recorded with the gate off too
    assert set(u_free.mcmc) == {"rhat", "ess"}  # the sampler's diagnostics, per update
    cfg, *_ = _gate_case(3.0)
    shut, (u_shut,) = align_step(theta0, _Batch(phi), [ranking], SPEC, cfg, iteration=0)
    assert u_shut.outcome == "no evidence" and u_shut.accepted is False
    assert "judge evidence z +0.00 below 3" in u_shut.message
    np.testing.assert_array_equal(shut, theta0)
    assert u_shut.heldout_p == u_free.heldout_p  # the test is recorded for the next update
    strong = [[norm.sf(3.5)]]  # one earlier update's p: z 3.5
    opened, (u_open,) = align_step(theta0, _Batch(phi), [ranking], SPEC, cfg, iteration=0,
                                   evidence=strong)
    np.testing.assert_array_equal(opened, free)  # an open gate changes nothing else
    assert u_open.outcome == "moved" and u_open.evidence_z == pytest.approx(3.5)


def test_heldout_history_reads_every_earlier_update_per_seed_and_survives_a_resume():
    def record(t, ps):
        return IterationRecord(iteration=t, env_steps=0, sps=0.0, seconds={},
                               host_overhead_s=0.0, theta=[[0.0] * 8] * 2,
                               seeds=[SeedUpdate(heldout_p=p) for p in ps],
                               train_score=[None, None])

    state = LoopState.start(np.zeros(8, np.float32), 2)
    state.warmup = [record(-1, [0.1, float("nan")])]
    state.iterations = [record(0, [0.2, 0.3]), record(1, [None, 0.4])]
    back = LoopState.from_json(state.to_json())
    for s in (state, back):
        got = heldout_history(s, 2)
        assert got[0] == [0.1, 0.2, None] and got[1][1:] == [0.3, 0.4]
        assert np.isnan(got[1][0])


@pytest.mark.parametrize("kwargs, match", [
    ({"evidence_z": -1.0, "heldout": 0.5}, "evidence_z must be finite"),
    ({"evidence_z": float("nan"), "heldout": 0.5}, "evidence_z must be finite"),
    ({"evidence_z": 3.0, "heldout": 0.0}, "needs a held-out part"),
])
def test_bad_evidence_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AlignmentConfig(**kwargs)


def test_the_progress_line_names_its_run_and_shows_agreement_only_with_a_judge():
    from sailor_jax.run.hooks import progress_line

    def record(taus):
        return IterationRecord(iteration=0, env_steps=0, sps=1234.0, seconds={},
                               host_overhead_s=0.0, theta=[], train_score=[],
                               seeds=[SeedUpdate(kendall_tau_after=t) for t in taus])

    state = LoopState.start(np.zeros(8, np.float32), 2)
    judged = progress_line(state, record([0.5, 0.25]), "theta0.sailor")
    assert judged.startswith("theta0.sailor  SPS    1,234") and "agreement(tau) +0.38" in judged
    fixed = progress_line(state, record([None, None]), "theta0.fixed")
    assert fixed.startswith("theta0.fixed  SPS") and "agreement" not in fixed and "nan" not in fixed


def test_agent_preferred_counts_the_judges_cross_player_verdicts():
    from sailor_jax.alignment.preferences import agent_preferred
    ranking = Ranking(order=np.array([2, 0, 3, 1]))  # trajectories 2 and 3: the reference's
    assert agent_preferred(ranking, 2) == 0.25  # of (0,2) (0,3) (1,2) (1,3), only 0 > 3
    assert agent_preferred(ranking, 1) == pytest.approx(2 / 3)  # 0 and 2 above 3, 1 below
    assert agent_preferred(ranking, 0) is None and agent_preferred(ranking, 4) is None
    cfg, phi, theta0, judge = _gate_case(0.0)
    cfg = dataclasses.replace(cfg, reference_games=4)
    _, (update,) = align_step(theta0, _Batch(phi), [judge], SPEC, cfg, iteration=0)
    assert update.agent_preferred == agent_preferred(judge, 4) == 0.0  # the judge prefers 4-7
