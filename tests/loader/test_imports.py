"""The import graph: each file parsed once per version, and versions told apart."""

from __future__ import annotations

import os
from pathlib import Path

from harness.loader.imports import ImportGraph

HOUR_NS = 3600 * 10**9


def write(path: Path, text: str, age_ns: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if age_ns:
        mtime = os.stat(path).st_mtime_ns - age_ns
        os.utime(path, ns=(mtime, mtime))


def test_closure_follows_relative_imports_and_lists_missing_candidates(tmp_path: Path) -> None:
    write(tmp_path / "plugin.py", "from . import helper, absent\nfrom .pkg.mod import x\n")
    write(tmp_path / "helper.py", "from .deep import thing\n")
    write(tmp_path / "deep.py", "import os\n")
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "mod.py", "x = 1\n")
    closure = ImportGraph().closure(tmp_path / "plugin.py")
    root = tmp_path.resolve()
    assert closure.files == {
        root / name
        for name in ("plugin.py", "helper.py", "deep.py", "pkg/__init__.py", "pkg/mod.py")
    }
    # what would be loaded if it existed: creating it must be seen
    assert root / "absent.py" in closure.probes
    assert root / "absent" / "__init__.py" in closure.probes
    assert not closure.files & closure.probes


def test_stamped_closure_is_the_closure_with_each_file_s_mtime(tmp_path: Path) -> None:
    write(tmp_path / "plugin.py", "from . import helper, absent\n")
    write(tmp_path / "helper.py", "x = 1\n")
    write(tmp_path / "pack" / "__init__.py", "from .inner import y\n")
    write(tmp_path / "pack" / "inner.py", "y = 2\n")
    graph = ImportGraph()
    for source, is_package in ((tmp_path / "plugin.py", False), (tmp_path / "pack", True)):
        stamped = graph.stamped_closure(source.resolve(), is_package)
        assert set(stamped) == graph.closure(source).files
        assert stamped == {file: os.stat(file).st_mtime_ns for file in stamped}
    missing = graph.stamped_closure((tmp_path / "gone.py").resolve(), False)
    assert missing == {}


def test_an_old_file_is_parsed_once_then_read_from_the_cache(tmp_path: Path) -> None:
    write(tmp_path / "plugin.py", "from . import helper\n", age_ns=HOUR_NS)
    write(tmp_path / "helper.py", "", age_ns=HOUR_NS)
    graph = ImportGraph(racy_ns=0)  # setting the time back made the change time now
    first = graph.closure(tmp_path / "plugin.py")
    assert graph.parses == 2
    assert graph.closure(tmp_path / "plugin.py") == first
    assert graph.parses == 2  # nothing changed: a stat per file, no parse


def test_a_same_size_rewrite_with_the_old_modification_time_is_seen(tmp_path: Path) -> None:
    """What an editor (or a checkout) may do within the file system's time granularity:
    the stamp may be equal, so a file changed less than RACY_NS ago is never trusted."""
    plugin = tmp_path / "plugin.py"
    write(plugin, "from . import aaa\n", age_ns=HOUR_NS)
    write(tmp_path / "aaa.py", "")
    write(tmp_path / "bbb.py", "")
    graph = ImportGraph()
    assert tmp_path.resolve() / "aaa.py" in graph.closure(plugin).files
    mtime = os.stat(plugin).st_mtime_ns
    plugin.write_text("from . import bbb\n")  # same size, same inode
    os.utime(plugin, ns=(mtime, mtime))  # and the same modification time
    assert os.stat(plugin).st_size == len("from . import aaa\n")
    files = graph.closure(plugin).files
    assert tmp_path.resolve() / "bbb.py" in files
    assert tmp_path.resolve() / "aaa.py" not in files


def test_a_file_changed_just_now_is_not_trusted_from_the_cache(tmp_path: Path) -> None:
    """Two writes in one timestamp tick leave every stamp equal: recent files are re-read."""
    write(tmp_path / "plugin.py", "from . import helper\n")  # written now
    graph = ImportGraph()
    graph.closure(tmp_path / "plugin.py")
    graph.closure(tmp_path / "plugin.py")
    assert graph.parses == 2


def test_a_replaced_file_is_seen_by_its_new_inode(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin.py"
    write(plugin, "from . import aaa\n", age_ns=HOUR_NS)
    graph = ImportGraph(racy_ns=0)  # trust the stamp: only the inode tells them apart
    assert graph.imports(plugin)[1] >= {tmp_path / "aaa.py"}
    mtime = os.stat(plugin).st_mtime_ns
    replacement = tmp_path / "plugin.py.tmp"
    write(replacement, "from . import bbb\n")
    os.utime(replacement, ns=(mtime, mtime))
    os.replace(replacement, plugin)  # an editor's atomic save: same size and time
    assert graph.parses == 1
    assert tmp_path / "bbb.py" in graph.imports(plugin)[1]
    assert graph.parses == 2


def test_forget_rereads_and_a_deleted_file_has_no_imports(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin.py"
    write(plugin, "from . import helper\n", age_ns=HOUR_NS)
    write(tmp_path / "helper.py", "", age_ns=HOUR_NS)
    graph = ImportGraph()
    graph.imports(plugin)
    graph.forget([plugin])
    graph.imports(plugin)
    assert graph.parses == 2
    (tmp_path / "helper.py").unlink()
    closure = graph.closure(plugin)
    assert closure.files == {plugin.resolve()}
    assert tmp_path.resolve() / "helper.py" in closure.probes  # restoring it will be seen
    plugin.unlink()
    assert graph.imports(plugin) == (set(), set())


def test_syntax_errors_and_star_imports_read_as_no_files(tmp_path: Path) -> None:
    write(tmp_path / "broken.py", "from . import helper\ndef (:\n")
    write(tmp_path / "star.py", "from . import *\nfrom .helper import *\n")
    write(tmp_path / "helper.py", "")
    graph = ImportGraph()
    assert graph.imports(tmp_path / "broken.py") == (set(), set())
    found, missing = graph.imports(tmp_path / "star.py")
    assert found == {(tmp_path / "helper.py").resolve()}
    assert all("*" not in str(path) for path in missing)


def test_relative_imports_written_every_way_are_followed(tmp_path: Path) -> None:
    # files without a relative import are not parsed at all; these all have one
    for name in ("a", "b", "c", "d"):
        (tmp_path / f"{name}.py").write_text("x = 1\n")
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import os\nfrom os import path\n"
        "from . import a\n"
        "from  .b import x\n"
        "from \\\n    .c import x\n"
        "if True:\n    from\t.d import x\n"
    )
    files = ImportGraph().closure(plugin).files
    assert {file.name for file in files} == {"plugin.py", "a.py", "b.py", "c.py", "d.py"}
    (tmp_path / "plain.py").write_text("import os\nfrom os import path  # from . in a comment\n")
    assert ImportGraph().closure(tmp_path / "plain.py").files == {(tmp_path / "plain.py")}
