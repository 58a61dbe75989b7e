"""Layer 4, scale: seed rows over devices and processes (`sharding`), and whether a run fits
in memory (`memory`).

Imports only the foundation modules.
"""
