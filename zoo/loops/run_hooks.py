"""What a run reports to: progress lines, TensorBoard scalars, tests' probes."""

from typing import Any, Dict, Sequence

from zoo.loops import phase_accounting


class RunHooks:
  """Told of one seed's run by zoo.loops.driver; every method a no-op here.

  The order within an iteration: begin_iteration, then per phase
  begin_phase, on_step as the phase goes (every environment step in the
  Python loop, every compiled chunk in the jitted loop; it may raise to stop
  the run), end_phase; then end_iteration once the CSV row and the
  checkpoint are written. end_run is called however the run ends.
  """

  def begin_run(self, start_iteration: int, learner,
                rows: Sequence[Dict[str, Any]]) -> None:
    """The run (re)starts at `start_iteration`.

    `learner` gives the seed's frame_t, num_updates and last_loss (read
    live); `rows` are the CSV rows already run.
    """

  def begin_iteration(self, iteration: int) -> None:
    pass

  def begin_phase(self, iteration: int, phase: str) -> None:
    pass

  def on_step(self, frames: int, status: str = '') -> None:
    """`frames` counted so far in the phase; keep it cheap.

    `status`: what the phase is doing past its budget, where it goes on
    (zoo.loops.phase_accounting.past_budget), else ''.
    """

  def end_phase(self, iteration: int, phase: str,
                stats: phase_accounting.PhaseStats) -> None:
    pass

  def end_iteration(self, iteration: int, row: Dict[str, Any]) -> None:
    pass

  def end_run(self) -> None:
    pass
