"""Offline probe: do move-level pairs (the 4 moves from one board, judged by the expert's
action values) identify the per-move bonus errors that window pairs miss?"""
import sys, numpy as np, jax, jax.numpy as jnp
from sailor_jax.game import env
from sailor_jax.game.features import phi, FEATURE_NAMES
from sailor_jax.game.expert import expert_act
from sailor_jax.judges.expert import expert_values
from sailor_jax.alignment.offline_fit import fit_bradley_terry, agreement
from sailor_jax.types import Preferences
from sailor_jax.config.starts import STARTS

N, T = 64, 300
act = expert_act(depth=1, epsilon=float(sys.argv[1]) if len(sys.argv) > 1 else 0.5)
def rollout(key):
    def body(carry, k):
        st = carry
        k1, k2, k3 = jax.random.split(k, 3)
        board = env.board_exponents(st)
        a = act(k1, board[None], env.legal_action_mask(st)[None])[0][0]
        # all four moves with the same spawn key
        def try_a(a_):
            _, r = env.play(st, a_, k2)
            return phi(r.board, r.next_board, r.score_gain, r.terminated)
        phis = jax.vmap(try_a)(jnp.arange(4))
        nst, _ = env.step(st, a, k3)
        return nst, (board, phis, env.legal_action_mask(st))
    return jax.lax.scan(body, env.reset(key), jax.random.split(key, T))[1]
boards, phis, legal = jax.jit(jax.vmap(rollout))(jax.random.split(jax.random.key(0), N))
boards = np.asarray(boards).reshape(-1, 16); phis = np.asarray(phis).reshape(-1, 4, 8)
legal = np.asarray(legal).reshape(-1, 4)
q = expert_values(boards, 2)
ok = np.isfinite(q).sum(1) >= 2
boards, phis, q = boards[ok], phis[ok], q[ok]
print("boards", len(boards))
rows, I, J = [], [], []
for b in range(len(boards)):
    base = len(rows)
    legal_a = np.flatnonzero(np.isfinite(q[b]))
    for a in legal_a: rows.append(phis[b, a])
    for x in range(len(legal_a)):
        for y in range(len(legal_a)):
            if q[b, legal_a[x]] > q[b, legal_a[y]]:
                I.append(base + x); J.append(base + y)
Phi = np.array(rows); prefs = Preferences(i=np.array(I, np.int32), j=np.array(J, np.int32),
    w=np.ones(len(I), np.float32), discordant=np.zeros(len(I), bool))
fit = fit_bradley_terry(Phi, prefs)
th = fit.theta / np.abs(fit.theta).max()
print("pairs", len(I))
print("fitted", dict(zip(FEATURE_NAMES, np.round(th, 3))))
for name in ("theta0", "hoards_merges", "corner_obsessed", "disorder_bonus", "ones", "timid"):
    print(f"{name:16s} move-pair agreement {agreement(np.array(STARTS[name].theta), Phi, prefs):.3f}")
print(f"{'fitted':16s} move-pair agreement {agreement(fit.theta, Phi, prefs):.3f}")
np.savez_compressed("runs/probe/move_pairs.npz", Phi=Phi, i=prefs.i, j=prefs.j)
