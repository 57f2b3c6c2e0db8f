"""`memsync switch` rewrites one value of the user's config and leaves the rest as written."""

from __future__ import annotations

import re

import pytest

from memsync.base.errors import ConfigError
from memsync.config.edit import set_active

CONFIG = """\
# my memsync setup -- hand written
[sync]
# the active backend; memsync switch edits this line
active = 'mem0'   # was mnem last week
conflict = "newest"

[providers.mem0]
type = "mem0-oss"
scope = { user_id = "alice" }   # inline table
# active = "not this one"

[providers.mnem]
type = "mnem"
path = "~/agents/memory"
"""


def test_switch_changes_only_the_active_value() -> None:
    edited = set_active(CONFIG, "mnem")
    before, after = CONFIG.splitlines(), edited.splitlines()
    assert len(before) == len(after)
    changed = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
    assert changed == [
        ("active = 'mem0'   # was mnem last week", "active = 'mnem'   # was mnem last week")
    ]


def test_switch_keeps_double_quotes_and_quotes_a_name_that_needs_them() -> None:
    assert set_active('[sync]\nactive = "a"\n', "b") == '[sync]\nactive = "b"\n'
    assert set_active("[sync]\nactive = 'a'\n", "it's") == '[sync]\nactive = "it\'s"\n'


def test_switch_finds_active_in_a_dotted_or_reordered_sync_table() -> None:
    text = '[providers.a]\ntype = "mnem"\npath = "x"\n\n[sync]\nconflict = "error"\nactive = "a"\n'
    assert set_active(text, "b").endswith('[sync]\nconflict = "error"\nactive = "b"\n')


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[providers.a]\ntype = "mnem"\n', "no [sync] table"),
        ('[sync]\nconflict = "error"\n', "could not find `active"),
        ("[sync\nactive = 'a'\n", "not valid TOML"),
    ],
)
def test_a_config_that_cannot_be_switched_says_why(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        set_active(text, "b")
