"""The sys.modules bookkeeping of plugins loaded by path: names, and the reload stash."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.loader.modules import Stash, local_module_name
from harness.loader.resolve import Resolver

from ..helpers import write


def test_same_file_names_in_two_folders_do_not_collide(tmp_path: Path) -> None:
    one = write(tmp_path / "a" / "tools.py", "X = 1\n")
    two = write(tmp_path / "b" / "tools.py", "X = 2\n")
    assert local_module_name(one) != local_module_name(two)
    assert local_module_name(one).endswith(".tools")


def test_stash_takes_modules_out_and_puts_them_back(tmp_path: Path) -> None:
    helper = write(tmp_path / "plugins" / "helper.py", "VALUE = 'old'\n")
    main = write(
        tmp_path / "plugins" / "main.py",
        "from . import helper\n\ndef apply(ctx):\n    return None\n",
    )
    resolver = Resolver()
    resolved = resolver.resolve("./plugins/main.py", tmp_path)
    old_helper = resolved.plugin.helper
    package = sys.modules[resolved.module.rpartition(".")[0]]  # type: ignore[union-attr]
    stash = Stash({main.resolve(), helper.resolve()})
    assert stash.names == {resolved.module, old_helper.__name__}
    assert old_helper.__name__ not in sys.modules
    assert not hasattr(package, "helper")  # `from . import helper` would find it there

    helper.write_text("VALUE = 'new'\n")
    fresh = resolver.resolve("./plugins/main.py", tmp_path)
    assert fresh.plugin.helper.VALUE == "new"

    stash.restore()  # the new version was refused
    assert sys.modules[old_helper.__name__] is old_helper
    assert sys.modules[resolved.module] is resolved.plugin  # type: ignore[index]
    assert package.helper is old_helper
    assert old_helper.VALUE == "old"
