"""The zoo's shared machinery, in rooms by job (bottom to top).

storage (files, CSV, run.json, checkpoints, the run directory),
environments (the batched contract, Atari, MinAtar), replay (host, device,
bit-packed), agent (pure learning functions, the acting agent),
configuration (settings, flags, the agent registry, the suite record), loops
(the Python and jitted loops and the one runner around them), suites (Atari,
MinAtar). A room imports only the rooms below it; zoo never names an agent.
"""

import logging


class _NoLibtpuNote(logging.Filter):
  """Drop JAX's note that libtpu is absent, logged by every non-TPU run.

  JAX probes for a TPU before it picks a backend and logs the failure at INFO
  (which absl's handler prints). Only the note for an absent libtpu.so is
  dropped: a libtpu that fails otherwise, and JAX's warnings, still show, and
  the probe itself (so the choice of CPU, GPU or TPU) is unchanged.
  """

  def filter(self, record: logging.LogRecord) -> bool:
    message = record.getMessage()
    return not (record.levelno <= logging.INFO and
                message.startswith("Unable to initialize backend 'tpu'") and
                'Failed to open libtpu.so' in message)


logging.getLogger('jax._src.xla_bridge').addFilter(_NoLibtpuNote())
