"""What an endpoint judge's transport shares with the run: its errors and its token count.

Host-only, no third-party imports. `judges.endpoint` raises these and fills `TokenUsage`; the
SAILOR loop reads the count per iteration and sets what earlier iterations spent.
"""

from __future__ import annotations

import dataclasses
import threading

from sailor_jax.errors import UserError


class EndpointError(UserError):
    """The endpoint failed after the client's retries, or answered something unreadable."""


class TokenBudgetError(UserError):
    """Judging the next prompts would pass `--sailor.ranker.llm.max-tokens-per-run`."""


@dataclasses.dataclass
class TokenUsage:
    """Prompt and completion tokens the endpoint reported, and the run's budget. Thread-safe.

    `spent_before` is what earlier iterations of the run spent (set by the loop on resume);
    `prompt` and `completion` count from there.
    """

    limit: int | None = None
    spent_before: int = 0
    prompt: int = 0
    completion: int = 0
    _lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)

    @property
    def total(self) -> int:
        return self.prompt + self.completion

    def add(self, prompt: int, completion: int) -> None:
        with self._lock:
            self.prompt, self.completion = self.prompt + prompt, self.completion + completion

    def start(self, spent_before: int) -> None:
        """Count from zero again, `spent_before` tokens already spent by the run."""
        with self._lock:
            self.spent_before, self.prompt, self.completion = spent_before, 0, 0

    def check(self, estimate: int, num_prompts: int) -> None:
        """Raise `TokenBudgetError` if `estimate` more tokens would pass the limit."""
        spent = self.spent_before + self.total
        if self.limit is not None and spent + estimate > self.limit:
            raise TokenBudgetError(
                f"--sailor.ranker.llm.max-tokens-per-run {self.limit}: judging the next "
                f"{num_prompts} prompts (about {estimate:,} tokens) would pass it; the run has "
                f"spent {spent:,}", "raise it and continue with --resume")
