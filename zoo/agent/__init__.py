"""The quantile agent: its pure learning functions and the agent that acts, stores and learns."""
