"""MkDocs hook (``hooks:`` in mkdocs.yml): adds the generated pages and pictures to the site at every build.

Nothing generated is written into ``docs/``; the files exist only in the build. Each event puts the repository
and ``docs/`` on ``sys.path`` (MkDocs loads a hook by file path and restores ``sys.path`` afterwards) so that the
generators import the suite from this checkout.
"""
from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
os.environ.setdefault("MPLBACKEND", "Agg")  # the example report draws its plots without a display
os.environ.setdefault("HF_HUB_OFFLINE", "1")

log = logging.getLogger("mkdocs.hooks.usebench")


def _importable() -> None:
    """The repository (``usebench``) and ``docs/`` (``docgen``) first on ``sys.path``."""
    for path in (str(DOCS), str(DOCS.parent)):
        if path in sys.path:
            sys.path.remove(path)
        sys.path.insert(0, path)


def on_files(files, config):
    """Add every generated file (Markdown pages, the SVG diagram, the example report's PNGs)."""
    from mkdocs.structure.files import File

    _importable()
    from docgen.generate import generate_all

    gen, seconds = generate_all()
    for rel, content in gen.files.items():
        files.append(File.generated(config, rel, content=content))
    log.info("usebench: generated %d files (%s) in %s", len(gen.files),
             ", ".join(f"{n} {k}" for k, n in gen.entries.items()),
             ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items()))
    return files


def on_config(config):
    """List every generated method page in the navigation, under the method reference's index page."""
    _importable()
    from docgen.methods_ref import INDEX, method_names, page_of

    pages = [{name: page_of(name)} for name in method_names()]
    config.nav = _expand(config.nav, INDEX, pages)
    return config


def _expand(nav, index: str, pages: list):
    """``nav`` with the entry ``{title: index}`` replaced by the section ``{title: [index, *pages]}``."""
    if isinstance(nav, list):
        return [_expand(item, index, pages) for item in nav]
    if isinstance(nav, dict):
        return {k: [v, *pages] if v == index else _expand(v, index, pages) for k, v in nav.items()}
    return nav
