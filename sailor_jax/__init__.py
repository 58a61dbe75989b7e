"""sailor_jax: SAILOR reward self-alignment with a compiled PPO pipeline on 2048 (pgx)."""

__version__ = "0.1.0"
