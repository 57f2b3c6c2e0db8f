"""Cognee as a provider: type ``cognee``, one dataset over Cognee's HTTP API.

``provider`` is the provider itself; ``convert`` maps data items to records and back;
``listing`` reads the dataset page by page.
"""
