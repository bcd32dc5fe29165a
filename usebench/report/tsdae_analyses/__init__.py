"""The report tables built by their own section builder, one module each: the TSDAE paper's analysis tables whose
rows are configurations, not methods (App. A's configuration search, :mod:`.app_a`; TSDAE from other checkpoints
with its training loss, Table 4, :mod:`.table4`; Table 9, :mod:`.table9`; their shared pairing, :mod:`.common`)
and the thesis' tables of several published tables (usebench/report/thesis_tables.py).

:data:`SECTIONS` is the one registry: each table's builder and the published tables its slots are.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from usebench.report.pairing import PairingContext
from usebench.report.sections import Section
from usebench.stats.table_specs import TableSpec
from usebench.report.tsdae_analyses.app_a import APP_A_TABLES, app_a_section
from usebench.report.tsdae_analyses.table4 import final_loss, table4_section
from usebench.report.tsdae_analyses.table9 import table9_section
from usebench.store import StoredResult

SectionBuilder = Callable[[list[StoredResult], TableSpec, PairingContext | None], Section]


class SectionTable(NamedTuple):
    """A report table with its own builder: the builder, and the published tables whose rows are its slots, in
    order (Row.slot indexes their concatenation): what a slot-by-slot status (`bench reproduce`) reads."""

    build: SectionBuilder
    slots: tuple[str, ...]


def _sections() -> dict[str, SectionTable]:
    from usebench.report.thesis_tables import eproduct_section, studies_section

    return {
        "tsdae-app-a": SectionTable(app_a_section, APP_A_TABLES),
        "tsdae-table4": SectionTable(table4_section, ("tsdae-table4",)),
        "tsdae-table9": SectionTable(table9_section, ("tsdae-table9",)),
        "thesis-studies": SectionTable(studies_section, ("thesis-table5.11", "thesis-table5.12", "thesis-table5.13")),
        "thesis-eproduct": SectionTable(eproduct_section, ("thesis-table5.4", "thesis-table5.5", "thesis-table5.8",
                                                           "thesis-table5.14", "thesis-table5.15", "thesis-table5.16")),
    }


# Report tables built by their own section builder (rows that are configurations, or tables of several published
# tables on their papers' skeletons), not by usebench.report.skeleton's method-keyed layout
SECTIONS: dict[str, SectionTable] = _sections()
# The two views callers read: each table's builder, and its slots' published tables
SECTION_BUILDERS: dict[str, SectionBuilder] = {name: t.build for name, t in SECTIONS.items()}
SECTION_SLOTS: dict[str, tuple[str, ...]] = {name: t.slots for name, t in SECTIONS.items()}

__all__ = ["APP_A_TABLES", "SECTIONS", "SECTION_BUILDERS", "SECTION_SLOTS", "SectionTable",
           "app_a_section", "final_loss", "table4_section", "table9_section"]
