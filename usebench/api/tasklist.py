"""``usebench.list_tasks()``: every registered task as a DataFrame, with whether its data is in the data root and
the command that fetches it (what `bench tasks` and `bench data status` show, for a notebook)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

TASK_COLUMNS = ("name", "group", "groups", "protocol", "metric", "splits", "data_present", "missing", "fetch",
                "extras", "description")


def list_tasks(data_root: str | Path | None = None, *, group: str | None = None) -> pd.DataFrame:
    """One row per registered task (columns: :data:`TASK_COLUMNS`).

    ``group``: the task's own group (``useb``, ``sts``, ``beir``); ``groups``: the names that select it on the
    command line and in ``usebench.evaluate`` (``"useb"``...); ``protocol``: its family (``rerank``,
    ``retrieval``, ``pairs``); ``metric``: its main metric; ``data_present``: every file of every split is under
    ``data_root`` (default ``$BENCH_DATA``), else ``missing`` names the first one absent and ``fetch`` the
    command that fetches it. ``mteb:<Task>`` names (MTEB's thousands of tasks, the `mteb` extra) are not listed.
    ``group=`` keeps the tasks a group name selects.
    """
    import pandas as pd

    from usebench.paths import default_data_root
    from usebench.registry import TASKS
    from usebench.api.arguments import task_names
    from usebench.tasks import GROUPS

    root = Path(data_root or default_data_root()).expanduser()
    names = TASKS.names() if group is None else task_names(group)
    member = {}
    for g, tasks in GROUPS.items():
        for t in tasks:
            member.setdefault(t, []).append(g)
    rows = [_row(name, TASKS.get(name), root, member.get(name, [])) for name in names]
    return pd.DataFrame(rows, columns=list(TASK_COLUMNS))


def _row(name: str, task: Any, root: Path, groups: list[str]) -> dict[str, Any]:
    """One task's row; an adapter that cannot list its files says so in ``missing`` instead of failing."""
    try:
        files = [f for split in task.splits for f in task.files(split)]
        missing = next((f for f in files if not (root / f).is_file()), None)
    except Exception as e:  # noqa: BLE001  a broken adapter must not hide the others
        missing = f"{type(e).__name__}: {e}"
    dataset = getattr(task, "dataset", "")
    return {"name": name, "group": task.group, "groups": tuple(groups), "protocol": task.family,
            "metric": task.main_metric, "splits": tuple(task.splits), "data_present": missing is None,
            "missing": missing or "", "fetch": f"bench data download {dataset}" if dataset else "",
            "extras": tuple(getattr(task, "extras", ())), "description": getattr(task, "description", "")}
