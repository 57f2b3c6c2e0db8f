"""The daemon side of memsync: the scheduler loop, systemd readiness, backups, the user unit."""
