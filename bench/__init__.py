"""Benchmarks: `make bench` (python -m bench) prints one table per area."""
