"""The suites a run can use: Atari and MinAtar."""
