"""Judge cost: prompts, prompt tokens, seconds and quality per LLM mode, on one reproducible pool.

    python benchmarks/gpu/judge_cost.py --json                             # embedded SmolLM2
    python benchmarks/gpu/judge_cost.py --json --modes pointwise --groups 2
    python benchmarks/gpu/judge_cost.py --json --model random:qwen2.5-1.5b --modes pointwise \\
        --groups 1                                                        # cost of a 1.5B model

Modes (`--modes`): `pairwise` (all M (M - 1) / 2 pairs, both orders), `pointwise` (one 1-9
rating prompt per trajectory), `listwise` (one generated ranking per group); shared prompt
prefixes run once in every mode (`prefix_cache`). Every mode judges the same groups of
`--m` trajectories drawn from the same pool of games of known skill (`judge_eval.build_pool`,
as in `judge_quality.py`: the epsilon-greedy expectimax expert) with one shared loaded model;
a short warm-up forward pass runs before the first timed mode.

`--model`: None = the embedded SmolLM2-135M-Instruct; a local folder or HF id; or
`random:qwen2.5-1.5b`, a `transformers.Qwen2Config` with Qwen2.5-1.5B's published sizes and
random weights built in code (no hub access), paired with the embedded SmolLM2 tokenizer and
passed to the judge as an `LLMBackend` (not saved to disk): its cost is that of the real model
for the same token counts, its judgements are noise.

Prints per mode a summary line and, with `--json`, one JSON line: `mode`, `prompts_per_group`,
`prompt_tokens_per_group` (summed prompt tokens of a group, mean over groups), `seconds_per_group`
(judge wall time), `model_seconds_per_prompt`, `label_mass` (mean; null for listwise),
`parse_rate` (listwise; else null), `generated_tokens_per_group` (listwise), the judge-quality
metrics of `judge_eval.judge_metrics` (`skill_order_accuracy`, `agreement_expert`,
`kendall_tau`, `failed_groups`), the settings, `model`, and the machine header. A mode whose
judge cannot be built (e.g. a config field this version lacks) prints a line with `error`.
Measured lines: `benchmarks/results/judge_cost/` (its README says what they hold). The GPU
check's judge part (`gpu_parts.py`, beside this script) counts its judge's cost with
`cost_record`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import numpy as np
import tyro

from sailor_jax.cli import parse_args
from sailor_jax.config import LLMRankerConfig
from sailor_jax.errors import UserError, report_user_errors
from sailor_jax.judges import ExpertRanker, LLMRanker, hf_backend
from sailor_jax.judges.factory import EMBEDDED_MODEL
from sailor_jax.judges.model_source import check_model_source
from sailor_lab import judge_eval, report
from sailor_lab.random_model import qwen_config

RANDOM_QWEN = "random:qwen2.5-1.5b"
MODES: dict[str, dict[str, Any]] = {
    "pairwise": {"mode": "pairwise"},
    "pointwise": {"mode": "pointwise"},
    "listwise": {"mode": "listwise"},
}
"""Benchmark mode -> `LLMRankerConfig` fields."""
PROMPT_EVENTS = {"pairwise": "pairwise_prompt", "pointwise": "pointwise_prompt",
                 "listwise": "listwise"}
ModeName = Literal["pairwise", "pointwise", "listwise"]


PoolFlags = Annotated[judge_eval.PoolArgs, tyro.conf.OmitArgPrefixes]
"""Pool settings as flags without a prefix (`--epsilons`, `--m`, `--groups`, ...)."""


@dataclasses.dataclass(frozen=True)
class Args:
    """Judge-cost benchmark."""

    modes: tuple[ModeName, ...] = tuple(MODES)  # type: ignore[assignment]
    """LLM modes to measure, in this order."""
    model: str | None = None
    """None = embedded SmolLM2; a local folder / HF id; or random:qwen2.5-1.5b."""
    pool: PoolFlags = judge_eval.PoolArgs(groups=2)
    """The graded-skill pool and group draw (`--epsilons`, `--m`, `--groups`, ...)."""
    batch_size: int = 8
    """Prompts per forward pass / generate call."""
    max_prompt_tokens: int | None = None
    """Prompt token budget (None: the judge's default, min(2048, context))."""
    max_new_tokens: int = 384
    """Listwise: most generated tokens per answer."""
    device: str = "auto"
    """Torch device of the model."""
    dtype: str = "auto"
    """Torch dtype of the model (auto: float32 on CPU)."""
    expert_depth: int = 2
    """Depth of the reference expert judge (`agreement_expert`)."""
    json: bool = False
    """Print one JSON line per mode on stdout (the summary lines go to stderr)."""


def load_backend(args: Args) -> tuple[hf_backend.LLMBackend, str]:
    """The shared model of every mode and its name (see the module docstring). Host-only."""
    if args.model != RANDOM_QWEN:
        check_model_source(args.model, None, "--model")
        backend = hf_backend.load_model(args.model, None, args.dtype, args.device)
        return backend, args.model or EMBEDDED_MODEL
    import torch
    import transformers

    embedded = hf_backend.load_model(None, None, args.dtype, args.device)
    torch.manual_seed(args.pool.seed)
    model = transformers.Qwen2ForCausalLM(qwen_config("qwen2.5-1.5b", embedded.tokenizer))
    model = model.to(device=embedded.device, dtype=embedded.dtype).eval()
    name = "Qwen2.5-1.5B config, random weights (SmolLM2 tokenizer)"
    return dataclasses.replace(embedded, model=model), name


def mode_config(args: Args, mode: str) -> LLMRankerConfig:
    """The judge config of a benchmark mode.

    Raises:
      TypeError: the mode names a field `LLMRankerConfig` does not have.
      ValueError: invalid settings.
    """
    return LLMRankerConfig(model=args.model, batch_size=args.batch_size,
                           max_prompt_tokens=args.max_prompt_tokens,
                           max_new_tokens=args.max_new_tokens,
                           device=args.device, dtype=args.dtype, **MODES[mode])


def cost_record(judge: LLMRanker, groups: int, seconds: float) -> dict:
    """Prompts, tokens, seconds, label mass and parse rate of a judge's records. Host-only."""
    prompt_records = [r for r in judge.records
                      if r.get("event") == PROMPT_EVENTS[judge.config.mode]]
    out = {"prompts_per_group": len(prompt_records) / groups,
           "prompt_tokens_per_group": sum(r["prompt_tokens"] for r in prompt_records) / groups,
           "seconds_per_group": seconds / groups,
           "model_seconds_per_prompt": (float(np.mean([r["seconds"] for r in prompt_records]))
                                        if prompt_records else None),
           "label_mass": None, "parse_rate": None}
    if judge.config.mode == "listwise":
        out["parse_rate"] = (float(np.mean([r["parsed"] for r in prompt_records]))
                             if prompt_records else None)
        out["generated_tokens_per_group"] = sum(
            judge.backend.count_tokens(r["output"]) for r in prompt_records) / groups
    elif prompt_records:
        out["label_mass"] = float(np.mean([r["label_mass"] for r in prompt_records]))
    return out


def measure(args: Args, mode: str, backend: hf_backend.LLMBackend, groups: list,
            epsilons: list, references: dict) -> dict:
    """Judge every group in one mode; the mode's record (or an `error` record). Host-only."""
    try:
        cfg = mode_config(args, mode)
        judge = LLMRanker(cfg, backend=backend, keep_records=None)
    except (TypeError, ValueError) as err:
        return {"mode": mode, "error": f"{type(err).__name__}: {err}"}
    t0 = time.perf_counter()
    rankings = judge.rank_groups(groups)
    seconds = time.perf_counter() - t0
    quality = judge_eval.judge_metrics(rankings, epsilons, references)
    quality.pop("kendall_tau_per_group")
    return {"mode": mode, **cost_record(judge, len(groups), seconds), **quality,
            "llm_mode": cfg.mode, "max_prompt_tokens": judge.max_prompt_tokens}


def run(args: Args) -> Iterator[dict]:
    """Build the pool and the model once, then measure each mode; yields one record per mode.

    Raises:
      ValueError: an unknown mode or `groups` < 1 (before anything is built).
    """
    unknown = [m for m in args.modes if m not in MODES]
    if unknown or args.pool.groups < 1:
        raise UserError(f"modes must be among {list(MODES)} and groups >= 1, got "
                        f"{list(args.modes)}, groups={args.pool.groups}")
    pool, index = args.pool.draw()
    groups = judge_eval.group_batches(pool, index)
    references = {"expert": ExpertRanker(depth=args.expert_depth).rank_groups(groups)}
    import torch
    import transformers

    t0 = time.perf_counter()
    backend, model_name = load_backend(args)
    load_seconds = time.perf_counter() - t0
    backend.next_token_logprobs(["warm-up"], [0], 1)
    common = {"model": model_name, **args.pool.record(), "batch_size": args.batch_size,
              "load_seconds": load_seconds,
              "torch_dtype": str(backend.dtype), "torch_device": backend.device,
              "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
              "transformers": transformers.__version__, **report.machine(),
              "command": "python " + " ".join(sys.argv)}
    epsilons = [pool.epsilon[i] for i in index]
    for mode in args.modes:
        yield measure(args, mode, backend, groups, epsilons, references) | common


def _strict(value: Any) -> Any:
    """NaN/inf floats -> None, recursively, so the JSON line is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strict(v) for v in value]
    return value


def _summary(record: dict) -> str:
    if "error" in record:
        return f"{record['mode']}: error: {record['error']}"
    fmt = lambda x: "-" if x is None else f"{x:.3f}"
    return (f"{record['mode']}: {record['prompts_per_group']:.0f} prompts/group, "
            f"{record['prompt_tokens_per_group']:.0f} prompt tokens/group, "
            f"{record['seconds_per_group']:.1f} s/group, label mass "
            f"{fmt(record['label_mass'])}, skill-order accuracy "
            f"{fmt(record['skill_order_accuracy'])}")


def main(args: Args) -> list[dict]:
    """Run and print a summary line per mode (and its JSON line with --json). Host-only."""
    records = []
    for record in run(args):
        records.append(_strict(record))
        print(_summary(records[-1]), file=sys.stderr if args.json else sys.stdout, flush=True)
        if args.json:
            print(json.dumps(records[-1], allow_nan=False), flush=True)
    return records


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse_args(Args, argv)))
