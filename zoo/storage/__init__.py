"""What a run writes: atomic files, the results CSV, run.json, verified checkpoints, the run directory."""
