"""A team, one scope at a time: which scopes exist, each bound to its providers, run in turn."""
