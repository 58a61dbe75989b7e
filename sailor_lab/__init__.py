"""The measurement harness the benchmarks and experiments share; not part of SAILOR itself.

What measures SAILOR rather than runs it: result tables over seeds (`report`), one seed's PPO
with its envs split over devices (`env_sharding`), judge quality on the graded-skill pool
(`judge_eval`, `policy_groups`), the judge curve's arithmetic (`judge_curve`), a judge model of
a published size with random weights (`random_model`), the offline ceiling of a linear reward
and which weights a ranking can move (`offline_fit`, `identifiability`), oracle recovery
(`recovery`), the CMA-ES theta search and the headroom over theta0 (`search_config`,
`theta_search`, `headroom`), a game as an animated SVG (`render`), and the comparison of named
SAILOR configurations from named starting rewards (`starts`, `variants`, `comparison`: the
table of `experiments/compare.py`).

It imports `sailor_jax`; `sailor_jax` never imports it (`tests/test_imports.py`).
"""
