"""Experiments: the synthetic figure, MinAtar's random policy and the
evaluation rule, run from the command line."""
