"""The sync engine: mirror providers into staging, plan per memory, replay through an outbox."""
