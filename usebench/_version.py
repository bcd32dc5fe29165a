"""The suite's version, in a leaf module: records, model cards and pages import it from here, never from the
package's face (usebench/__init__.py), so nothing below the face imports it."""
from __future__ import annotations

__version__ = "0.1.0"  # pyproject.toml's version
