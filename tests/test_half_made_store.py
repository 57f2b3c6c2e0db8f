"""A mnem store whose making was cut short (``providers/mnem/making.py``).

A process SIGKILLed inside ``mnem.init`` leaves a ``.mnem`` that mnem cannot open ("invalid
data", or a missing file). The store is made here for real: a process runs memsync's
``init_store`` and is killed at a random moment inside it, again until one kill leaves such a
store. A sync then removes it and makes it again, with every memory; a store mnem cannot open
that memsync did not mark is someone else's, and stays as it is.
"""

from __future__ import annotations

import gc
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

from memsync.providers.mnem.making import MARK
from tests.conftest import run_memsync, write_config
from tests.mem0_fixtures import insert_behind_memsync, mem0_payload
from tests.mnem_sdk import real_sdk
from tests.test_e2e_mem0 import App, mem0_table

TEXTS = ["Prefers green tea", "Lives in Lisbon", "Allergic to peanuts"]
MAKER = (
    "import sys; from pathlib import Path; import mnem; "
    "from memsync.providers.mnem.making import init_store; "
    "print('go', flush=True); init_store(mnem, Path(sys.argv[1])); print('made', flush=True); "
    "sys.stdin.read()"
)


@pytest.fixture(scope="module")
def mnem() -> ModuleType:
    return real_sdk()


def opens(mnem: ModuleType, path: Path) -> bool:
    try:
        store = mnem.open(str(path))
    except mnem.MnemError:
        return False
    del store
    gc.collect()
    return True


def killed_inside_init(mnem: ModuleType, where: Path) -> Path:
    """A store under WHERE left by a process killed inside memsync's ``init_store``: its
    ``.mnem`` there, unopenable, memsync's mark beside it."""
    for attempt in range(400):
        path = where / f"try-{attempt}"
        maker = subprocess.Popen(
            [sys.executable, "-c", MAKER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert maker.stdout is not None
        assert maker.stdout.readline() == "go\n"
        time.sleep(random.uniform(0, 0.012))
        maker.kill()
        maker.wait()
        if (path / ".mnem").exists() and (path / MARK).exists() and not opens(mnem, path):
            return path
    raise AssertionError("400 kills inside mnem.init never left a half-made store")


def configure(home: Path, store: Path) -> None:
    (home / "config").mkdir(parents=True)
    write_config(
        home,
        '[sync]\nactive = "agent"\n'
        + mem0_table("old", home / "stores")
        + f'\n[providers.agent]\ntype = "mnem"\npath = "{store}"\ncreate = true\n',
    )
    with App(home, "old") as memory:
        for text in TEXTS:
            insert_behind_memsync(memory, mem0_payload(text, user_id="alice"))


def texts_in(mnem: ModuleType, path: Path) -> list[str]:
    store = mnem.open(str(path))
    found = sorted(str(node.content) for node in store.working_memory().values())
    del store
    gc.collect()
    return found


def test_a_store_killed_inside_init_is_made_again_by_the_next_sync(
    mnem: ModuleType, tmp_path: Path
) -> None:
    store = killed_inside_init(mnem, tmp_path / "made")
    home = tmp_path / "home"
    configure(home, store)

    result = run_memsync(home, "sync")

    assert result.returncode == 0, result.stderr
    assert "killed inside mnem's init" in result.stderr
    assert texts_in(mnem, store) == sorted(TEXTS)
    assert not (store / MARK).exists()


def test_an_unopenable_store_memsync_did_not_mark_is_left_alone(
    mnem: ModuleType, tmp_path: Path
) -> None:
    store = killed_inside_init(mnem, tmp_path / "made")
    (store / MARK).unlink()  # no mark: not a making of memsync's
    before = sorted((p.name, p.stat().st_size) for p in (store / ".mnem").iterdir())
    home = tmp_path / "home"
    configure(home, store)

    result = run_memsync(home, "sync")

    assert result.returncode != 0
    said = result.stdout + result.stderr
    assert "Traceback" not in said
    assert f"cannot open {store}" in said
    assert sorted((p.name, p.stat().st_size) for p in (store / ".mnem").iterdir()) == before


def test_a_mark_left_on_a_whole_store_keeps_what_an_agent_wrote(
    mnem: ModuleType, tmp_path: Path
) -> None:
    store = tmp_path / "whole"
    made = mnem.init(str(store))
    made.add("agent-note", "written by an agent after the init")
    made.commit("an agent's note", author="agent")
    del made
    gc.collect()
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    (store / MARK).write_text(gone.stdout.strip())  # killed after init returned
    home = tmp_path / "home"
    configure(home, store)

    result = run_memsync(home, "sync")

    assert result.returncode == 0, result.stderr
    assert texts_in(mnem, store) == sorted([*TEXTS, "written by an agent after the init"])
    assert not (store / MARK).exists()
    assert os.path.isdir(store / ".mnem")
