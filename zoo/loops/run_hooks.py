"""What a run reports to: progress lines, TensorBoard scalars, tests' probes."""

from typing import Any, Dict, Sequence

from zoo.loops import phase_accounting


class RunHooks:
  """Told of one seed's run by zoo.loops.driver; every method a no-op here.

  Per iteration: begin_iteration; per phase begin_phase, on_step (it may
  raise to stop the run), end_phase; then end_iteration after the CSV row
  and the checkpoint. end_run is called however the run ends.
  """

  def begin_run(self, start_iteration: int, learner,
                rows: Sequence[Dict[str, Any]]) -> None:
    """The run (re)starts at `start_iteration`.

    `learner` gives frame_t, num_updates and last_loss; `rows`: those run.
    """

  def begin_iteration(self, iteration: int) -> None:
    pass

  def begin_phase(self, iteration: int, phase: str) -> None:
    pass

  def on_step(self, frames: int, status: str = '') -> None:
    """`frames` counted so far in the phase (status: past_budget's, else '')."""

  def end_phase(self, iteration: int, phase: str,
                stats: phase_accounting.PhaseStats) -> None:
    pass

  def end_iteration(self, iteration: int, row: Dict[str, Any]) -> None:
    pass

  def end_run(self) -> None:
    pass
