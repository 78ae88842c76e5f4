"""What a run is: settings and flags, the agent presets, the suite record."""
