"""mnem (Mnemosyne, version-controlled agent memory) as a provider: type ``mnem``.

``provider`` is the provider itself, built on ``handle`` (the one open Store, the SDK's errors
as memsync's); ``convert`` maps nodes to records and back; ``listing`` pages full and delta
listings; ``batch`` makes one ``write_many`` one commit; ``expiry`` forgets expired nodes with
tombstone commits; ``on_demand`` is a store made on its first write.
"""
