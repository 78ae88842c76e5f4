"""Atari (reference, vectorized, XLA) and MinAtar (numpy, JAX) environments."""
