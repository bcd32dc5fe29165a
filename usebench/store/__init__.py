"""The results store and everything that reads its state, at the base of the house: any room may ask it, and it
asks none above it (`bench status`, the dry run and the launchers' "already done" read the store here, never
through the rooms that execute units).

- :mod:`~usebench.store.files`: atomic writes (JSON and bytes, with the umask's mode), :func:`read_json`;
- :mod:`~usebench.store.records`: result records, their paths, digest and per-item file, the store's iterator;
- :mod:`~usebench.store.marker`: what a store is (the marker at its root, committed stores);
- :mod:`~usebench.store.validity`: whether a stored result still holds (the one rule);
- :mod:`~usebench.store.locks`: one writer per unit and per stage;
- :mod:`~usebench.store.manifest`: the planned and submitted units (``.launch/``);
- :mod:`~usebench.store.unit_files`, :mod:`~usebench.store.stage_ids`: the names of a unit's files and stage homes;
- :mod:`~usebench.store.unit_state`: a unit's and a stage's state, read from their directories (`bench status`).

The names below are those the store module held before it became this package (``from usebench.store import
save_result`` keeps working for scripts, plugins and the suite's modules alike).
"""
from __future__ import annotations

from usebench.store.files import (check_writable, current_umask, git_sha, honour_umask, mkstemp_shared, now_iso,
                                  read_json, read_json_lines, stored_form, write_bytes_atomic,
                                  write_json_atomic)
from usebench.store.marker import (STORE_FORMAT, STORE_MARKER, check_store_target, claim_store, committed_store,
                                   mark_store, nested_stores, store_marker)
from usebench.store.records import (DIGEST_KEY, ITEMS_SUFFIX, MODEL_DIRS, MTEB_META, MTEB_PREFIX, RUN_FILES,
                                    SCHEMA_VERSION, StoredResult, check_finite_main_score, config_hash, items_path,
                                    iter_results, make_record, read_record, record_digest, result_path, run_id,
                                    save_result)

__all__ = [
    "DIGEST_KEY", "ITEMS_SUFFIX", "MODEL_DIRS", "MTEB_META", "MTEB_PREFIX", "RUN_FILES", "SCHEMA_VERSION",
    "STORE_FORMAT", "STORE_MARKER", "StoredResult", "check_finite_main_score", "check_store_target",
    "check_writable", "claim_store", "committed_store", "config_hash", "current_umask", "git_sha", "honour_umask",
    "items_path", "iter_results", "make_record", "mark_store", "mkstemp_shared", "nested_stores", "now_iso",
    "read_json", "read_json_lines", "read_record", "record_digest", "result_path", "run_id", "save_result", "store_marker", "stored_form",
    "write_bytes_atomic", "write_json_atomic"]
