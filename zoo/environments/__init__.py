"""Environment families behind one batched contract: Atari (reference and vectorized), MinAtar (numpy and JAX)."""
