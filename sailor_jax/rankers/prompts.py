"""Prompt text for the LLM judge (pairwise and listwise). Host-only, pure strings.

The trajectory texts come from `sailor_jax.rankers.text`; `FORMAT_LEGEND` explains their
notation once per prompt. The chat template (if the tokenizer has one) is applied by the
backend; these functions only return the system and user messages and the answer prefix.
"""

from __future__ import annotations

from collections.abc import Sequence

from sailor_jax.rankers.text import FORMAT_LEGEND

SYSTEM_PROMPT = "You are an expert 2048 player and a careful, impartial judge of game play."
"""System message of every prompt."""

PAIRWISE_LABELS = ("A", "B")
"""Names of the first and second trajectory in a pairwise prompt."""

PAIRWISE_ANSWER_PREFIX = "The better trajectory is Trajectory"
"""Text the assistant turn starts with; the next token (" A" or " B") is read as the verdict.

Ending on "Trajectory" puts most of SmolLM2-135M's next-token mass on the labels (about 0.9,
against about 0.2 after "The better trajectory is", where " the"/" trajectory" compete).
"""

STRATEGY_HINTS = (
    "Good long-horizon 2048 strategy keeps the largest tile in a corner, keeps rows and "
    "columns monotonic, keeps cells free, merges tiles steadily and reaches large tiles "
    "without filling the board."
)


def pairwise_user_message(text_a: str, text_b: str) -> str:
    """Return the user message comparing trajectories A and B. Host-only."""
    return (
        "Two games of 2048 played by an agent are shown below.\n"
        f"{STRATEGY_HINTS}\n{FORMAT_LEGEND}\n\n"
        f"Trajectory A:\n{text_a}\n\n"
        f"Trajectory B:\n{text_b}\n\n"
        "Which trajectory shows the better long-horizon 2048 strategy? "
        "Answer with a single letter, A or B."
    )


def listwise_user_message(texts: Sequence[str]) -> str:
    """Return the seed plan's chain-of-thought ranking prompt for `M = len(texts)` games.

    Host-only. Trajectories are numbered from 1; the model is asked to end with a line
    `Final Ranking (most strategic first): [i, j, ...]`, which `parse_ranking` reads.
    """
    m = len(texts)
    blocks = "\n\n".join(f"Trajectory {k + 1}:\n{t}" for k, t in enumerate(texts))
    return (
        f"You are an expert 2048 player. Below are {m} trajectories of an agent playing 2048.\n"
        f"{STRATEGY_HINTS}\n{FORMAT_LEGEND}\n\n{blocks}\n\n"
        "Analyse each trajectory briefly: corner strategy, monotonicity, free cells, merges "
        "and the tiles reached. Then rank all trajectories from most to least strategic. "
        "End your answer with exactly one line of the form\n"
        "Final Ranking (most strategic first): [<best number>, ..., <worst number>]\n"
        f"listing each trajectory number from 1 to {m} exactly once, in your order."
    )
