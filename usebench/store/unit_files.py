"""The names of a unit's run directory's own files and of a stage's lock folder, apart from the engine that writes
them: `bench status` reads them without importing torch (the training engine, ``usebench.run.unit``, does)."""
from __future__ import annotations

FAILED_FILE = "failed.json"
STAGES_DIR = "stages"  # the layout before stages had homes of their own (read by `bench status`)
STAGES_FILE = "stages.json"
USAGE_FILE = "usage.json"  # wall and CPU seconds and peak RSS of each finished attempt (usebench.run.usage)
UNIT_LOG = "unit.log"  # what the unit printed, every attempt appended (usebench.run.console writes it)
STAGE_LOCK_DIR = ".stage"  # a stage's lock: <home>/.stage/.lock (the unit lock of a run dir is <run_dir>/.lock)
