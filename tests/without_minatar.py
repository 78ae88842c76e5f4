"""A subprocess environment where `import minatar` fails, as without the extra."""

import os


def environment(tmp_path, root: str) -> dict:
  """Return os.environ with a PYTHONPATH whose `minatar` cannot be imported."""
  blocker = tmp_path / 'without_minatar'
  blocker.mkdir(exist_ok=True)
  (blocker / 'minatar.py').write_text(
      "raise ImportError(\"No module named 'minatar'\")\n")
  return dict(os.environ, PYTHONPATH=os.pathsep.join([str(blocker), root]))


def assert_refused(result) -> None:
  """Assert a one-line refusal that names the install command, no traceback."""
  assert result.returncode == 1, result.stderr[-2000:]
  assert 'Traceback' not in result.stderr, result.stderr[-2000:]
  last = result.stderr.strip().splitlines()[-1]
  assert last.startswith('Error: MinAtar is not installed'), last
  assert last.endswith("pip install -e '.[minatar]'"), last
