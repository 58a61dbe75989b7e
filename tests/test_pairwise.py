"""judges/pairwise.py: label probabilities, debiased Bradley-Terry rankings and log records."""

from __future__ import annotations

import numpy as np
import pytest

from sailor_jax.judges import pairwise


def test_label_probabilities_normalise_the_two_labels():
    logp = np.log(np.array([[0.3, 0.1], [0.02, 0.06]]))
    p_first, mass = pairwise.label_probabilities(logp)
    assert p_first == pytest.approx([0.75, 0.25])
    assert mass == pytest.approx([0.4, 0.08])


def test_group_rankings_debias_both_orders_and_log_each_group():
    # Group 0: 3 trajectories, pairs (0, 1) and (2, 1); the model prefers 0 over 1 and 2 over
    # 1 in both presentation orders. Group 1: one trajectory, nothing to judge. Group 2: two
    # trajectories whose verdicts are not numbers (the judge failed on the group).
    pairs = [np.array([[0, 1], [2, 1]]), np.zeros((0, 2), np.int64), np.array([[0, 1]])]
    p_first = np.array([0.9, 0.2, 0.8, 0.3, np.nan, np.nan])  # (0 first, 1 first, 2 first, ...)
    mass = np.array([0.5, 0.7, 0.9, 0.9, 0.0, 0.0])
    rankings, records = pairwise.group_rankings([3, 1, 2], pairs, p_first, mass, l2=1e-3)
    assert [r["group"] for r in records] == [0, 1, 2]
    # P(a > b) = 0.5 * (p_first(a first) + 1 - p_first(b first))
    assert records[0]["prob"] == pytest.approx([0.5 * (0.9 + 1 - 0.2), 0.5 * (0.8 + 1 - 0.3)])
    assert records[0]["label_mass_mean"] == pytest.approx(0.75)
    assert rankings[0].order[-1] == 1  # the trajectory that lost both pairs ranks last
    assert records[0]["order"] == rankings[0].order.tolist()
    assert rankings[1].order.tolist() == [0] and records[1]["label_mass_mean"] is None
    assert rankings[2] is None and records[2]["order"] is None


def test_prompt_records_one_per_prompt():
    logp = np.log(np.array([[0.3, 0.1], [0.1, 0.3]]))
    p_first, mass = pairwise.label_probabilities(logp)
    records = pairwise.prompt_records([(0, 0, 1), (0, 1, 0)], ["p0", "p1"], [5, 6], logp,
                                      p_first, mass, np.array([0.1, 0.2]))
    assert [(r["first"], r["second"], r["prompt"], r["prompt_tokens"]) for r in records] == \
        [(0, 1, "p0", 5), (1, 0, "p1", 6)]
    assert [r["p_first"] for r in records] == pytest.approx([0.75, 0.25])
    assert records[1]["logp_B"] == pytest.approx(np.log(0.3))
