"""The `bench` command line (thin: parse, call, print). ``usebench.cli:main`` is the console entry point."""
from usebench.cli.main import main

__all__ = ["main"]
