"""Layer 1, game: the 2048 rules (pgx), transition features, R_theta and the expectimax expert.

Pure JAX; imports only the foundation modules (`types`, `errors`, `logging`).
"""
