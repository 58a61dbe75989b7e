"""Layer 6, alignment: preference pairs, theta updates (BO, Bradley-Terry MCMC), refinement.

Host-only NumPy/scikit-optimize; imports `judges` and the layers below it, never `run`.
"""
