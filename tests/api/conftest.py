"""The useb kit (``useb`` 0.0.1 on PyPI, the TSDAE paper's evaluation code), to compare usebench.useb with.

Used when importable, else installed without its dependencies (it asks for the old ``pytrec_eval``, which builds
from source; ``pytrec-eval-terrier`` in the base install provides the same module) from the wheel that
``$USEB_KIT_WHEEL`` names into a temporary folder (``pip download --no-deps useb==0.0.1`` fetches it). Neither:
the tests that need it skip.
"""
from __future__ import annotations

import importlib
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def kit(tmp_path_factory):
    """The kit's ``useb`` module (importable, or installed from $USEB_KIT_WHEEL), else skip."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        module = _import_kit(tmp_path_factory)
    finally:  # the kit calls logging.basicConfig(level=INFO) on import: keep the suite's logging as it was
        root.handlers[:], root.level = handlers, level
    return module


def _import_kit(tmp_path_factory):
    try:
        return importlib.import_module("useb")
    except ImportError:
        pass
    wheel = os.environ.get("USEB_KIT_WHEEL")
    if not wheel or not Path(wheel).is_file():
        pytest.skip("the useb kit is not importable and $USEB_KIT_WHEEL names no wheel "
                    "(pip download --no-deps useb==0.0.1, then set USEB_KIT_WHEEL to the .whl)")
    target = tmp_path_factory.mktemp("useb-kit")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target",
                           str(target), wheel], capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot install the useb kit from {wheel}: {done.stderr.strip()[-300:]}")
    sys.path.insert(0, str(target))
    return importlib.import_module("useb")
