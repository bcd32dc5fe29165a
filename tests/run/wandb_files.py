"""W&B's offline run files read back: ``offline-run-*/run-<id>.wandb`` is W&B's transaction log (a 7-byte header
``:W&B`` + magic 0xBEE1 + version, then LevelDB-log framed records in 32 KiB blocks), each record a serialized
``wandb_internal_pb2.Record`` (W&B's own message). wandb 0.31 ships no Python reader of these files (its reader
moved into wandb-core), so the framing is read here and every record is parsed with W&B's protobuf classes."""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BLOCK, HEADER = 32768, 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path: Path) -> list[Any]:
    """Every record of one ``.wandb`` file, in order."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = Path(path).read_bytes()
    ident, magic, _version = struct.unpack("<4sHB", data[:HEADER])
    assert ident == b":W&B" and magic == 0xBEE1, f"{path}: not a W&B transaction log"
    out, pos, pending = [], HEADER, b""
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:  # a block's tail too short for a record header is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + HEADER])
        if length == 0 and kind == 0:
            pos += left
            continue
        pending += data[pos + HEADER:pos + HEADER + length]
        pos += HEADER + length
        if kind in (FULL, LAST):
            record = pb.Record()
            record.ParseFromString(pending)
            out.append(record)
            pending = b""
    return out


def _key(item: Any) -> str:
    return item.key or "/".join(item.nested_key)


@dataclass
class OfflineRun:
    """What one offline run folder holds: its run record, history rows (by step) and summary updates."""

    run_id: str
    group: str
    job_type: str
    tags: list[str]
    config: dict[str, Any]
    history: dict[int, dict[str, float]] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


def offline_runs(home: Path) -> list[OfflineRun]:
    """Every ``<home>/wandb/offline-run-*`` folder, oldest first."""
    out = []
    for folder in sorted((Path(home) / "wandb").glob("offline-run-*")):
        (log,) = folder.glob("run-*.wandb")
        run = None
        for r in records(log):
            kind = r.WhichOneof("record_type")
            if kind == "run":
                config = {i.key: json.loads(i.value_json) for i in r.run.config.update}
                run = OfflineRun(r.run.run_id, r.run.run_group, r.run.job_type, list(r.run.tags), config)
            elif kind == "history" and run is not None:
                row = {_key(i): json.loads(i.value_json) for i in r.history.item}
                run.history[int(row["_step"])] = {k: v for k, v in row.items() if not k.startswith("_")}
            elif kind == "summary" and run is not None:
                run.summary.update({_key(i): json.loads(i.value_json) for i in r.summary.update})
        assert run is not None, f"{log}: no run record"
        out.append(run)
    return out
