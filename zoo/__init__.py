"""The zoo's shared machinery, in rooms by job (bottom to top).

storage (files, CSV, run.json, checkpoints, the run directory),
environments (the batched contract, Atari, MinAtar), replay (host, device,
bit-packed), agent (pure learning functions, the acting agent),
configuration (settings, flags, the agent registry, the suite record), loops
(the Python and jitted loops and the one runner around them), suites (Atari,
MinAtar). A room imports only the rooms below it; zoo never names an agent.
"""
