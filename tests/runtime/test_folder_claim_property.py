"""Whatever a user keeps in a folder, a claim of it leaves every file byte for byte as it was:
refused by a command (`check_own_folder`), or taken by a run (`claim_run_folder`, which removes a
killed write's `.*.part` leftovers only from a folder already marked as `train`'s)."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from annotated_transformer.runtime import ownership
from annotated_transformer.training.run_folder import RunFolderError, claim_run_folder

# names a killed write, a run or an export would also use, among plain ones
NAME = st.one_of(
    st.from_regex(
        r"\.?[a-z]{1,6}(\.[a-z]{1,3})?(\.[a-z0-9]{6})?(\.part)?", fullmatch=True
    ),
    st.sampled_from(
        [".lock", "checkpoints", "replaced", "notes.part", ".x.part", "tokenizer.json"]
    ),
)
LAYOUT = st.lists(
    st.tuples(
        st.lists(NAME, min_size=1, max_size=3),
        st.one_of(st.binary(max_size=64), st.none()),  # None: a folder
    ),
    min_size=1,
    max_size=8,
)


def build(folder: Path, layout) -> None:
    for parts, content in layout:
        path = folder.joinpath(*parts)
        with contextlib.suppress(OSError):  # a name already taken by the other kind
            if content is None:
                path.mkdir(parents=True, exist_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)


def tree(folder: Path) -> dict[str, bytes | None]:
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout=LAYOUT, command=st.sampled_from(["train", "export-onnx"]))
def test_a_refused_claim_leaves_every_file_as_it_was(layout, command):
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "mine"
        folder.mkdir()
        build(folder, layout)
        assume(ownership.owner_of_folder(folder) is None)  # no run's or export's mark
        before = tree(folder)
        # something besides the empty lock a killed start leaves (which leaves a folder free)
        assume(set(before.items()) - {(".lock", b"")})
        with pytest.raises(ownership.OwnedFolderError, match="did not make"):
            ownership.check_own_folder("--out", folder, command=command)
        assert tree(folder) == before


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout=LAYOUT, overwrite=st.booleans())
def test_a_run_claiming_a_users_folder_deletes_nothing(layout, overwrite):
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "mine"
        folder.mkdir()
        build(folder, layout)
        assume(ownership.owner_of_folder(folder) is None)
        before = tree(folder)
        # (a file named like a run file; a folder named like the lock)
        with contextlib.suppress(RunFolderError, OSError):
            with claim_run_folder(folder, resume=False, overwrite=overwrite):
                pass
        after = tree(folder)
        # the claim adds its mark and its lock, and changes nothing that was there
        assert {k: after.get(k, "gone") for k in before} == before
        assert set(after) - set(before) <= {ownership.CLAIM_MARKER, ".lock"}
