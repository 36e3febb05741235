"""The names a program already has, which no tool function may take.

A program sees its tools as functions, beside Python's builtins, the names the stubs
themselves use, the ``call_tool`` function and the modules it may import. A tool named
``print`` or ``Any`` (an upstream mounted with ``prefix: ""`` can bring one) would shadow
one of those for the type checker, or be shadowed by it at run time: either way programs
would break. Such a tool gets no function of its own; ``call_tool("print", {...})`` still
reaches it, and the collision is a problem of the later entry (``harness check``).
"""

from __future__ import annotations

import builtins
import keyword
import unicodedata

CALL_TOOL = "call_tool"
STUB_TYPES = ("Any", "Literal", "TypedDict")
"""What the stubs import from ``typing``."""
MODULES = (
    *("asyncio", "base64", "binascii", "bisect", "collections", "copy", "csv", "dataclasses"),
    *("datetime", "decimal", "functools", "hashlib", "itertools", "json", "math", "os"),
    *("pathlib", "posixpath", "random", "re", "sys", "time", "tomllib", "typing"),
    "unicodedata",
)
"""The standard modules a program can import (checked with pydantic-monty 1.4.0)."""
MODULE_NAMES = ("__builtins__", "__doc__", "__file__", "__name__", "__spec__")
"""What every module defines, a program included."""


def _reserved() -> dict[str, str]:
    names = {name: f"Python's builtin {name}" for name in dir(builtins)}
    names.update((name, f"the module attribute {name}") for name in MODULE_NAMES)
    names.update((name, f"the standard module {name}") for name in MODULES)
    names.update((name, f"typing's {name}, which the tool stubs use") for name in STUB_TYPES)
    names[CALL_TOOL] = f"the function {CALL_TOOL} itself"
    return names


RESERVED: dict[str, str] = _reserved()
"""Name → what it already is in a program."""


def is_identifier(name: str) -> bool:
    """A name a program can write as it is: an identifier, not a keyword, and one Python
    does not rewrite (it reads ``ﬁle`` as ``file``, NFKC, so a schema's ``ﬁle`` would be
    sent as ``file``)."""
    return (
        name.isidentifier()
        and not keyword.iskeyword(name)
        and unicodedata.normalize("NFKC", name) == name
    )


def is_free(name: str) -> bool:
    """Whether a tool called ``name`` can be a function of a program: an identifier no
    builtin has, not starting with ``_`` (the stubs reach programs by ``import *``, which
    leaves such names out)."""
    return is_identifier(name) and name not in RESERVED and not name.startswith("_")
