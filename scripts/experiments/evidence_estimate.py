"""How long a piece of the evidence plan takes, from measured speeds.

Speeds come from the results folder, the same device kind only: first the
plan's own runs (their CSVs' training and evaluation rates, their compile
times), then the benchmarks (bench_jitted_minatar's steps/s per seed at 1, 16,
64, 256 seeds, bench_agent's frames/s per mode), else DEFAULTS. Every
estimate is padded: × MARGIN, plus STARTUP_S for the process's start.

The defaults are deliberately low, so that a command without measurements
starts nothing it may not finish: on a GPU they assume the jitted MinAtar loop
at 1,000 training steps/s per seed (16,000 in total beyond 16 seeds), eval no
faster than training, 120 s of compilation; Atari at 5,000 training and
10,000 evaluation frames/s (0.65 × the 7,604–8,805 frames/s measured for
`--num_envs=64` on an H200). On a CPU: 50 steps/s per seed (200 in total),
300 and 1,500 Atari frames/s.
"""

import dataclasses
import math
import statistics
from typing import Any, Dict, Iterable, List, Optional, Tuple

MARGIN = 1.25
STARTUP_S = 20.0
JUDGE_S = 30.0          # compare_published after an Atari run.
# Two processes sharing one GPU run each at this fraction of what one
# process with their seeds vmapped together would (an assumption until the
# plan's side-by-side runs are measured, which then replace it).
SHARED_EFFICIENCY = 0.8
# A side-by-side setting must beat one-at-a-time by this factor.
SIDE_BY_SIDE_GAIN = 1.1


@dataclasses.dataclass(frozen=True)
class Defaults:
  minatar_per_seed: float
  minatar_total: float
  compile_s: float
  atari_train_fps: float
  atari_eval_fps: float
  atari_compile_s: float


DEFAULTS = {
    'gpu': Defaults(1000.0, 16000.0, 120.0, 5000.0, 10000.0, 60.0),
    'cpu': Defaults(50.0, 200.0, 120.0, 300.0, 1500.0, 60.0),
}


def defaults(platform: str) -> Defaults:
  return DEFAULTS.get(platform, DEFAULTS['cpu'])


@dataclasses.dataclass
class Speeds:
  """Measured speeds of one device kind at one scale (and where from)."""
  platform: str
  bench_rates: Dict[int, float] = dataclasses.field(default_factory=dict)
  bench_warmup_s: Dict[int, float] = dataclasses.field(default_factory=dict)
  # (concurrency, seeds per process) -> [per-seed train steps/s].
  run_rates: Dict[Tuple[int, int], List[float]] = dataclasses.field(
      default_factory=dict)
  eval_ratios: List[float] = dataclasses.field(default_factory=list)
  compile_s: List[float] = dataclasses.field(default_factory=list)
  atari_fps: Dict[str, float] = dataclasses.field(default_factory=dict)
  atari_run_fps: Dict[str, List[float]] = dataclasses.field(
      default_factory=dict)
  atari_eval_fps: List[float] = dataclasses.field(default_factory=list)
  atari_compile_s: List[float] = dataclasses.field(default_factory=list)
  best_mode: Optional[str] = None
  benchmark_seconds: Dict[str, float] = dataclasses.field(
      default_factory=dict)

  # --- MinAtar -------------------------------------------------------------
  def per_seed_rate(self, seeds: int, concurrency: int = 1) -> float:
    """Training steps/s per seed of one of `concurrency` processes."""
    measured = self.run_rates.get((concurrency, seeds))
    if measured:
      return min(measured)
    total_seeds = seeds * concurrency
    rate = self._bench_rate(total_seeds)
    if rate is None:
      d = defaults(self.platform)
      rate = min(d.minatar_per_seed, d.minatar_total / total_seeds)
    return rate * (SHARED_EFFICIENCY if concurrency > 1 else 1.0)

  def _bench_rate(self, seeds: int) -> Optional[float]:
    if not self.bench_rates:
      return None
    points = sorted(self.bench_rates.items())
    if seeds <= points[0][0]:
      return points[0][1]
    if seeds >= points[-1][0]:
      # Beyond the largest count: its total rate, shared.
      n, rate = points[-1]
      return rate * n / seeds
    for (n0, r0), (n1, r1) in zip(points, points[1:]):
      if n0 <= seeds <= n1:
        w = (math.log(seeds) - math.log(n0)) / (math.log(n1) - math.log(n0))
        return math.exp((1 - w) * math.log(r0) + w * math.log(r1))
    return None  # Unreachable.

  def eval_ratio(self) -> float:
    """Evaluation steps/s over training steps/s (1 unless measured)."""
    return min(self.eval_ratios) if self.eval_ratios else 1.0

  def minatar_compile_s(self) -> float:
    if self.compile_s:
      return max(self.compile_s)
    if self.bench_warmup_s:
      return max(self.bench_warmup_s.values())
    return defaults(self.platform).compile_s

  def minatar_seconds(self, seeds: int, iterations: int, train_steps: int,
                      eval_steps: int, concurrency: int = 1) -> float:
    """Estimated wall seconds of one jitted MinAtar run."""
    rate = self.per_seed_rate(seeds, concurrency)
    work = (iterations * train_steps / rate +
            (iterations + 1) * eval_steps / (rate * self.eval_ratio()))
    return STARTUP_S + MARGIN * (self.minatar_compile_s() + work)

  def side_by_side(self, seeds: int, max_processes: int) -> int:
    """How many MinAtar runs to start at once: 1 unless the measurements
    show that more seeds in flight raise the total rate.

    Runs of the plan measured both at 1 and at k processes decide between
    those; otherwise the benchmark alone does (never the two mixed: a run's
    rate and a benchmark's are not measured alike).
    """
    def total(k: int) -> Optional[float]:
      measured_1 = self.run_rates.get((1, seeds))
      measured_k = self.run_rates.get((k, seeds))
      if measured_1 and measured_k:
        return k * min(measured_k) / min(measured_1)
      rate_1, rate_k = self._bench_rate(seeds), self._bench_rate(k * seeds)
      if rate_1 is None or rate_k is None:
        return None
      return k * rate_k * (SHARED_EFFICIENCY if k > 1 else 1.0) / rate_1

    best, best_total = 1, 1.0
    for k in range(2, max_processes + 1):
      value = total(k)
      if value is not None and value > SIDE_BY_SIDE_GAIN * best_total:
        best, best_total = k, value
    return best

  # --- Atari ---------------------------------------------------------------
  def atari_train_fps(self, mode: str) -> float:
    if self.atari_run_fps.get(mode):
      return min(self.atari_run_fps[mode])
    if mode in self.atari_fps:
      return self.atari_fps[mode]
    return defaults(self.platform).atari_train_fps

  def atari_eval(self) -> float:
    if self.atari_eval_fps:
      return min(self.atari_eval_fps)
    return defaults(self.platform).atari_eval_fps

  def atari_seconds(self, mode: str, iterations: int, train_frames: int,
                    eval_frames: int) -> float:
    """Estimated wall seconds of one Atari run and its judging."""
    compile_s = (max(self.atari_compile_s) if self.atari_compile_s else
                 defaults(self.platform).atari_compile_s)
    work = (iterations * train_frames / self.atari_train_fps(mode) +
            (iterations + 1) * eval_frames / self.atari_eval())
    return STARTUP_S + JUDGE_S + MARGIN * (compile_s + work)

  def atari_iterations(self, mode: str, seconds: float, train_frames: int,
                       eval_frames: int, most: int) -> int:
    """The most iterations (<= most) whose run fits in `seconds`; 0: none."""
    n = 0
    while n < most and self.atari_seconds(mode, n + 1, train_frames,
                                          eval_frames) <= seconds:
      n += 1
    return n

  def benchmark_estimate(self, name: str, default: float) -> float:
    if name in self.benchmark_seconds:
      return MARGIN * self.benchmark_seconds[name]
    return default


def speeds(sessions: Iterable[Dict[str, Any]], device_kind: str,
           platform: str, scale: str) -> Speeds:
  """Collect the speeds the sessions measured on this device kind and scale
  (later sessions override the benchmark figures of earlier ones)."""
  out = Speeds(platform)
  for session in sessions:
    if (session.get('machine', {}).get('device_kind') != device_kind or
        session.get('scale') != scale):
      continue
    for bench in session.get('benchmarks', ()):
      if bench.get('status') == 'killed':
        # Stopped before it ended: next time expect at least twice as long.
        out.benchmark_seconds[bench['name']] = 2 * bench['seconds']
      if bench.get('status') != 'ok':
        continue
      out.benchmark_seconds[bench['name']] = bench['seconds']
      figures = bench.get('figures', {})
      if bench['name'] == 'jitted_minatar':
        out.bench_rates = {int(k): v for k, v in
                           figures.get('steps_per_s_per_seed', {}).items()
                           if v and v > 0}
        out.bench_warmup_s = {int(k): v for k, v in
                              figures.get('warmup_s', {}).items()}
      elif bench['name'] == 'agent':
        out.atari_fps = dict(figures.get('frames_per_s', {}))
        out.best_mode = figures.get('best_mode') or out.best_mode
    for piece in session.get('pieces', ()):
      for run in piece.get('runs', ()):
        if run.get('status') != 'complete':
          continue
        if run.get('compile_s'):
          (out.compile_s if run['suite'] == 'minatar' else
           out.atari_compile_s).append(run['compile_s'])
        train, evaluation = run.get('train_rate'), run.get('eval_rate')
        if run['suite'] == 'minatar' and train:
          key = (run.get('concurrency', 1), len(run['seeds']))
          out.run_rates.setdefault(key, []).append(train)
          if evaluation:
            out.eval_ratios.append(evaluation / train)
        elif run['suite'] == 'atari' and train:
          out.atari_run_fps.setdefault(run.get('mode', ''), []).append(train)
          if evaluation:
            out.atari_eval_fps.append(evaluation)
  return out


def median_or_none(values: Iterable[float]) -> Optional[float]:
  values = [v for v in values if v == v]  # Drop NaNs.
  return statistics.median(values) if values else None
