"""Warm-up: theta updates before the first segment trains (host orchestration).

From a gross start SAILOR's reward ends where an agent trained on it from scratch scores as
theta0, but the SAILOR agent learned on the way, on a reward still partly wrong, and ends
lower (`benchmarks/results/warmup_destination/`). A warm-up moves the reward before the agent learns
anything: each of `SailorConfig.warmup_updates` rounds samples a group per seed from the
untrained agent and the reference player, has it judged and updates theta exactly as an
iteration does (the held-out test and the survival guard included), with no PPO update.
Christiano et al. (2017), "Deep reinforcement learning from human preferences", likewise
fitted their reward predictor on clips of a random policy before RL began.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sailor_jax.run import phases, runner
from sailor_jax.run.results import LoopState

__all__ = ["WARMUP_KEY", "warm_up"]

WARMUP_KEY = 2**20
"""Warm-up round k samples and judges with the keys of iteration `WARMUP_KEY + k`, apart from
every training iteration's (`phases.collect_batch`, `phases.judge`)."""


def warm_up(ctx: phases.Context, state: LoopState, runner_state: Any,
            note: Callable[[str], None] = lambda text: None) -> None:
    """Run the `cfg.warmup_updates` warm-up rounds on the agent in `runner_state`; after
    each, `note("warm-up k/K updates, agreement(tau) T")` (the progress bar's text).

    Round k is recorded, and its judge's log records tagged, as iteration `k - K` (below
    every iteration's, so a resume keeps them) with env_steps 0 and no train score
    (`phases.commit`): its thetas (`float32[S, F]` as lists) go to `state.theta_history`, its
    record to `state.warmup`, its collect/rank/update seconds to `state.timings`. Needs a judge
    (`ctx.ranker`); trains nothing. Writes no checkpoint: a run killed inside the warm-up runs
    it again from the start.
    """
    cfg, s = ctx.cfg, ctx.cfg.num_seeds
    for k in range(cfg.warmup_updates):
        t = WARMUP_KEY + k
        batch, collect_s = phases.collect_batch(ctx, runner_state, t)
        judged = phases.judge(ctx, state, batch, [None] * s, t, k - cfg.warmup_updates)
        thetas = phases.settle(state, judged)
        seconds = {"train": 0.0, "collect": collect_s, **judged.seconds}
        state.warmup.append(phases.commit(
            ctx, state, k - cfg.warmup_updates, [None] * s, seconds, batch, thetas,
            judged.updates, judged.tokens, env_steps=0))
        tau = runner.nanmean(u.kendall_tau_after for u in judged.updates)
        note(f"warm-up {k + 1}/{cfg.warmup_updates} updates"
             + (f", agreement(tau) {tau:+.2f}" if tau == tau else ""))
