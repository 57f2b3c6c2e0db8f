"""The local status page: overview, cycle history, conflicts, one memory, cutover readiness."""
