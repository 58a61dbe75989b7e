"""Preference pairs kept across SAILOR iterations, so the update remembers what it learned.

Host-only NumPy. Each iteration's pairs of one seed are stored as a JSON-ready entry: the
iteration, the `Phi` rows the pairs use (Python floats: a float32 or float64 `Phi` survives
a JSON round trip bit for bit) and the pairs re-indexed into those rows. `merge` adds the
entries of the last `keep_iterations` iterations to this iteration's `(Phi, prefs)`, each
entry's weights times `decay ** age` (age 1 = the previous iteration); the kept pairs are
marked concordant (`discordant=False`): they are old judgements, not this iteration's
disagreement. The run keeps the entries in `run.results.LoopState.kept_pairs`, so every
checkpoint carries them and a resumed run updates on the same pairs as an uninterrupted one.
"""

from __future__ import annotations

import numpy as np

from sailor_jax.types import Preferences


def entry(Phi, prefs: Preferences, iteration: int) -> dict:
    """One iteration's pairs with the `Phi float[M, F]` rows they use, as JSON values."""
    i, j = np.asarray(prefs.i, np.int64), np.asarray(prefs.j, np.int64)
    rows, inverse = np.unique(np.concatenate([i, j]), return_inverse=True)
    phi = np.asarray(Phi, np.float64)[rows]
    return {"iteration": int(iteration), "Phi": phi.tolist(),
            "i": inverse[:len(i)].tolist(), "j": inverse[len(i):].tolist(),
            "w": np.asarray(prefs.w, np.float64).tolist()}


def merge(Phi, prefs: Preferences, kept: list[dict], iteration: int, keep_iterations: int,
          decay: float = 1.0) -> tuple[np.ndarray, Preferences, int]:
    """This iteration's `(Phi, prefs)` plus the kept entries of the last `keep_iterations`.

    Args:
      Phi: `float[M, F]` this iteration's feature sums.
      prefs: this iteration's pairs over them.
      kept: entries (`entry`) of earlier iterations, oldest first.
      iteration: this iteration; entries older than `keep_iterations` are left out.
      keep_iterations: how many earlier iterations count (0 = none).
      decay: weight factor per iteration of age (1 = no decay).

    Returns:
      `(Phi float64[M + K, F], prefs, kept pair count)`: the kept entries' rows appended
      after this iteration's, their pairs after this iteration's pairs.
    """
    phis = [np.asarray(Phi, np.float64)]
    fields = {k: [np.asarray(getattr(prefs, k))] for k in ("i", "j", "w", "discordant")}
    offset, count = len(phis[0]), 0
    for e in live(kept, iteration, keep_iterations):
        phi = np.asarray(e["Phi"], np.float64).reshape(-1, phis[0].shape[1])
        n = len(e["i"])
        phis.append(phi)
        fields["i"].append(np.asarray(e["i"], np.int64) + offset)
        fields["j"].append(np.asarray(e["j"], np.int64) + offset)
        fields["w"].append(np.asarray(e["w"], np.float64) * decay ** (iteration - e["iteration"]))
        fields["discordant"].append(np.zeros(n, bool))
        offset, count = offset + len(phi), count + n
    merged = Preferences(i=np.concatenate(fields["i"]).astype(np.int32),
                         j=np.concatenate(fields["j"]).astype(np.int32),
                         w=np.concatenate([np.asarray(w, np.float64) for w in fields["w"]]),
                         discordant=np.concatenate(fields["discordant"]).astype(bool))
    return np.concatenate(phis), merged, count


def live(kept: list[dict], iteration: int, keep_iterations: int) -> list[dict]:
    """The entries of iterations `iteration - keep_iterations .. iteration - 1`."""
    return [e for e in kept if 0 < iteration - e["iteration"] <= keep_iterations]


def push(kept: list[dict], Phi, prefs: Preferences, iteration: int,
         keep_iterations: int) -> list[dict]:
    """The store for the next iteration: live entries plus this one's (if it has pairs)."""
    out = live(kept, iteration + 1, keep_iterations)
    if keep_iterations > 0 and len(prefs):
        out.append(entry(Phi, prefs, iteration))
    return out
