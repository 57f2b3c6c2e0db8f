"""mnem (Mnemosyne, version-controlled agent memory) as a provider: type ``mnem``.

``provider`` is the provider itself; ``on_demand`` is a store made on its first write.
"""
