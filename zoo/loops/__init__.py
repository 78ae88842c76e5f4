"""The loops and the one runner around them: the Python and jitted loops, resume, interrupts, progress."""
