"""usebench.load_results and usebench.aggregate against the reports' own cells (usebench/stats/table_rows.py)."""
from __future__ import annotations

import math

import pytest

import usebench
from usebench.errors import BenchError
from usebench.stats.table_rows import index_results
from usebench.stats.seeds import MixedRunsError
from usebench.stats.table_specs import COLUMNS, USEB_COLUMNS
from usebench.store import iter_results
from tests.report.synthetic_results import add_result, hand_store
from usebench.api.results import RESULT_COLUMNS, ROW_COLUMNS


def test_load_results_has_one_row_per_stored_score(tmp_path):
    store = hand_store(tmp_path)
    frame = usebench.load_results(store)
    records = [r.record for r in iter_results(store)]
    assert list(frame.columns) == list(RESULT_COLUMNS)
    assert len(frame) == sum(len(r["scores"]) for r in records)  # the hand store has no subsets
    assert not frame.duplicated(["run_id", "chain", "setting", "seed", "task", "split", "subset", "metric"]).any()
    for record in records:
        rows = frame[(frame["run_id"] == record["run_id"]) & (frame["task"] == record["task"]["name"])]
        assert dict(zip(rows["metric"], rows["value"])) == record["scores"]
        assert set(rows["config_hash"]) == {record["config_hash"]}
        assert set(rows["data_sha256"]) == {record["task"]["data_sha256"]}
        assert rows["main"].sum() == 1 and rows.loc[rows["main"], "metric"].item() == record["main_metric"]
    # the report's blocks: the grid's `supervised` setting and an untrained `base` row
    assert set(frame.loc[frame["chain"] == "sbert-mnrl", "setting"]) == {"supervised"}
    assert set(frame.loc[frame["chain"] == "base", "setting"]) == {"baselines"}


def test_aggregate_equals_the_report_cells(tmp_path):
    store = hand_store(tmp_path)
    stats = usebench.aggregate(usebench.load_results(store))
    index = index_results(iter_results(store))
    checked = 0
    for key, cells in index.rows.items():
        for col_id in (*USEB_COLUMNS, "stsb", "sts.avg"):
            want = index.cell(key, COLUMNS[col_id], "test")
            col = COLUMNS[col_id]
            task, metric = (col.id, "mean") if col.mean_of else (col.task, col.metric)
            mask = ((stats["setting"] == key.group) & (stats["method"] == key.method) & (stats["base_model"] == key.model)
                    & (stats["pooling"] == key.pooling) & (stats["task"] == task) & (stats["metric"] == metric)
                    & (stats["split"] == "test") & (stats["subset"] == ""))
            got = stats[mask]
            if want.n == 0:
                assert got.empty, (key, col_id)
                continue
            (row,) = got.itertuples(index=False)
            assert row.mean == want.mean and row.n == want.n and row.seeds == tuple(want.seeds)
            assert (math.isnan(row.std) and math.isnan(want.std)) or row.std == want.std
            checked += 1
    assert checked >= 40  # every method's USEB cells, the USEB average and STSb
    # hand computations (tests/report/synthetic_results.py): TSDAE AskUbuntu 0.60, 0.62, 0.61
    tsdae = stats[(stats["method"] == "tsdae") & (stats["task"] == "askubuntu") & (stats["metric"] == "map")]
    assert tsdae["mean"].item() == pytest.approx(0.61) and tsdae["std"].item() == pytest.approx(0.01)
    # MLM's third AskUbuntu seed has no other task: the USEB average keeps seeds 0 and 1 only
    mlm = stats[(stats["method"] == "mlm") & (stats["task"] == "useb.avg")]
    assert mlm["seeds"].item() == (0, 1)
    assert mlm["mean"].item() == pytest.approx(((0.50 + 0.10 + 0.60 + 0.70) / 4 + (0.52 + 0.10 + 0.62 + 0.70) / 4) / 2)


def test_aggregate_refuses_results_that_are_not_seed_repeats(tmp_path):
    store = hand_store(tmp_path)
    add_result(store, "tsdae", 3, "askubuntu", {"map": 0.63}, sha="another-data-version")
    with pytest.raises(MixedRunsError, match="tsdae on askubuntu/test: the data differ"):
        usebench.aggregate(usebench.load_results(store))
    with pytest.raises(MixedRunsError):  # the report refuses the same cell
        index_results(iter_results(store)).cell(next(k for k in index_results(iter_results(store)).rows
                                                     if k.method == "tsdae"), COLUMNS["askubuntu"], "test")


def test_aggregate_refuses_other_configs_in_one_row(tmp_path):
    store = hand_store(tmp_path)
    add_result(store, "tsdae", 4, "askubuntu", {"map": 0.63}, config={"lr": 1e-4})
    with pytest.raises(MixedRunsError, match="configs differ beyond the seed"):
        usebench.aggregate(usebench.load_results(store))


def test_an_empty_or_missing_store(tmp_path):
    with pytest.warns(UserWarning, match="no results under"):
        frame = usebench.load_results(tmp_path)
    assert frame.empty and list(frame.columns) == list(RESULT_COLUMNS)
    assert usebench.aggregate(frame).empty
    with pytest.raises(BenchError, match="results directory .* does not exist"):
        usebench.load_results(tmp_path / "nowhere")


def test_a_store_becomes_a_table(tmp_path):
    """The docs' recipe: main scores, one row per report row (and model), one column per task."""
    stats = usebench.aggregate(usebench.load_results(hand_store(tmp_path)))
    assert "pooling" in usebench.table(stats).index.names  # every key column that differs between rows
    table = usebench.table(stats, index=["setting", "method"], scale=1.0, decimals=None)
    assert table.loc[("unsupervised", "ct"), "askubuntu"] == pytest.approx(0.56)
    assert table.loc[("unsupervised", "simcse"), "cqadupstack"] == pytest.approx(0.11)
    assert table.loc[("unsupervised", "tsdae"), "useb.avg"] == pytest.approx(
        (0.61 + 0.10 + 0.66 + 0.70) / 4)  # AskU. 0.61; CQADup. 0.10; TwitterP. (0.72 + 0.60) / 2; SciDocs 0.70
    assert set(ROW_COLUMNS) <= set(stats.columns)
