"""The pluggy side of resolving: the ``harness.plugins`` and ``harness.resolvers`` entry-point
groups and the ``harness_resolve_plugin`` hook.

Imported only when a name is neither a path nor ``harness:<builtin>``, so a config of plugin
files never loads pluggy. A resolver distribution writes::

    from harness.loader.hooks import hookimpl

    @hookimpl
    def harness_resolve_plugin(name): ...
"""

from __future__ import annotations

from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("harness")
hookimpl = pluggy.HookimplMarker("harness")


class ResolverSpec:
    """Hooks installed distributions may implement (register them in ``harness.resolvers``)."""

    @hookspec(firstresult=True)
    def harness_resolve_plugin(self, name: str) -> Any:
        """Return the plugin object for ``name``, or None to let others answer."""


def plugin_manager() -> pluggy.PluginManager:
    """A manager that knows the resolver hook and has loaded no entry point yet."""
    manager = pluggy.PluginManager("harness")
    manager.add_hookspecs(ResolverSpec)
    return manager
