"""The HTTP layer every remote provider speaks through: typed errors, bounded retries, no leaks.

``client`` is the connection (``HttpClient``); ``auth`` keeps the key safe; ``retry`` says
how hard a call tries; ``shapes`` checks what came back; ``provider`` is the base class of
every remote provider (``HttpProvider``).
"""
