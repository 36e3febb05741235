"""MCP over streamable HTTP: everything between the socket and :class:`~harness.mcp.McpSurface`.

:mod:`.transport` serves the SDK's app under uvicorn behind harness's gates (allowed hosts,
Origin, bearer token); :mod:`.limits` sheds slow and flooding clients; :mod:`.joined_writes`
sends a response in one socket write. The fast path answers plain ``tools/call`` POSTs itself,
with the SDK's exact bytes: :mod:`.fast_path` (which requests, in the SDK's order of checks),
:mod:`.fast_headers` (the SDK's header rules) and :mod:`.fast_answer` (JSON or SSE, pings,
disconnects). Only :mod:`harness.mcp` uses this package; nothing here imports the CLI.
"""
