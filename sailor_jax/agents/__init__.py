"""Layer 3, agents: networks, the policy step, PPO, DQN, rollouts and greedy evaluation.

Pure JAX, jit/vmap-safe; imports `game`, `config` and the foundation modules, never host libraries.
"""
