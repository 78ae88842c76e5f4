"""One tool for campaigns of runs: plan, launch, budget, status, archive."""
