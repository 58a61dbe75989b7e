"""Prompt text for the LLM judge (pairwise, pointwise and listwise). Host-only, pure strings.

The trajectory texts come from `sailor_jax.judges.text`; `FORMAT_LEGEND` explains their
notation once per prompt. The chat template (if the tokenizer has one) is applied by the
backend; these functions only return the system and user messages and the answer prefix.
"""

from __future__ import annotations

from collections.abc import Sequence

from sailor_jax.judges.text import FORMAT_LEGEND

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


SUMMARY_PAIRWISE_ANSWER_PREFIX = "The better game is Game"
"""Answer prefix of the summary view's pairwise prompt; the next token (" A"/" B") is read."""


def answer_prefix(view: str) -> str:
    """The pairwise answer prefix of `view` (one of `VIEWS`)."""
    return SUMMARY_PAIRWISE_ANSWER_PREFIX if view == "summary" else PAIRWISE_ANSWER_PREFIX


def pairwise_user_message(text_a: str, text_b: str, view: str = "boards") -> str:
    """Return the user message comparing trajectories A and B shown as `view`. Host-only."""
    if view == "summary":
        return (
            "Two games of 2048 are summarised below, each over the same kind of stretch of "
            f"play.\n{STRATEGY_HINTS}\n\n"
            f"Game A: {text_a}.\nGame B: {text_b}.\n\n"
            "Which game was played better? Answer with a single letter, A or B."
        )
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


POINTWISE_RATINGS = tuple(range(1, 10))
"""The pointwise rating scale, worst to best; each label ("1".."9") is read as one token."""

POINTWISE_ANSWER_PREFIX = "Rating:"
"""Text the assistant turn starts with in pointwise mode; the next token is the rating.

Where the tokenizer merges a space with a digit (GPT-2-style BPE) the labels are " 1".." 9";
where digits are always split off (SmolLM2, Llama 3, Qwen2.5) the prefix takes the space,
"Rating: ", and the labels are "1".."9". `judges.pointwise.rating_labels` picks the form.
"""

POINTWISE_RUBRICS = (
    "Judge the overall long-horizon strategy: board control, steady merges and large tiles.",
    "Judge the corner strategy: does the largest tile stay in a corner, with the next largest "
    "tiles lined up beside it?",
    "Judge the board order: are rows and columns monotonic, with neighbouring tiles of similar "
    "size that can merge?",
    "Judge survival: does the agent keep cells free and avoid filling the board, so the game "
    "can go on?",
)
"""Rubric variants of the pointwise question (`LLMRankerConfig.pointwise_variants` uses the
first K); the ratings of the K variants are averaged to cut the judge's variance."""


def pointwise_user_message(text: str, variant: int = 0, view: str = "boards") -> str:
    """Return the user message asking for a 1-9 rating of one trajectory. Host-only.

    The trajectory comes before the rubric, so the K variants of one trajectory share every
    token up to the rubric (a prefix a KV cache can reuse).

    Raises:
      IndexError: `variant` is not an index of `POINTWISE_RUBRICS`.
    """
    if not 0 <= variant < len(POINTWISE_RUBRICS):
        raise IndexError(f"variant must be in 0..{len(POINTWISE_RUBRICS) - 1}, got {variant}")
    lo, hi = POINTWISE_RATINGS[0], POINTWISE_RATINGS[-1]
    if view == "summary":
        return (
            f"A game of 2048 is summarised below.\n{STRATEGY_HINTS}\n\nGame: {text}.\n\n"
            f"{POINTWISE_RUBRICS[variant]}\n"
            f"Rate how well the game was played from {lo} (very poor) to {hi} (excellent). "
            f"Answer with a single digit from {lo} to {hi}."
        )
    return (
        "A game of 2048 played by an agent is shown below.\n"
        f"{STRATEGY_HINTS}\n{FORMAT_LEGEND}\n\n"
        f"Trajectory:\n{text}\n\n"
        f"{POINTWISE_RUBRICS[variant]}\n"
        f"Rate the trajectory's long-horizon 2048 strategy from {lo} (very poor) to {hi} "
        f"(excellent). Answer with a single digit from {lo} to {hi}."
    )
