"""Helpers for writing tool plugins: a confined folder (``workspace``) and safe git (``git``)."""
