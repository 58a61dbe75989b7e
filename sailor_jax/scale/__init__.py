"""Layer 4, scale: seed rows over devices and processes (`sharding`), one seed's envs
over devices (`env_sharding`).

Imports `agents`, `game`, `config` and the foundation modules.
"""
