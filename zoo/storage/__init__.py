"""What a run writes: its files, results CSV, run.json, checkpoints, lock."""
