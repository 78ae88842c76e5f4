"""Experiments: sweeps, studies and the synthetic figure, run from the command line."""
