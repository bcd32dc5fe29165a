"""The `ray` launcher (``pip install -e '.[ray]'``): each unit a Ray task with its resource request.

A unit asks for ``gpus_per_unit`` GPUs (default: 1 where it trains on a GPU: ``--device cuda``, or no
``--device`` on a cluster with GPUs; Ray then shows it only its own GPU; a unit with none gets
``CUDA_VISIBLE_DEVICES`` empty, which Ray 2.60 no longer sets for ``num_gpus=0``) and ``cpus_per_unit`` CPUs
(default: the CPUs of a GPU node divided by its GPUs, the smallest such share over the GPU nodes, so every GPU can
hold a unit; CPU units share the CPUs of the cluster), which is also its number of torch threads. Every task runs
in a fresh worker process (``max_calls=1``: a reused worker would keep the CUDA context of its first GPU while Ray
assigns it another). ``max_parallel`` caps the units in flight. A failed or killed task is retried by Ray up to
``retries`` times and resumes from the unit's train state; the retry takes the unit's lock (and its stage's) over
from the dead attempt by the task id the lock records, and once its attempts are over the driver removes the locks
its task held (:func:`~usebench.launch.common.release_attempt`). A unit another live process holds is waited for
(:mod:`usebench.launch.held`). The workers' output is not streamed to this terminal (parallel progress bars would
interleave): this process prints one line per unit event, and each unit's output is in ``<run_dir>/unit.log``
(with the stack of a native crash, and, on a local Ray, the tail of the worker's own stderr).

Without ``ray_address`` a local Ray is started for the run and stopped after it, with its temp dir (sockets,
spill files) in a short folder of the local temp dir, its own per run (Unix sockets on a results store on NFS
fail, and two runs must not share one), and its logs copied to ``<results>/.launch/ray/`` afterwards; no file goes
to the home directory (its auth token lives in the environment, not in ``~/.ray``). With ``ray_address``
(``auto`` on a cluster node, ``ray://head:10001`` from outside) the run joins that cluster, forwarding the
environment by prefix (:data:`~usebench.launch.preflight.ENV_PREFIXES`); before any unit is submitted, a probe
on every node that can run one checks it imports the same code, sees the data root, the results dir (a marker
file the driver wrote) and the caches (:mod:`usebench.launch.preflight`), and the request of every unit is
checked against the live nodes: a unit no node can hold (a GPU on a cluster without one) is an error at once.
Units belong to this driver: if it dies, Ray ends them (`bench status` then shows them missing, not submitted).
"""
from __future__ import annotations

import importlib.util
import logging
import os
import secrets
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from usebench.launch.common import LaunchError, UnitFn, announce, failure, isolated_attempt, release_attempt
from usebench.launch.held import HeldUnits
from usebench.launch.options import LaunchOptions
from usebench.launch.preflight import forwarded_env, ray_preflight
from usebench.launch.signals import fault_handlers_kept
from usebench.store.unit_files import UNIT_LOG
from usebench.store.manifest import launch_dir, record_job
from usebench.plan.specs import UnitSpec
from usebench.run.progress import GridProgress
from usebench.run.unit import run_unit, say
from usebench.store.unit_state import UnitResult

_TOKEN = secrets.token_hex(32)  # the auth token of the local Rays this process starts
MAX_TEMP_DIR = 40  # + "/session_<date>_<time>_<us>_<pid>/sockets/plasma_store" stays under AF_UNIX's 107 bytes
NATIVE_TAIL = 40  # lines of a dead worker's own stderr copied into the unit's log
_LOCAL_TEMP: list[Path] = []  # the temp dir of the local Ray this process runs now (for a nested session)


def _ray_unit(unit_fn: UnitFn, spec: UnitSpec, data_root: Path, results_dir: Path, threads: int,
              gpus: int) -> UnitResult:
    """The Ray task: one attempt at one unit with ``threads`` torch threads, in a worker of its own."""
    import ray

    job = f"ray:{ray.get_runtime_context().get_task_id()}"  # the same for every retry of this task
    return isolated_attempt(unit_fn, spec, data_root, results_dir, threads, gpus, job)


class RayLauncher:
    """``execute`` for :func:`usebench.run.grid.run_benchmark`: units as Ray tasks."""

    name = "ray"
    remote = True  # the baselines run as tasks too, not on this driver

    def __init__(self, opts: LaunchOptions, unit_fn: UnitFn = run_unit):
        import_ray()
        self.opts, self.unit_fn = opts, unit_fn
        self.logs: Path | None = None  # a local Ray's log folder, for a dead worker's stderr

    def __call__(self, units: Sequence[UnitSpec], data_root: Path, results_dir: Path) -> list[UnitResult]:
        data_root, results_dir = Path(data_root).resolve(), Path(results_dir).resolve()
        with ray_session(self.opts, results_dir) as logs:
            import ray

            self.logs = logs
            nodes = live_nodes()
            requests = [unit_resources(self.opts, u, len(units), nodes) for u in units]
            check_feasible(requests, self.opts)
            probed = ray_preflight(nodes_for(requests, ray.nodes()), data_root, results_dir)
            say(f"preflight: {probed} node(s) import the same code and see the data root and the results dir")
            return _Run(self, units, requests, data_root, results_dir).until_done()


class _Run:
    """The submission loop of one launch: submit (at most max_parallel in flight), wait, collect, watch held."""

    def __init__(self, launcher: RayLauncher, units: Sequence[UnitSpec], requests: list[tuple[int, int]],
                 data_root: Path, results_dir: Path):
        import ray

        self.launcher, self.opts, self.units, self.requests = launcher, launcher.opts, list(units), requests
        self.data_root, self.results_dir = data_root, results_dir
        self.task = ray.remote(max_calls=1)(_ray_unit)  # one process per unit (max_calls cannot go in .options)
        self.inflight: dict[Any, tuple[int, float]] = {}
        self.done: dict[int, UnitResult] = {}
        self.held = HeldUnits(data_root, results_dir, len(units))
        self.progress = GridProgress(units, results_dir)

    def until_done(self) -> list[UnitResult]:
        import ray

        pending, limit = list(range(1, len(self.units) + 1)), self.opts.max_parallel or len(self.units)
        try:
            while pending or self.inflight or self.held:
                while pending and len(self.inflight) < limit:
                    self._submit(pending.pop(0))
                if self.inflight:
                    ready, _ = ray.wait(list(self.inflight), num_returns=1,
                                        timeout=None if not self.held else 5.0)
                    for ref in ready:
                        self._collect(ref)
                again, finished = self.held.due(wait=not self.inflight)
                self.done.update(finished)
                pending += again
        except KeyboardInterrupt:
            self._stop()
            raise
        return [self.done[i] for i in sorted(self.done)]

    def _submit(self, i: int) -> None:
        spec, (cpus, gpus) = self.units[i - 1], self.requests[i - 1]
        ref = self.task.options(num_cpus=cpus, num_gpus=gpus, max_retries=self.opts.retries, retry_exceptions=True,
                                name=f"usebench {spec.run_id}").remote(
            self.launcher.unit_fn, spec, self.data_root, self.results_dir, cpus, gpus)
        self.inflight[ref] = (i, time.time())
        record_job(self.results_dir, spec.run_id, "ray", ref.task_id().hex(), None,
                   driver={"host": socket.gethostname(), "pid": os.getpid()})
        announce(i, len(self.units), spec, f"submitted as a Ray task ({cpus} CPU, {gpus} GPU)")

    def _collect(self, ref: Any) -> None:
        import ray

        i, since = self.inflight.pop(ref)
        spec = self.units[i - 1]
        try:
            result = ray.get(ref)
        except Exception as e:  # noqa: BLE001  (the unit's error, or its worker's death, after all retries)
            release_attempt(spec, self.results_dir, f"ray:{ref.task_id().hex()}")  # its attempts are over
            append_native_output(self.results_dir / spec.run_id / UNIT_LOG, self.launcher.logs)
            result = failure(spec, self.results_dir, e, self.opts.retries + 1, since)
        if result.state == "locked":
            self.held.add(i, spec)
            return
        self.done[i] = result
        announce(i, len(self.units), spec, self.progress.finished(spec, result, running=len(self.inflight) + 1))

    def _stop(self) -> None:
        """Ctrl-C: end the tasks, wait (briefly) until they are gone, and remove the locks they leave behind
        (a force-cancelled worker is killed: it cannot release its lock, and a lock of another node would
        otherwise hold its unit until it is judged stale)."""
        import ray

        for ref in self.inflight:
            ray.cancel(ref, force=True)
        ray.wait(list(self.inflight), num_returns=len(self.inflight), timeout=10.0)
        for ref, (i, _) in self.inflight.items():
            release_attempt(self.units[i - 1], self.results_dir, f"ray:{ref.task_id().hex()}")


def append_native_output(unit_log: Path, logs: Path | None) -> bool:
    """Append the tail of the dead worker's own stderr (a native crash, a CUDA abort: what Python's streams never
    saw) to the unit's log; the worker is the pid of the log's last ``=== start`` line. Local Ray only (a
    cluster's worker logs stay on their node). Returns whether it found the worker's stderr."""
    if logs is None or not unit_log.is_file():
        return False
    starts = [ln for ln in unit_log.read_text(encoding="utf-8", errors="replace").splitlines()
              if ln.startswith("=== start ")]
    if not starts:
        return False
    pid = starts[-1].rsplit(" pid ", 1)[-1].strip()
    found = sorted(logs.glob(f"session_*/logs/worker-*-{pid}.err"))
    if not found:
        return False
    lines = found[-1].read_text(encoding="utf-8", errors="replace").splitlines()[-NATIVE_TAIL:]
    with open(unit_log, "a", encoding="utf-8") as f:
        f.write(f"=== native output of pid {pid} (last {len(lines)} lines of {found[-1]})\n")
        f.write("".join(line + "\n" for line in lines))
    return True


def import_ray() -> None:
    """A clear error naming the extra when Ray is not installed (Ray itself is imported only when units run)."""
    if importlib.util.find_spec("ray") is None:
        raise LaunchError("--launcher ray needs Ray: pip install -e '.[ray]'")


@contextmanager
def ray_session(opts: LaunchOptions, results_dir: Path) -> Iterator[Path | None]:
    """Connected to Ray for the block: an already initialised Ray (kept), the cluster at ``opts.ray_address``,
    or a local Ray started now (stopped after the block). Yields a local Ray's temp dir (None otherwise)."""
    import ray

    if ray.is_initialized():
        yield _LOCAL_TEMP[-1] if _LOCAL_TEMP else None
        return
    with fault_handlers_kept() as put_back:  # a JVM in this process (Pyserini) needs its SIGSEGV handler
        if opts.ray_address:
            try:
                ray.init(address=opts.ray_address, runtime_env={"env_vars": forwarded_env()},
                         logging_level=logging.WARNING, log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as e:
                raise LaunchError(f"cannot join the Ray cluster at {opts.ray_address}: {e}") from None
            put_back()
            say(f"joined the Ray cluster at {opts.ray_address}: {_describe(ray.cluster_resources())}")
            try:
                yield None
            finally:
                ray.shutdown()
            return
        with _local_ray(results_dir, put_back) as temp:
            yield temp


@contextmanager
def _local_ray(results_dir: Path, after_init: Callable[[], None]) -> Iterator[Path]:
    import ray

    temp = run_temp_dir()
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
        ray.init(_temp_dir=str(temp), include_dashboard=False,  # CPUs and GPUs as Ray detects them
                 logging_level=logging.WARNING, log_to_driver=False)
        after_init()
        say(f"started a local Ray in {time.perf_counter() - t0:.1f} s ({_describe(ray.cluster_resources())}); "
            f"its logs go to {launch_dir(results_dir) / 'ray'}")
        _LOCAL_TEMP.append(temp)
        yield temp
    finally:
        if _LOCAL_TEMP and _LOCAL_TEMP[-1] == temp:
            _LOCAL_TEMP.pop()
        ray.shutdown()
        quiet.setLevel(level)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        keep_logs(temp, launch_dir(results_dir) / "ray")


def run_temp_dir() -> Path:
    """A new short folder for one local Ray on this machine's own disk (sockets, spill files, logs)."""
    base = Path(tempfile.gettempdir())
    if len(str(base)) > MAX_TEMP_DIR - 20:
        base = Path("/tmp")
    temp = base / f"usebench-ray-{os.getpid()}-{secrets.token_hex(3)}"
    temp.mkdir(mode=0o700)
    return temp


def keep_logs(temp: Path, into: Path) -> None:
    """Copy each session's logs from a local Ray's temp dir into the results store, then remove the temp dir."""
    for logs in temp.glob("session_*/logs"):
        if logs.parent.is_symlink():
            continue  # session_latest
        try:
            shutil.copytree(logs, into / logs.parent.name / "logs", dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.sock", "*socket*"))
        except (OSError, shutil.Error) as e:
            say(f"could not copy Ray's logs from {logs} into {into}: {e}")
            return  # leave the temp dir for the user
    shutil.rmtree(temp, ignore_errors=True)


def _describe(resources: dict[str, float]) -> str:
    return ", ".join(f"{int(resources.get(k, 0))} {k}" for k in ("CPU", "GPU"))


def live_nodes() -> list[dict[str, float]]:
    """The resources of each live node of the Ray cluster."""
    import ray

    return [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]


def unit_resources(opts: LaunchOptions, spec: UnitSpec, n_units: int,
                   nodes: list[dict[str, float]] | dict[str, float]) -> tuple[int, int]:
    """(CPUs, GPUs) one unit asks Ray for, given the live nodes' resources (or one node's). A GPU unit gets the
    smallest CPUs-per-GPU share of the GPU nodes (as many units as a node holds at once), so a CPU-only head node
    does not inflate it and leave GPUs idle; a CPU unit a share of all CPUs."""
    nodes = [nodes] if isinstance(nodes, dict) else nodes
    cpus_total, gpus_total = (int(sum(n.get(k, 0) for n in nodes)) for k in ("CPU", "GPU"))
    if opts.gpus_per_unit is not None:
        gpus = opts.gpus_per_unit
    elif spec.device:
        gpus = 0 if spec.device == "cpu" else 1
    else:
        gpus = 1 if gpus_total else 0
    if opts.cpus_per_unit:
        return opts.cpus_per_unit, gpus
    if gpus and gpus_total:
        at_once = max(1, min(opts.max_parallel or gpus_total, n_units))
        shares = [int(n.get("CPU", 0)) // min(int(n["GPU"]), at_once) for n in nodes if int(n.get("GPU", 0)) >= 1]
        return max(1, min(shares)), gpus
    at_once = max(1, min(opts.max_parallel or cpus_total or 1, cpus_total or 1, n_units))
    biggest = max((int(n.get("CPU", 0)) for n in nodes), default=1)
    return max(1, min(cpus_total // at_once, biggest)), gpus


def nodes_for(requests: list[tuple[int, int]], nodes: list[dict[str, Any]]) -> list[str]:
    """The ids of the live nodes that can hold some unit (the ones to probe)."""
    out = []
    for n in nodes:
        r = n.get("Resources", {})
        if n.get("Alive") and any(r.get("CPU", 0) >= c and r.get("GPU", 0) >= g for c, g in set(requests)):
            out.append(n["NodeID"])
    return out


def check_feasible(requests: list[tuple[int, int]], opts: LaunchOptions) -> None:
    """Fail now, not after waiting forever, when no node of the cluster can ever run a unit."""
    nodes = live_nodes()
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
