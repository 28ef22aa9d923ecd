"""The book checks the profile's records (its book_run.json, the results files its chapters read)
before the first chapter runs, and names a broken one at its own path, never at the chapter's
staged copy of it."""

from __future__ import annotations

import pytest

from annotated_transformer.evaluation import results

from .test_book_run_folder import book, run  # noqa: F401 (book is a fixture)


@pytest.mark.parametrize(
    "name, text, problem",
    [
        (
            "book_run",
            '{"metrics": {"chapters": []}}',
            "metrics.chapters is [], not an object",
        ),
        ("book_run", '{"metrics":\n', "is not valid JSON (line 2 column 1"),
        ("translation", '{"name": "translation"}', "metrics is missing"),
    ],
)
def test_a_broken_record_is_named_at_its_path_before_any_chapter_runs(
    book,  # noqa: F811
    name,
    text,
    problem,
):
    broken = results.results_path(name, "smoke", book / "results")
    broken.parent.mkdir(parents=True)
    broken.write_text(text)
    with pytest.raises(ValueError) as caught:
        run(book, "08")
    message = str(caught.value)
    assert message.startswith(f"{broken} is not") and problem in message
    assert ".staging" not in message and "\n" not in message
    assert "git checkout -- " in message
    # no chapter ran: nothing was executed, staged or recorded
    assert not (book / "_build" / "executed").exists()
    assert not (book / "_build" / ".staging").exists()
    assert [p.name for p in broken.parent.glob("*.json")] == [f"{name}.json"]
    assert broken.read_text() == text
