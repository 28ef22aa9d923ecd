"""Golden texts: a chapter's closing section rendered from a fixed record, held against the file
beside its test. `AT_UPDATE_GOLDEN=1 pytest ...` rewrites the file after a change to the wording;
read its diff before committing it."""

import os
from pathlib import Path


def assert_golden(text: str, path: Path) -> None:
    if os.environ.get("AT_UPDATE_GOLDEN") == "1":
        path.write_text(text + "\n", encoding="utf-8")
    assert path.is_file(), (
        f"no golden text {path}: run with AT_UPDATE_GOLDEN=1 to write it"
    )
    assert text + "\n" == path.read_text(encoding="utf-8"), (
        f"{path.name} differs: the wording changed; if on purpose, rerun with "
        "AT_UPDATE_GOLDEN=1 and read the diff"
    )
