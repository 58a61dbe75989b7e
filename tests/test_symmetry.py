"""Tests for `agents.symmetry` and `NetworkConfig(symmetry="canonical")`: the 8
board symmetries against the NumPy reference game, canonical views, exact equivariance."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference.numpy_2048 import legal_mask, move

from sailor_jax.agents.networks import make_network
from sailor_jax.agents.symmetry import ACTION_PERMUTATIONS, CELL_PERMUTATIONS, canonicalize
from sailor_jax.config import NetworkConfig


def _boards(seed: int, n: int, high: int = 18) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, high, size=(n, 16)) * (rng.random((n, 16)) < 0.7)


def test_the_8_views_form_the_dihedral_group():
    assert CELL_PERMUTATIONS.shape == (8, 16) and ACTION_PERMUTATIONS.shape == (8, 4)
    np.testing.assert_array_equal(CELL_PERMUTATIONS[0], np.arange(16))
    assert len({tuple(p) for p in CELL_PERMUTATIONS}) == 8
    for p in CELL_PERMUTATIONS:
        assert sorted(p) == list(range(16))
        assert tuple(p[p]) in {tuple(q) for q in CELL_PERMUTATIONS}  # closed under composition
    grid = np.arange(16).reshape(4, 4)  # the 8 views are numpy's rotations and flips
    expected = {tuple(np.rot90(g, k).ravel()) for g in (grid, grid.T) for k in range(4)}
    assert {tuple(p) for p in CELL_PERMUTATIONS} == expected


def test_a_move_on_a_board_is_the_permuted_move_on_every_view():
    """Turning the board and the move together gives the same game (NumPy reference)."""
    for board in _boards(0, 200, high=5):
        for t in range(8):
            view = board[CELL_PERMUTATIONS[t]]
            np.testing.assert_array_equal(legal_mask(view)[ACTION_PERMUTATIONS[t]],
                                          legal_mask(board))
            for a in range(4):
                after, score = move(board, a)
                view_after, view_score = move(view, ACTION_PERMUTATIONS[t, a])
                np.testing.assert_array_equal(np.asarray(after)[CELL_PERMUTATIONS[t]],
                                              view_after)
                assert score == view_score


def test_canonical_view_is_the_largest_view_and_the_same_for_the_whole_orbit():
    boards = _boards(1, 50).astype(np.int8)  # the dtype rollouts store
    boards[0] = 0  # all 8 views equal
    boards[1] = np.arange(16) % 3  # some views equal
    view, t = map(np.asarray, canonicalize(jnp.asarray(boards)))
    assert view.dtype == boards.dtype and t.dtype == np.int32
    for board, v, k in zip(boards, view, t, strict=True):
        views = [tuple(board[p]) for p in CELL_PERMUTATIONS]
        assert tuple(v) == max(views) and tuple(board[CELL_PERMUTATIONS[k]]) == tuple(v)
        assert views.index(tuple(v)) == k  # first of equals
    for p in CELL_PERMUTATIONS:
        np.testing.assert_array_equal(canonicalize(jnp.asarray(boards[:, p]))[0], view)


@pytest.mark.parametrize("head", ["actor_critic", "q"])
def test_canonical_network_is_exactly_equivariant(head):
    cfg = NetworkConfig(hidden_sizes=(32,), symmetry="canonical")
    init, apply = make_network(cfg, head)
    params = init(jax.random.PRNGKey(0))
    boards = _boards(2, 30, high=12)
    mask = np.random.default_rng(3).random((30, 4)) < 0.7
    args = (mask,) if head == "actor_critic" else ()
    base = apply(params, jnp.asarray(boards), *map(jnp.asarray, args))
    base = base if isinstance(base, tuple) else (base,)
    for t in range(8):
        view_args = tuple(np.empty_like(a) for a in args)
        for a, v in zip(args, view_args, strict=True):
            v[:, ACTION_PERMUTATIONS[t]] = a  # move a legal on the board <=> its move on the view
        out = jax.jit(apply)(params, jnp.asarray(boards[:, CELL_PERMUTATIONS[t]]),
                             *map(jnp.asarray, view_args))
        out = out if isinstance(out, tuple) else (out,)
        np.testing.assert_allclose(np.asarray(out[0])[:, ACTION_PERMUTATIONS[t]], base[0],
                                   rtol=1e-5, atol=1e-5)
        if head == "actor_critic":
            np.testing.assert_allclose(out[1], base[1], rtol=1e-5, atol=1e-5)
    plain = make_network(NetworkConfig(hidden_sizes=(32,)), head)[1]
    view, t = canonicalize(jnp.asarray(boards))  # = the plain network on the canonical view
    plain_out = plain(params, view, *map(jnp.asarray, [np.ones_like(a) for a in args]))
    plain_out = plain_out[0] if head == "actor_critic" else plain_out
    want = np.take_along_axis(np.asarray(plain_out), ACTION_PERMUTATIONS[np.asarray(t)], -1)
    got = np.asarray(base[0])
    legal = mask if head == "actor_critic" else np.ones_like(got, bool)
    np.testing.assert_allclose(got[legal], want[legal], rtol=1e-5, atol=1e-5)


def test_unknown_symmetry_is_a_clear_error():
    with pytest.raises(ValueError, match="symmetry must be 'none' or 'canonical'"):
        NetworkConfig(symmetry="d4")
