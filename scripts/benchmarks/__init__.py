"""Benchmarks: scripts that time the parts of the zoo and print the measurements."""
