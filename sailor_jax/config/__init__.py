"""All run configuration in one place: frozen dataclasses, validated on construction.

`agent` (device side: NetworkConfig, PPOConfig, EvalConfig), `judge` (host side:
RankerConfig, PreferenceConfig, AlignmentConfig), `llm` (LLMRankerConfig, RefineConfig) and `run`
(SailorConfig, whose defaults are the recommended SAILOR; PAPER, the paper's update;
TrainConfig). Import from here: `from sailor_jax.config import SailorConfig`.
"""

from sailor_jax.config.agent import SMALL_NETWORK, EvalConfig, NetworkConfig, PPOConfig
from sailor_jax.config.judge import AlignmentConfig, PreferenceConfig, RankerConfig
from sailor_jax.config.llm import LLMRankerConfig, RefineConfig
from sailor_jax.config.run import PAPER, SailorConfig, TrainConfig

__all__ = ["PAPER", "AlignmentConfig", "EvalConfig", "LLMRankerConfig",
           "NetworkConfig", "PPOConfig", "PreferenceConfig", "RankerConfig", "RefineConfig",
           "SMALL_NETWORK", "SailorConfig", "TrainConfig"]
