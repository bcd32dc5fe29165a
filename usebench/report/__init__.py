"""Reports built only from the results store: the papers' tables (Markdown, LaTeX, CSV, HTML) on their skeletons,
the published numbers side by side, plots and learning curves. The report imports neither ``usebench.run`` nor
``usebench.plan``: what a result was trained with, it reads from the record. `bench check`, which re-runs, lives in
``usebench.reproduce``."""
from __future__ import annotations
