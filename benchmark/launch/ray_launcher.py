"""The `ray` launcher (``pip install -e '.[ray]'``): each unit a Ray task with its resource request.

A unit asks for ``gpus_per_unit`` GPUs (default: 1 where it trains on a GPU: ``--device cuda``, or no
``--device`` on a cluster with GPUs; Ray then shows it only its own GPU) and ``cpus_per_unit`` CPUs (default: the
cluster's CPUs divided by the units that run at once), which is also its number of torch threads. Ray schedules
the tasks on the resources (on a box with N GPUs, N GPU units at once); ``max_parallel`` caps the units in flight.
A failed or killed task is retried by Ray up to ``retries`` times and resumes from the unit's train state (a
retry on another node, after its node died, finds the dead node's lock fresh for up to ten minutes and skips
the unit as locked; running the command again then resumes it). The
workers' output is not streamed to this terminal (parallel progress bars would interleave): this process prints
one line per unit event, and each unit's output is in ``<run_dir>/unit.log``.

Without ``ray_address`` a local Ray is started for the run and stopped after it, with its temp dir (logs,
spill files, sockets) in ``<results>/.launch/ray/`` and no file in the home directory (its auth token lives in
the environment, not in ``~/.ray``). When the results path is too long for Ray's unix sockets (107 bytes), Ray
is given a short symlink in the temp folder pointing there. With ``ray_address`` (``auto`` on a cluster node,
``ray://head:10001`` from outside) the run joins that cluster; every node must have this package installed and
see the data root and the results dir at the same paths. Before any task is submitted, the request of every
unit is checked against the live nodes: a unit no node can hold (a GPU on a cluster without one) is an error at
once, not a task waiting forever (so an autoscaling cluster must have its GPU nodes up).
"""
from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import secrets
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmark.launch.common import LaunchError, UnitFn, announce, failure, run_attempt
from benchmark.launch.options import LaunchOptions
from benchmark.launch.signals import fault_handlers_kept
from benchmark.run.manifest import launch_dir, record_job
from benchmark.run.plan import UnitSpec
from benchmark.run.unit import UnitResult, run_unit, say

# Forwarded to the workers of a cluster we join (a local Ray's workers inherit this process's environment).
FORWARDED_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME", "TOKENIZERS_PARALLELISM", "BENCH_DATA",
                 "WNSEARCHDIR", "NLTK_DATA", "CUBLAS_WORKSPACE_CONFIG")
_TOKEN = secrets.token_hex(32)  # the auth token of the local Rays this process starts
MAX_TEMP_DIR = 40  # + "/session_<date>_<time>_<us>_<pid>/sockets/plasma_store" stays under AF_UNIX's 107 bytes


def _ray_unit(unit_fn: UnitFn, spec: UnitSpec, data_root: Path, results_dir: Path, threads: int) -> UnitResult:
    """The Ray task: one attempt at one unit with ``threads`` torch threads."""
    return run_attempt(unit_fn, spec, data_root, results_dir, threads)


class RayLauncher:
    """``execute`` for :func:`benchmark.run.grid.run_benchmark`: units as Ray tasks."""

    name = "ray"

    def __init__(self, opts: LaunchOptions, unit_fn: UnitFn = run_unit):
        import_ray()
        self.opts, self.unit_fn = opts, unit_fn

    def __call__(self, units: Sequence[UnitSpec], data_root: Path, results_dir: Path) -> list[UnitResult]:
        data_root, results_dir = Path(data_root).resolve(), Path(results_dir).resolve()
        with ray_session(self.opts, results_dir):
            import ray

            cluster = ray.cluster_resources()
            requests = [unit_resources(self.opts, u, len(units), cluster) for u in units]
            check_feasible(requests, self.opts)
            return self._run_all(units, requests, data_root, results_dir)

    def _run_all(self, units: Sequence[UnitSpec], requests: list[tuple[int, int]], data_root: Path,
                 results_dir: Path) -> list[UnitResult]:
        import ray

        task = ray.remote(_ray_unit)
        pending, inflight, done = list(enumerate(units, 1)), {}, {}
        limit = self.opts.max_parallel or len(units)
        try:
            while pending or inflight:
                while pending and len(inflight) < limit:
                    i, spec = pending.pop(0)
                    cpus, gpus = requests[i - 1]
                    ref = task.options(num_cpus=cpus, num_gpus=gpus, max_retries=self.opts.retries,
                                       retry_exceptions=True, name=f"usebench {spec.run_id}").remote(
                        self.unit_fn, spec, data_root, results_dir, cpus)
                    inflight[ref] = (i, spec, time.time())
                    record_job(results_dir, spec.run_id, "ray", ref.task_id().hex(), None)
                    announce(i, len(units), spec, f"submitted as a Ray task ({cpus} CPU, {gpus} GPU)")
                ready, _ = ray.wait(list(inflight), num_returns=1)
                for ref in ready:
                    i, spec, since = inflight.pop(ref)
                    done[i] = self._collect(ref, spec, results_dir, since)
                    announce(i, len(units), spec, _outcome(done[i]))
        except KeyboardInterrupt:
            for ref in inflight:
                ray.cancel(ref, force=True)
            raise
        return [done[i] for i in sorted(done)]

    def _collect(self, ref: Any, spec: UnitSpec, results_dir: Path, since: float) -> UnitResult:
        import ray

        try:
            return ray.get(ref)
        except Exception as e:  # noqa: BLE001  (the unit's error, or its worker's death, after all retries)
            return failure(spec, results_dir, e, self.opts.retries + 1, since)


def _outcome(result: UnitResult) -> str:
    return f"failed: {result.error}" if result.state == "failed" else f"{result.state} ({result.seconds:.0f} s)"


def import_ray() -> None:
    """A clear error naming the extra when Ray is not installed (Ray itself is imported only when units run)."""
    if importlib.util.find_spec("ray") is None:
        raise LaunchError("--launcher ray needs Ray: pip install -e '.[ray]'")


@contextmanager
def ray_session(opts: LaunchOptions, results_dir: Path) -> Iterator[None]:
    """Connected to Ray for the block: an already initialised Ray (kept), the cluster at ``opts.ray_address``,
    or a local Ray started now (stopped after the block)."""
    import ray

    if ray.is_initialized():
        yield
        return
    with fault_handlers_kept() as put_back:  # a JVM in this process (Pyserini) needs its SIGSEGV handler
        if opts.ray_address:
            env = {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}
            try:
                ray.init(address=opts.ray_address, runtime_env={"env_vars": env}, logging_level=logging.WARNING,
                         log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as e:
                raise LaunchError(f"cannot join the Ray cluster at {opts.ray_address}: {e}") from None
            put_back()
            say(f"joined the Ray cluster at {opts.ray_address}: {_describe(ray.cluster_resources())}")
            try:
                yield
            finally:
                ray.shutdown()
            return
        with _local_ray(results_dir, put_back):
            yield


@contextmanager
def _local_ray(results_dir: Path, after_init: Callable[[], None]) -> Iterator[None]:
    import ray

    temp = launch_dir(results_dir) / "ray"
    temp.mkdir(parents=True, exist_ok=True)
    short = _short_path(temp)
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_TOKEN", "RAY_AUTH_MODE", "RAY_USAGE_STATS_ENABLED")}
    if not (saved["RAY_AUTH_TOKEN"] or os.environ.get("RAY_AUTH_TOKEN_PATH") or saved["RAY_AUTH_MODE"]):
        # Ray enables token auth for a new local cluster and would write the token to ~/.ray/auth_token;
        # given one in the environment it writes nothing (one token per process: Ray caches the first it reads).
        os.environ["RAY_AUTH_TOKEN"] = _TOKEN
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    quiet = logging.getLogger("ray._private.authentication.authentication_token_setup")
    level, t0 = quiet.level, time.perf_counter()
    quiet.setLevel(logging.ERROR)  # "token authentication is enabled": it is, with a token only this run knows
    try:
        ray.init(_temp_dir=str(short), include_dashboard=False,  # CPUs and GPUs as Ray detects them
                 logging_level=logging.WARNING, log_to_driver=False)
        after_init()
        say(f"started a local Ray in {time.perf_counter() - t0:.1f} s ({_describe(ray.cluster_resources())}); "
            f"its files are in {temp}")
        yield
    finally:
        ray.shutdown()
        quiet.setLevel(level)
        if short != temp:
            short.unlink(missing_ok=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _short_path(temp: Path) -> Path:
    """``temp``, or a short symlink to it when Ray's socket paths under it would be too long."""
    if len(str(temp)) <= MAX_TEMP_DIR:
        return temp
    link = Path(tempfile.gettempdir()) / f"usebench-ray-{hashlib.sha256(str(temp).encode()).hexdigest()[:12]}"
    if link.is_symlink() or link.exists():
        if link.resolve() == temp.resolve():
            return link
        link.unlink()
    link.symlink_to(temp, target_is_directory=True)
    return link


def _describe(resources: dict[str, float]) -> str:
    return ", ".join(f"{int(resources.get(k, 0))} {k}" for k in ("CPU", "GPU"))


def unit_resources(opts: LaunchOptions, spec: UnitSpec, n_units: int, cluster: dict[str, float]) -> tuple[int, int]:
    """(CPUs, GPUs) one unit asks Ray for, given the cluster's total resources."""
    cpus_total, gpus_total = int(cluster.get("CPU", 0)), int(cluster.get("GPU", 0))
    if opts.gpus_per_unit is not None:
        gpus = opts.gpus_per_unit
    elif spec.device:
        gpus = 0 if spec.device == "cpu" else 1
    else:
        gpus = 1 if gpus_total else 0
    slots = (gpus_total if gpus else cpus_total) or 1
    at_once = max(1, min(opts.max_parallel or slots, slots, n_units))
    return opts.cpus_per_unit or max(1, cpus_total // at_once), gpus


def check_feasible(requests: list[tuple[int, int]], opts: LaunchOptions) -> None:
    """Fail now, not after waiting forever, when no node of the cluster can ever run a unit."""
    import ray

    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    where = f"the Ray cluster at {opts.ray_address}" if opts.ray_address else "the local Ray"
    for cpus, gpus in sorted(set(requests)):
        if any(r.get("CPU", 0) >= cpus and r.get("GPU", 0) >= gpus for r in nodes):
            continue
        have = "; ".join(_describe(r) for r in nodes) or "no live node"
        if gpus and not any(r.get("GPU", 0) for r in nodes):
            raise LaunchError(f"the units ask for {gpus} GPU each (--device cuda or gpus_per_unit=1) but {where} "
                              f"has no GPU ({have}); use --device cpu, or join a cluster with GPUs (--ray-address)")
        raise LaunchError(f"no node of {where} has {cpus} CPU and {gpus} GPU for one unit ({have}); lower "
                          "--cpus-per-unit")
