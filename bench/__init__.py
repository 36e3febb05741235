"""Benchmarks (not run by the tests): ``make bench`` or ``python -m bench [name ...]``."""
