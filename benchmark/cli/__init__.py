"""The `bench` command line (thin: parse, call, print). ``benchmark.cli:main`` is the console entry point."""
from benchmark.cli.main import main

__all__ = ["main"]
