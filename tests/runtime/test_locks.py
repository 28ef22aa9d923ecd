"""One process per output folder: a second holder is refused at once with the caller's line, and
the folder is free again once the first lets go."""

import pytest

from annotated_transformer.runtime.locks import folder_lock


class Busy(Exception):
    pass


def test_a_second_holder_is_refused_with_the_callers_line_until_the_first_lets_go(
    tmp_path,
):
    path = tmp_path / ".lock"
    with folder_lock(path, "first"):
        with pytest.raises(Busy, match="^held: wait or pass another --out$"):
            with folder_lock(path, "held: wait or pass another --out", Busy):
                pass
    with folder_lock(path, "again"):
        pass


def test_the_lock_is_let_go_when_the_block_raises(tmp_path):
    path = tmp_path / ".lock"
    with pytest.raises(KeyError):
        with folder_lock(path, "first"):
            raise KeyError("inside")
    with folder_lock(path, "free again"):
        pass
