"""SAILOR's own setting for judging: groups of `M` whole games, each group of one policy.

Host side (the games are played by compiled JAX code). `play_policy_groups` plays groups the way
SAILOR samples them (epsilon-greedy experts, a fresh or briefly trained PPO agent);
`outcome_correlations` says how much a judge's verdict follows game length and final score.
The graded-skill pool, where players differ, is `judge_eval`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import numpy as np
import scipy.stats

from sailor_jax.agents.networks import make_network
from sailor_jax.agents.ppo import make_train
from sailor_jax.agents.rollout import make_act_collect, make_collect
from sailor_jax.config import SMALL_NETWORK, PPOConfig
from sailor_jax.errors import UserError
from sailor_jax.game.expert import expert_act
from sailor_jax.game.reward import THETA0
from sailor_jax.types import Ranking, TrajectoryBatch
from sailor_lab.starts import STARTS

DEFAULT_EPSILONS = (0.0, 0.1, 0.3, 0.6, 1.0)


@dataclasses.dataclass(frozen=True)
class PolicyGroups:
    """Groups of `M` games, each group played by one policy, as SAILOR samples them.

    `batch` holds all `G * M` games (host arrays); `groups[g]` indexes group g's games and
    `policy[g]` names its policy (e.g. "eps0.3", "ppo_init", "ppo_300k").
    """

    batch: TrajectoryBatch
    groups: list[np.ndarray]
    policy: list[str]

    def group_batches(self) -> list[TrajectoryBatch]:
        """The `TrajectoryBatch` of each group (host arrays)."""
        return [jax.tree.map(lambda x, idx=idx: np.asarray(x)[idx], self.batch)
                for idx in self.groups]


def parse_policy(policy: str, depth: int = 2) -> tuple[str, dict]:
    """What a policy name names: `("expert", {"epsilon", "depth"})` for `eps<e>[@<depth>]`
    (`depth` when the name gives none), `("init", {})` for `ppo_init`, `("ppo", {"steps",
    "start"})` for `ppo_<n>[:<start>]` (start: a name of `sailor_lab.starts.STARTS`, theta0
    when none). Host-only.

    Raises:
      UserError: an unknown or malformed name, epsilon outside [0, 1], depth < 1, an unknown
        start.
    """
    if policy.startswith("eps"):
        eps, _, given = policy[3:].partition("@")
        try:
            epsilon, depth = float(eps), int(given or depth)
        except ValueError:
            raise UserError(f"bad policy name {policy!r}", "use eps<epsilon>[@<depth>], e.g. "
                            "eps0.3 or eps0.1@1") from None
        if not 0 <= epsilon <= 1 or depth < 1:
            raise UserError(f"policy {policy!r}: need 0 <= epsilon <= 1 and depth >= 1")
        return "expert", {"epsilon": epsilon, "depth": depth}
    if policy == "ppo_init":
        return "init", {}
    if not policy.startswith("ppo_"):
        raise UserError(f"unknown policy {policy!r}", "use eps<epsilon>[@<depth>], ppo_init or "
                        "ppo_<steps>[:<start>] (e.g. ppo_300k, ppo_1m:ones)")
    steps, _, start = policy[4:].partition(":")
    start = start or "theta0"
    if start not in STARTS:
        raise UserError(f"policy {policy!r}: unknown start {start!r}",
                        f"use one of {', '.join(STARTS)}")
    return "ppo", {"steps": _steps(steps), "start": start}


def policy_collect(policy: str, num: int, max_len: int, depth: int = 2, seed: int = 0):
    """A compiled `collect(key) -> TrajectoryBatch` of `num` games of a named policy.

    Host-only factory. Names (`parse_policy`): `eps<e>` (the depth-`depth` expert, random legal
    move with probability e, e.g. `eps0.3`; `eps<e>@<d>` at depth d), `ppo_init` (a freshly
    initialised PPO actor-critic, default network, near-uniform over legal moves), `ppo_<n>`
    with `n` like `300k` (the default PPO recipe trained on theta0 for about `n` env steps from
    seed `seed`, 256 envs; see `train_ppo_params`), `ppo_<n>:<start>` (trained on that start).

    Raises:
      UserError: as `parse_policy`.
    """
    kind, spec = parse_policy(policy, depth)
    if kind == "expert":
        return make_act_collect(expert_act(spec["depth"], spec["epsilon"]), num, max_len)
    cfg = PPOConfig(network=SMALL_NETWORK, num_envs=256)
    if kind == "init":
        params = make_network(cfg.network)[0](jax.random.fold_in(jax.random.key(seed), 1))
    else:
        params = train_ppo_params(cfg, spec["steps"], seed, theta=STARTS[spec["start"]].theta)
    collect = make_collect(cfg.network, num, max_len)
    return lambda key: collect(params, key)


def _steps(text: str) -> int:
    """`"300k"` -> 300000, `"2m"` -> 2000000, `"5000"` -> 5000."""
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:].lower(), 1)
    try:
        return int(float(text[:-1] if scale > 1 else text) * scale)
    except ValueError:
        raise UserError(f"bad PPO step count {text!r}", "use e.g. ppo_300k or ppo_1m") from None


def train_ppo_params(cfg: PPOConfig, steps: int, seed: int = 0,
                     theta: Sequence[float] | None = None):
    """Params of PPO (`cfg`) trained on `theta` (None: theta0) for >= `steps` env steps.

    Host-only (runs compiled segments of `cfg.updates_per_segment` updates).
    """
    segments = -(-steps // cfg.steps_per_segment)
    init, segment = make_train(cfg.over_run(segments * cfg.updates_per_segment))
    state = init(jax.random.key(seed))
    theta = jax.numpy.asarray(THETA0 if theta is None else theta,
                              jax.numpy.float32)
    for _ in range(segments):
        state, _ = segment(state, theta)
    return state.params


def play_policy_groups(policies: Sequence[str], m: int = 8, groups_per_policy: int = 8,
                       max_len: int = 1000, depth: int = 2, seed: int = 0) -> PolicyGroups:
    """Play `groups_per_policy` groups of `m` games for each named policy (`policy_collect`).

    Host-only; deterministic in `seed` (policy k plays with `fold_in(key(seed + 1), k)`).

    Raises:
      UserError: unknown policy, no policies, or non-positive counts.
    """
    if not policies or m < 2 or groups_per_policy < 1 or max_len < 1:
        raise UserError(f"need policies, m >= 2, groups >= 1, max_len >= 1, got "
                        f"{list(policies)}, {m}, {groups_per_policy}, {max_len}")
    parts, groups, names, start = [], [], [], 0
    for k, name in enumerate(policies):
        collect = policy_collect(name, m * groups_per_policy, max_len, depth, seed)
        parts.append(jax.device_get(collect(jax.random.fold_in(jax.random.key(seed + 1), k))))
        for _ in range(groups_per_policy):
            groups.append(np.arange(start, start + m))
            names.append(name)
            start += m
    batch = jax.tree.map(lambda *xs: np.concatenate(xs), *parts)
    return PolicyGroups(batch=batch, groups=groups, policy=names)


def outcome_correlations(rankings: Sequence[Ranking | None],
                         groups: Sequence[TrajectoryBatch]) -> dict:
    """Mean over groups of Kendall's tau-b between a judge's verdict and each game's
    length and final score (positive = the judge prefers longer / higher-scoring games).

    Host-only. Groups without a ranking, or where a side is constant, are skipped.
    """
    out = {}
    for key in ("lengths", "score"):
        taus = []
        for ranking, batch in zip(rankings, groups, strict=True):
            values = np.asarray(getattr(batch, key), np.float64)
            if ranking is None or np.ptp(values) == 0:
                continue
            taus.append(scipy.stats.kendalltau(-ranking.rank, values).statistic)
        taus = [t for t in taus if np.isfinite(t)]
        out["tau_length" if key == "lengths" else "tau_score"] = \
            float(np.mean(taus)) if taus else float("nan")
    return out
