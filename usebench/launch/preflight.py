"""Before a grid runs on a Ray cluster: one probe per node that will run units, checked against the driver.

Ray ships no code here: each node imports whatever ``benchmark`` its Python finds, reads the data root and writes
the results dir at the paths the driver gives. A node with another checkout, without the data, with its own
(unshared) results folder or without the model caches would fail, or silently compute something else, only
after hours of training. So the driver writes a marker file into the results dir, and a probe pinned to each
node reports: the code it imports (git commit and a hash of the package sources), whether it sees the data root,
whether it reads the marker (the results dir is the same shared folder), and whether the cache folders named by
the forwarded environment exist there. Any difference is an error before the first unit is submitted.

The driver's environment is forwarded to the workers of a cluster by prefix (:data:`ENV_PREFIXES`: the Hugging
Face caches and offline switches, sentence-transformers' home, this package's settings), so a worker resolves
models and datasets (MTEB's) as the driver does.
"""
from __future__ import annotations

import hashlib
import os
import platform
import secrets
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from usebench.launch.common import LaunchError
from usebench.store.manifest import launch_dir

ENV_PREFIXES = ("HF_", "HUGGINGFACE_", "TRANSFORMERS_", "SENTENCE_TRANSFORMERS_HOME", "TOKENIZERS_", "BENCH_",
                "USEBENCH_", "TORCH_HOME", "NLTK_DATA", "WNSEARCHDIR", "CUBLAS_WORKSPACE_CONFIG", "MTEB_",
                "MLFLOW_", "WANDB_")  # the trackers' own settings (--log-to): tracking URI, W&B mode and project
CACHE_VARS = ("HF_HOME", "HF_HUB_CACHE", "HF_DATASETS_CACHE", "SENTENCE_TRANSFORMERS_HOME", "TORCH_HOME",
              "NLTK_DATA")
PACKAGES = ("usebench",)
CODE_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds the usebench package


def _version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("usebench")
    except PackageNotFoundError:  # run from a checkout on PYTHONPATH, not installed
        return None


def forwarded_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables a cluster's workers get from the driver (every name starting with an :data:`ENV_PREFIXES`)."""
    environ = os.environ if environ is None else environ
    return {k: v for k, v in environ.items() if k.startswith(ENV_PREFIXES) and k != "USEBENCH_JOB_ID"}


def write_marker(results_dir: Path) -> str:
    """A file only this driver wrote, in the results dir: a node that reads it sees the same folder."""
    token = secrets.token_hex(8)
    path = launch_dir(results_dir) / f"preflight-{token}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(token, encoding="utf-8")
    return token


def remove_marker(results_dir: Path, token: str) -> None:
    (launch_dir(results_dir) / f"preflight-{token}").unlink(missing_ok=True)


def code_hash() -> str:
    """sha256 over the sources of the imported packages (uncommitted edits and non-git installs included)."""
    root = CODE_ROOT
    h = hashlib.sha256()
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def probe(data_root: str, results_dir: str, token: str) -> dict[str, Any]:
    """What this node sees (run on each node by a pinned task, and on the driver)."""
    from usebench.store import git_sha

    marker = launch_dir(results_dir) / f"preflight-{token}"
    try:
        sees_marker = marker.read_text(encoding="utf-8") == token
    except OSError:
        sees_marker = False
    caches = {var: os.path.isdir(os.environ[var]) for var in CACHE_VARS if os.environ.get(var)}
    return {"host": socket.gethostname(), "code": str(CODE_ROOT),
            "git_sha": git_sha(), "code_hash": code_hash(), "version": _version(),
            "python": platform.python_version(), "data_root": os.path.isdir(data_root), "marker": sees_marker,
            "caches": caches}


def problems(driver: dict[str, Any], node: dict[str, Any]) -> list[str]:
    """What is wrong with one node's probe, compared with the driver's (an empty list: nothing)."""
    out = []
    if (node.get("git_sha"), node.get("code_hash")) != (driver.get("git_sha"), driver.get("code_hash")):
        out.append(f"imports other code ({node.get('code')} at commit {str(node.get('git_sha'))[:12]}, sources "
                   f"{node.get('code_hash')}; the driver: {driver.get('code')} at {str(driver.get('git_sha'))[:12]},"
                   f" {driver.get('code_hash')}): install this checkout on every node (pip install -e .)")
    if node.get("python") != driver.get("python"):
        out.append(f"runs Python {node.get('python')} (the driver {driver.get('python')})")
    if not node.get("data_root"):
        out.append("does not see the data root at the driver's path")
    if not node.get("marker"):
        out.append("does not see the file the driver just wrote into the results dir: the results dir must be "
                   "one folder shared by every node (NFS, Lustre...) at the same path")
    missing = [var for var, ok in node.get("caches", {}).items() if not ok]
    if missing:
        out.append(f"has no folder at {', '.join(missing)} (forwarded from the driver's environment)")
    return out


def check_probes(driver: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> None:
    """LaunchError naming every node (by Ray node id) that differs from the driver, and how."""
    bad = {node: problems(driver, found) for node, found in nodes.items()}
    bad = {node: p for node, p in bad.items() if p}
    if bad:
        lines = [f"  {nodes[n].get('host')} (node {n[:12]}): " + "; ".join(p) for n, p in sorted(bad.items())]
        raise LaunchError("preflight: " + str(len(bad)) + " node(s) of the Ray cluster cannot run the units as "
                          "this driver would:\n" + "\n".join(lines))


def ray_preflight(node_ids: list[str], data_root: Path, results_dir: Path) -> int:
    """Probe every node in ``node_ids`` (one task pinned to each) and check them; returns the nodes probed."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    token = write_marker(results_dir)
    try:
        driver = probe(str(data_root), str(results_dir), token)
        task = ray.remote(max_calls=1)(probe)
        refs = {node: task.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
                                   name="usebench preflight").remote(str(data_root), str(results_dir), token)
                for node in node_ids}
        try:
            found = dict(zip(refs, ray.get(list(refs.values()), timeout=600)))
        except ray.exceptions.GetTimeoutError:
            raise LaunchError("preflight: a probe did not run within 10 minutes on some node of the Ray cluster "
                              f"(nodes {', '.join(n[:12] for n in node_ids)})") from None
    finally:
        remove_marker(results_dir, token)
    check_probes(driver, found)
    return len(found)
