"""The base layer: the shapes every other layer speaks and the plumbing under them.

Records and their fingerprints, the scope model, errors, paths, files, locks, secrets, the PMM
codec. Nothing here imports another layer of memsync.
"""
