"""`table3 --merge` and the export read their parts as strict JSON records: a part holding a
perplexity that is not a number, a key twice, or lacking a field the merge reads is one line naming
the part, and nothing is written."""

from __future__ import annotations

import pytest

from .test_extended import _merge, _part


def _plant(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    "bad, says",
    [
        ("NaN", "it holds NaN, which JSON has no number for"),
        ("Infinity", "it holds Infinity, which JSON has no number for"),
        ("-Infinity", "it holds -Infinity, which JSON has no number for"),
        ("1e999", "the number 1e999 is beyond a float's range"),
    ],
)
def test_a_part_with_a_perplexity_that_is_no_number_is_refused(
    tmp_path, capsys, bad, says
):
    good = _part(tmp_path, "a", ["base"])
    broken = _part(tmp_path, "b", ["A1"])
    _plant(broken, '"ppl": 30.0', f'"ppl": {bad}')
    to = tmp_path / "runs.json"
    capsys.readouterr()
    assert _merge(good, broken, to=to) != 0
    err = capsys.readouterr().err
    (line,) = [line for line in err.splitlines() if line.startswith("error:")]
    assert str(broken) in line and says in line and "export it again" in line
    assert not to.exists()


def test_a_merge_into_an_export_holding_nan_leaves_it_as_it_was(tmp_path, capsys):
    to = _part(tmp_path, "a", ["base"])
    _plant(to, '"ppl": 29.0', '"ppl": NaN')
    before = to.read_bytes()
    capsys.readouterr()
    assert _merge(_part(tmp_path, "b", ["A1"]), to=to) != 0
    err = capsys.readouterr().err
    assert f"{to} is not valid JSON (it holds NaN" in err and err.count("error:") == 1
    assert to.read_bytes() == before


def test_a_part_with_a_key_twice_is_refused(tmp_path, capsys):
    good = _part(tmp_path, "a", ["base"])
    broken = _part(tmp_path, "b", ["A1"])
    _plant(broken, '"ppl": 30.0', '"ppl": 30.0, "ppl": 3.0')
    to = tmp_path / "runs.json"
    capsys.readouterr()
    assert _merge(good, broken, to=to) != 0
    err = capsys.readouterr().err
    assert 'an object holds the key "ppl" twice' in err and str(broken) in err
    assert err.count("error:") == 1 and not to.exists()


@pytest.mark.parametrize("field", ["written", "machine"])
def test_a_part_missing_a_field_the_merge_reads_names_part_field_and_fix(
    tmp_path, capsys, field
):
    """A part without `written` (or `machine`) was a KeyError from the merge's summary."""
    good = _part(tmp_path, "a", ["base"])
    broken = _part(tmp_path, "b", ["A1"])
    text = broken.read_text()
    start = text.index(f'"{field}"')
    end = text.index("\n", start)
    broken.write_text(
        text[:start] + f'"not_{field}"' + text[start + len(field) + 2 : end] + text[end:]
    )
    to = tmp_path / "runs.json"
    capsys.readouterr()
    assert _merge(good, broken, to=to) != 0
    err = capsys.readouterr().err
    (line,) = [line for line in err.splitlines() if line.startswith("error:")]
    assert f"{broken} is not a long run's export: {field} is missing" in line
    assert "export it again from its run folder (table3 --export-only --export" in line
    assert not to.exists()


def test_two_merges_into_one_export_at_once_lose_nothing(tmp_path, capsys, monkeypatch):
    """A merge reads the export and replaces it: while one holds it, a second is refused at
    once in one line, and the first one's jobs stay in the file."""
    import multiprocessing

    from annotated_transformer.chapters.model_variations import verdicts
    from annotated_transformer.runtime.locks import output_lock

    monkeypatch.setenv("AT_CACHE_DIR", str(tmp_path / "cache"))
    to = tmp_path / "runs.json"
    assert _merge(_part(tmp_path, "a", ["base"]), to=to) == 0
    held = multiprocessing.get_context("spawn").Event()
    release = multiprocessing.get_context("spawn").Event()
    other = multiprocessing.get_context("spawn").Process(
        target=_hold, args=(str(to), str(tmp_path / "cache"), held, release)
    )
    other.start()
    try:
        assert held.wait(60)
        capsys.readouterr()
        assert _merge(_part(tmp_path, "b", ["A1"]), to=to) != 0
        err = capsys.readouterr().err
        (line,) = [line for line in err.splitlines() if line.startswith("error:")]
        assert "another command is writing" in line and str(to) in line
    finally:
        release.set()
        other.join(60)
    assert _merge(_part(tmp_path, "c", ["A1"]), to=to) == 0
    rows = {job["row"] for job in verdicts.read_extended(to)["jobs"]}
    assert rows == {"base", "A1"}
    with output_lock(to, "a test"):  # released by the merges: free again
        pass


def _hold(path, cache, held, release) -> None:
    import os

    os.environ["AT_CACHE_DIR"] = cache
    from annotated_transformer.runtime.locks import output_lock

    with output_lock(path, "a test"):
        held.set()
        release.wait(60)
