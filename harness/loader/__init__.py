"""The loader: from ``cordis.yml`` to plugins to load.

``source`` reads YAML with line numbers, ``entries`` turns it into entries (groups,
switches, patches, ``--set``), ``env`` expands ``${VAR}`` and ``.env``, ``config`` plans
the entries to load, ``resolve`` finds each plugin by name (paths, ``harness:<builtin>``
from ``builtin``, entry points, modules) with ``imports`` giving a plugin's local files,
``problems`` locates every problem, and ``writeback`` flips ``enabled`` in the file.
"""
