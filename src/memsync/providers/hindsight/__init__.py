"""Hindsight as a provider: type ``hindsight``, one memory bank (or every bank) over HTTP.

``provider`` is the provider itself; ``convert`` maps documents to records and back;
``listing`` reads a bank in full or since a cursor; ``probe`` says whether one bank changed.
"""
