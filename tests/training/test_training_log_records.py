"""A run's metrics log is read back whole, or refused in one line naming the file and line."""

import json

import pytest

from annotated_transformer.training.run_folder import METRICS_NAME
from annotated_transformer.training.training_log import read_metrics


def test_a_runs_records_are_read_back_oldest_first(tmp_path):
    records = [{"kind": "start"}, {"kind": "train", "loss": 1.5}, {"kind": "stop"}]
    text = "".join(json.dumps(r) + "\n" for r in records)
    (tmp_path / METRICS_NAME).write_text(text + "\n")
    assert read_metrics(tmp_path) == records
    assert read_metrics(tmp_path / "no_run") == []


def test_a_damaged_line_names_the_file_and_the_line(tmp_path):
    (tmp_path / METRICS_NAME).write_text('{"kind": "start"}\n{"kind": "tra\n')
    with pytest.raises(ValueError, match=rf"{METRICS_NAME}: line 2 is not valid JSON"):
        read_metrics(tmp_path)
