"""Tool search: find the few tools a request needs among many (DESIGN §17)."""
