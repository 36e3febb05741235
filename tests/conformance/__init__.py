"""The official MCP conformance suite, pinned, run against ``harness run``."""
