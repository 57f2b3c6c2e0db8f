"""The daemon's live side: watched files and probed stores hint which scopes changed."""
