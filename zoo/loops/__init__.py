"""The loops, their one driver and the runner around them."""
