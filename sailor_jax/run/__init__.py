"""Layer 7, run: the segment runner, the SAILOR iteration's phases and hooks, checkpoints, results.

Host orchestration; may import every layer below it. Only `cli` and the scripts import it.
"""
