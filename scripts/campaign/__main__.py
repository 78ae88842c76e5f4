r"""Run a campaign: a list of runs, resumable, under an optional time limit.

  python -m scripts.campaign --campaign=atari100k --dry_run
  python -m scripts.campaign --campaign=atari57 --flags='--num_envs=64' \
      --parallel=8
  python -m scripts.campaign --campaign=minatar_study --budget_minutes=230
  python -m scripts.campaign --campaign=atari57 --status
  python -m scripts.campaign --campaign=minatar_study --report=docs/minatar
  python -m scripts.campaign --campaign=my_runs.json --backend=slurm \
      --parallel=32 --slurm_option=--gres=gpu:1 --slurm_option=--time=12:00:00
  python -m scripts.campaign --campaign=atari57 --backend=ray --gpus_per_run=1

Campaigns: scripts.campaign.campaigns (its names, and the JSON format of a
file). Runs live in --root_dir/[group/]{agent}/{game}/seed_{seed}/; a run is
done when its results.csv holds every iteration. Relaunching the same
command skips done and running runs and resumes the others from their
checkpoints; each run is checked again as it starts, so that two invocations
on one --root_dir share the work. With --budget_minutes, every run is stopped
at a safe point at the deadline, its checkpoint kept, and the next invocation
resumes it.
"""

import os
import shlex
import signal
import sys

from absl import flags

from scripts.campaign import archive
from scripts.campaign import budget
from scripts.campaign import campaigns
from scripts.campaign import check
from scripts.campaign import estimate
from scripts.campaign import launch
from scripts.campaign import run_record as run_lib
from scripts.campaign import status
from zoo.configuration import cli
from zoo.environments import minatar_env

FLAGS = flags.FLAGS
BACKENDS = ('local', 'ray', 'slurm')


def define_flags() -> None:
  """Define the flags of this entry point (only when run)."""
  flags.DEFINE_string('campaign', None, f'A campaign: one of '
                      f'{", ".join(campaigns.CAMPAIGNS)}, or a .json file.')
  flags.DEFINE_string('root_dir', 'runs', 'Where the runs live.')
  flags.DEFINE_string('flags', '', "Run flags added to every run, e.g. "
                      "'--num_envs=64' (<agent>.run_<suite> --help).")
  flags.DEFINE_bool('dry_run', False, 'Print the runs to launch, their '
                    'commands and the time estimate; run nothing.')
  flags.DEFINE_bool('status', False, 'Print where each run stands.')
  flags.DEFINE_enum('backend', 'local', list(BACKENDS), 'local: on this '
                    'machine; ray: one Ray task per run; slurm: write an '
                    'array script and print its sbatch command.')
  flags.DEFINE_integer('parallel', 1, 'Runs at once (local, slurm).')
  flags.DEFINE_string('gpus', 'auto', "Local: GPUs to spread the runs over, "
                      "e.g. '0,1'; 'auto': CUDA_VISIBLE_DEVICES, else "
                      "nvidia-smi's; 'none': leave the runs' alone.")
  flags.DEFINE_float('budget_minutes', None, 'Stop every run at a safe point '
                     'this long after the start (a little under the '
                     'allocation); the next invocation resumes them.')
  flags.DEFINE_string('ray_address', 'auto', 'Ray: the cluster.')
  flags.DEFINE_float('cpus_per_run', 1.0, 'Ray: CPUs per run.')
  flags.DEFINE_float('gpus_per_run', 0.0, 'Ray: GPUs per run; below 1, '
                     "each run's JAX takes that share of the GPU's memory.")
  flags.DEFINE_multi_string('slurm_option', [], 'SLURM: an #SBATCH option '
                            "of every task, e.g. '--gres=gpu:1'.")
  flags.DEFINE_integer('run_index', None, 'Run only the campaign\'s run '
                       'with this index (a SLURM array task).')
  flags.DEFINE_bool('retry_failed', True, 'Relaunch failed runs.')
  flags.DEFINE_bool('check_runs', True, "Before launching, check every run's "
                    'flags as the run parses them (--nocheck_runs: agent '
                    'packages outside the registry).')
  flags.DEFINE_float('train_fps', None, 'Estimate: training frames/s per '
                     'seed, instead of the measured rates.')
  flags.DEFINE_float('eval_fps', None, 'Estimate: evaluation frames/s.')
  flags.DEFINE_string('archive', None, 'Pack the runs\' results (no '
                      'checkpoints) into this .tar.gz and stop.')
  flags.DEFINE_string('report', None, 'Write the MinAtar report of the '
                      "campaign's runs (curves, scores with CIs, CR-DQN vs "
                      'QR-DQN-1) into this folder and stop.')
  flags.DEFINE_string('ingest', None, 'Unpack an --archive into --root_dir '
                      'and stop.')


def plan():
  """Return the campaign's runs, --flags added; ValueError naming the fix."""
  if not FLAGS.campaign:
    raise ValueError('--campaign is required: one of '
                     f'{", ".join(campaigns.CAMPAIGNS)}, or a .json file.')
  if FLAGS.parallel < 1:
    raise ValueError(f'--parallel must be >= 1, got {FLAGS.parallel}.')
  extra = tuple(shlex.split(FLAGS['flags'].value))
  runs = [run_lib.Run(**dict(vars(r), flags=r.flags + extra))
          for r in campaigns.expand(campaigns.load(FLAGS.campaign))]
  for r in runs[:1]:
    r.num_iterations()  # A bad --protocol or --num_iterations: error now.
  if FLAGS.run_index is not None:
    if not 0 <= FLAGS.run_index < len(runs):
      raise ValueError(f'--run_index={FLAGS.run_index}: the campaign has '
                       f'{len(runs)} runs (0 to {len(runs) - 1}).')
    runs = [runs[FLAGS.run_index]]
  return runs


def main(unused_argv):
  # A stopped campaign (SIGTERM) stops its runs at a safe point, as Ctrl-C.
  signal.signal(signal.SIGTERM, signal.default_int_handler)
  try:
    runs = plan()
    deadline = budget.Deadline(FLAGS.budget_minutes)
  except ValueError as e:
    sys.exit(f'Error: {e}')
  root = FLAGS.root_dir
  if FLAGS.ingest:
    try:
      print(f'{archive.ingest(FLAGS.ingest, root)} files into {root}.')
    except (OSError, ValueError) as e:
      sys.exit(f'Error: --ingest: {e}')
    return
  if FLAGS.report:
    # Imported here: the report's plots load matplotlib, which no other
    # command needs (half a second at every start).
    from scripts.campaign import report  # pylint: disable=g-import-not-at-top
    try:
      minatar_env.check_installed()
      for path in report.write(runs, root, FLAGS.report):
        print(path)
    except (ValueError, minatar_env.NotInstalledError) as e:
      sys.exit(f'Error: {e}')
    return
  if FLAGS.archive:
    print(f'{archive.pack(runs, root, FLAGS.archive)} files into '
          f'{FLAGS.archive}.')
    return
  if FLAGS.status:
    print(status.table([status.of(r, root) for r in runs]))
    return
  if FLAGS.check_runs:
    try:
      check.check(runs, root)
    except ValueError as e:
      sys.exit(f'Error: {e}')
  todo = status.to_launch(runs, root, FLAGS.retry_failed)
  print(f'{len(runs)} runs: {len(runs) - len(todo)} done or running, '
        f'{len(todo)} to launch.', flush=True)
  if FLAGS.dry_run:
    for r in todo:
      print(shlex.join(r.command(root)))
    print(estimate.summary(runs, todo, root, FLAGS.parallel, FLAGS.train_fps,
                           FLAGS.eval_fps))
    return
  if FLAGS.backend == 'slurm':
    path = launch.slurm_script(FLAGS.campaign, root, len(runs),
                               FLAGS.parallel, FLAGS.slurm_option,
                               sys.argv[1:])
    print(f'Wrote {path}; submit it with:\n  sbatch {path}')
    return
  try:
    if FLAGS.backend == 'ray':
      results = launch.run_ray(todo, root, FLAGS.ray_address,
                               FLAGS.cpus_per_run, FLAGS.gpus_per_run,
                               deadline)
    else:
      results = launch.run_local(todo, root, FLAGS.parallel,
                                 launch.visible_gpus(FLAGS.gpus), deadline)
  except ImportError as e:
    sys.exit(f'Error: {e}')
  except KeyboardInterrupt:
    print(status.table([status.of(r, root) for r in runs]))
    sys.exit(130)
  print(status.table([status.of(r, root) for r in runs]))
  failed = [n for n, code in results.items()
            if code not in (0, None) + budget.CUT]
  if failed:
    print(f'{len(failed)} run(s) failed: {", ".join(failed)}',
          file=sys.stderr)
    sys.exit(1)


if __name__ == '__main__':
  define_flags()
  cli.run(main)
