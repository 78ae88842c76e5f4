"""What a run is: its settings and flags, the agent presets' registry, the suite record."""
