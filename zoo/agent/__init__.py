"""The quantile agent: its pure functions, its counts, the acting agent."""
