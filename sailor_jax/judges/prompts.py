"""Prompt text for the LLM judge (pairwise, pointwise and listwise). Host-only, pure strings.

Each trajectory is shown as its one-sentence summary (`sailor_jax.judges.text.summary_text`).
The chat template (if the tokenizer has one) is applied by the backend; these functions only
return the system and user messages and the answer prefix.
"""

from __future__ import annotations

from collections.abc import Sequence

SYSTEM_PROMPT = "You are an expert 2048 player and a careful, impartial judge of game play."
"""System message of every prompt."""

PAIRWISE_LABELS = ("A", "B")
"""Names of the first and second trajectory in a pairwise prompt."""

STRATEGY_HINTS = (
    "Good long-horizon 2048 strategy keeps the largest tile in a corner, keeps rows and "
    "columns monotonic, keeps cells free, merges tiles steadily and reaches large tiles "
    "without filling the board."
)


PAIRWISE_ANSWER_PREFIX = "The better game is Game"
"""Text the assistant turn starts with in pairwise mode; the next token (" A" or " B") is read
as the verdict."""


def pairwise_user_message(text_a: str, text_b: str) -> str:
    """Return the user message comparing games A and B (their summaries). Host-only."""
    return (
        "Two games of 2048 are summarised below, each over the same kind of stretch of "
        f"play.\n{STRATEGY_HINTS}\n\n"
        f"Game A: {text_a}.\nGame B: {text_b}.\n\n"
        "Which game was played better? Answer with a single letter, A or B."
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
        f"{STRATEGY_HINTS}\n\n{blocks}\n\n"
        "Analyse each trajectory briefly: corner strategy, monotonicity, free cells, merges "
        "and the tiles reached. Then rank all trajectories from most to least strategic. "
        "End your answer with exactly one line of the form\n"
        "Final Ranking (most strategic first): [<best number>, ..., <worst number>]\n"
        f"listing each trajectory number from 1 to {m} exactly once, in your order."
    )


POINTWISE_RATINGS = tuple(range(1, 10))
"""The pointwise rating scale, worst to best; each label ("1".."9") is read as one token."""

POINTWISE_ANSWER_PREFIX = "Rating:"
"""Text the assistant turn starts with in pointwise mode; the next token is the rating.

Where the tokenizer merges a space with a digit (GPT-2-style BPE) the labels are " 1".." 9";
where digits are always split off (SmolLM2, Llama 3, Qwen2.5) the prefix takes the space,
"Rating: ", and the labels are "1".."9". `judges.pointwise.rating_labels` picks the form.
"""

POINTWISE_RUBRIC = (
    "Judge the overall long-horizon strategy: board control, steady merges and large tiles.")
"""What the pointwise question asks the model to judge."""


def pointwise_user_message(text: str) -> str:
    """Return the user message asking for a 1-9 rating of one game (its summary). Host-only."""
    lo, hi = POINTWISE_RATINGS[0], POINTWISE_RATINGS[-1]
    return (
        f"A game of 2048 is summarised below.\n{STRATEGY_HINTS}\n\nGame: {text}.\n\n"
        f"{POINTWISE_RUBRIC}\n"
        f"Rate how well the game was played from {lo} (very poor) to {hi} (excellent). "
        f"Answer with a single digit from {lo} to {hi}."
    )
