"""Reports built only from the results store: the paper's tables (Markdown, LaTeX, CSV, HTML), seed
statistics, the published numbers side by side, plots, and the `bench check` regression check."""
from __future__ import annotations
