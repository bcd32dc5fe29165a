"""The data manifest (`usebench/data/sources.json`): dataset names against the tasks, name resolution, errors
naming the entry, shipped as package data."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from usebench.data.sources import load_manifest, resolve_datasets
from usebench.errors import BenchError, ConfigError
from tests.data.data_fakes import MANIFEST


def test_dataset_names_match_the_tasks_and_cover_their_files():
    from usebench import tasks  # noqa: F401
    from usebench.registry import TASKS

    for name in TASKS.names():
        task = TASKS.get(name)
        assert task.dataset in MANIFEST.datasets, (name, task.dataset)
        assert resolve_datasets([name], MANIFEST) == [task.dataset], name  # `bench data download <task>`
        provided = {p for c in MANIFEST.datasets[task.dataset] for p in c.paths()}
        for split in task.splits:
            assert set(task.files(split)) <= provided, (name, split, set(task.files(split)) - provided)
        if task.train_files():
            assert set(task.train_files()) & provided, (name, task.train_files())


def test_resolve_datasets_accepts_all_datasets_and_task_names():
    assert resolve_datasets([], MANIFEST) == ["useb", "sts", "quora", "beir-cqadupstack", "nli", "twitter-url", "pit2015", "denosent"]
    assert resolve_datasets(["quora", "askubuntu"], MANIFEST) == ["useb", "quora"]
    assert resolve_datasets(["sickr"], MANIFEST) == ["sts"]
    with pytest.raises(BenchError, match="did you mean 'useb'"):
        resolve_datasets(["usb"], MANIFEST)


def test_manifest_errors_name_the_entry(tmp_path):
    raw = json.loads((Path(__file__).parents[2] / "usebench/data/sources.json").read_text())
    raw["datasets"]["quora"]["components"][0]["sha"] = "typo"
    bad = tmp_path / "sources.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match=r"datasets.quora.components\[0\]: unknown key\(s\) \['sha'\]"):
        load_manifest(bad)


def test_manifest_ships_as_package_data():
    from importlib.resources import files

    text = files("usebench").joinpath("data/sources.json").read_text(encoding="utf-8")
    assert json.loads(text)["datasets"].keys() == {"useb", "sts", "quora", "beir-cqadupstack", "nli", "twitter-url", "pit2015", "denosent"}


def test_plain_url_must_name_its_member(tmp_path):
    raw = json.loads((Path(__file__).parents[2] / "usebench/data/sources.json").read_text())
    raw["datasets"]["twitter-url"]["components"][0]["member"] = "other.txt"
    bad = tmp_path / "sources.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match=r"components\[0\]: a URL that is not an archive is the file itself"):
        load_manifest(bad)

