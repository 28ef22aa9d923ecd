"""`book --import-run` takes only what a returned run may hold: regular files and folders inside
it, the record's chapters the book's own, results files with plain names that no hand wrote,
published all at once. Anything else is refused in one line, with nothing written anywhere.
Fake runs in tmp folders: nothing here reads or writes the repository's results/."""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import signal
import stat
import tarfile
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from annotated_transformer.book import committed
from annotated_transformer.commands import book as book_command
from annotated_transformer.runtime import files
from tests.book.test_committed_runs import make_incoming_run

ROOT = Path(__file__).resolve().parents[2]
HAND = "# The gpu book\n\nWritten by hand.\n"


def _record_path(incoming: Path) -> Path:
    return incoming / "results" / "gpu" / "book_run.json"


def _rekey(incoming: Path, old: str, new: str, results: list[str] | None = None) -> None:
    """The incoming's record with chapter `old` named `new` (and listing `results`), its notebook
    moved to where the importer looks for `new`'s."""
    executed = incoming / "_build" / "executed" / "gpu" / "book"
    moved = Path(os.path.normpath(executed / f"{new}.ipynb"))
    moved.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(executed / f"{old}.ipynb", moved)
    record = json.loads(_record_path(incoming).read_text())
    chapters = record["metrics"]["chapters"]
    chapters[new] = chapters.pop(old)
    if results is not None:
        chapters[new]["results"] = results
    _record_path(incoming).write_text(json.dumps(record))


def _tarball(folder: Path, path: Path) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for part in ("_build", "results"):
            tar.add(folder / part, arcname=part)
    return path


def _snapshot(folder: Path) -> dict[str, object]:
    """Every entry under `folder`, links not followed: a file's bytes, a link's target."""
    seen: dict[str, object] = {}
    for parent, subfolders, names in os.walk(folder):
        for name in subfolders + names:
            path = Path(parent, name)
            rel = str(path.relative_to(folder))
            if path.is_symlink():
                seen[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                seen[rel] = "folder"
            elif path.is_file():
                seen[rel] = path.read_bytes()
            else:
                seen[rel] = stat.S_IFMT(path.lstat().st_mode)
    return seen


def _cli(root: Path, source: Path, capsys) -> tuple[int, list[str]]:
    parser = argparse.ArgumentParser()
    book_command.add_arguments(parser)
    args = parser.parse_args(
        ["--import-run", str(source), "--profile", "gpu", "--results-dir", str(root)]
    )
    code = book_command.run(args)
    return code, capsys.readouterr().err.splitlines()


# ----------------------------------------------------------------------------------------------
# The record's chapters are the book's


@pytest.mark.parametrize(
    "key, lands",
    [
        (
            "../../../book/01_attention",
            "clone/book/01_attention.ipynb",
        ),  # a chapter's notebook
        (
            "../../../../elsewhere/anything",
            "elsewhere/anything.ipynb",
        ),  # outside the clone
        ("99_not_a_chapter", "clone/results/book_gpu/notebooks/99_not_a_chapter.ipynb"),
    ],
)
def test_a_chapter_the_book_does_not_have_refuses_the_whole_import(
    tmp_path, capsys, key, lands
):
    clone = tmp_path / "clone"
    (clone / "book").mkdir(parents=True)
    (clone / "book" / "01_attention.ipynb").write_text("the chapter's own notebook")
    root = clone / "results"
    incoming = make_incoming_run(
        tmp_path / "incoming",
        {"01_attention": {"files": {"attention.json": "{}"}}, "02_model": {}},
    )
    _rekey(incoming, "01_attention", key)
    before = _snapshot(tmp_path)
    with pytest.raises(ValueError, match="of the book") as refused:
        committed.import_run(incoming, "gpu", results_dir=root, log=lambda _: None)
    assert "\n" not in str(refused.value) and key in str(refused.value)
    assert _snapshot(tmp_path) == before  # 02_model, a good chapter, is not taken either
    assert (
        clone / "book" / "01_attention.ipynb"
    ).read_text() == "the chapter's own notebook"
    assert not (tmp_path / lands).exists() or lands == "clone/book/01_attention.ipynb"
    code, err = _cli(root, incoming, capsys)
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ")
    assert _snapshot(tmp_path) == before


def test_a_notebook_of_no_chapter_of_the_book_is_refused(tmp_path):
    incoming = make_incoming_run(tmp_path / "incoming", {"01_attention": {}})
    executed = incoming / "_build" / "executed" / "gpu" / "book"
    (executed / "09_unknown.ipynb").write_text("{}")
    with pytest.raises(
        ValueError, match="'_build/executed/gpu/book/09_unknown.ipynb' is not"
    ):
        committed.import_run(
            incoming, "gpu", results_dir=tmp_path / "r", log=lambda _: None
        )
    assert not (tmp_path / "r").exists()


# ----------------------------------------------------------------------------------------------
# Regular files and folders only, from a folder as from a tarball


def _link_results_file(incoming: Path, outside: Path) -> str:
    (incoming / "results" / "gpu" / "attention.json").unlink()
    (incoming / "results" / "gpu" / "attention.json").symlink_to(outside / "secret.json")
    return "results/gpu/attention.json"


def _link_notebook(incoming: Path, outside: Path) -> str:
    notebook = incoming / "_build" / "executed" / "gpu" / "book" / "01_attention.ipynb"
    shutil.move(notebook, outside / "01_attention.ipynb")
    notebook.symlink_to(outside / "01_attention.ipynb")
    return "_build/executed/gpu/book/01_attention.ipynb"


def _link_results_folder(incoming: Path, outside: Path) -> str:
    shutil.move(incoming / "results" / "gpu", outside / "gpu")
    (incoming / "results" / "gpu").symlink_to(outside / "gpu", target_is_directory=True)
    return "results/gpu"


def _fifo(incoming: Path, outside: Path) -> str:
    os.mkfifo(incoming / "results" / "gpu" / "pipe.json")
    return "results/gpu/pipe.json"


@pytest.mark.parametrize(
    "make", [_link_results_file, _link_notebook, _link_results_folder, _fifo]
)
def test_a_folder_holding_a_link_or_a_special_file_is_refused(tmp_path, capsys, make):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.json").write_text('{"secret": 1}')
    incoming = make_incoming_run(
        tmp_path / "incoming", {"01_attention": {"files": {"attention.json": "{}"}}}
    )
    name = make(incoming, outside)
    root = tmp_path / "results"
    with pytest.raises(ValueError) as refused:
        committed.import_run(incoming, "gpu", results_dir=root, log=lambda _: None)
    line = str(refused.value)
    assert "\n" not in line and repr(name) in line
    assert "not a regular file or folder" in line
    assert not root.exists()
    code, err = _cli(root, incoming, capsys)
    assert code == 2 and len(err) == 1 and repr(name) in err[0]
    assert not root.exists()


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def _add_member(tarball: Path, member: tarfile.TarInfo) -> None:
    """`tarball` written again with `member` (a file holding "{}") after its own."""
    with tarfile.open(tarball) as tar:
        members = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar]
    with tarfile.open(tarball, "w:gz") as tar:
        for info, data in [*members, (member, b"{}")]:
            if info.isfile():
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)


@pytest.mark.parametrize(
    "member, why",
    [
        (_member("../escaped.json"), "climbs out of the run"),
        (_member("results/gpu/../../../escaped.json"), "climbs out of the run"),
        (_member("/tmp/absolute.json"), "an absolute path"),
        (_member("results/gpu/x.json", tarfile.SYMTYPE, "/etc/passwd"), "symbolic link"),
        (
            _member("results/gpu/y.json", tarfile.SYMTYPE, "book_run.json"),
            "symbolic link",
        ),
        (
            _member("results/gpu/z.json", tarfile.LNKTYPE, "results/gpu/book_run.json"),
            "hard link",
        ),
        (_member("results/gpu/dev", tarfile.CHRTYPE), "device, pipe or socket"),
        (_member("results/gpu/fifo", tarfile.FIFOTYPE), "device, pipe or socket"),
        (_member("results/gpu/book_run.json"), "in the run twice"),
    ],
)
def test_a_tarball_member_that_is_not_a_plain_file_inside_it_is_one_line(
    tmp_path, capsys, member, why
):
    incoming = make_incoming_run(tmp_path / "incoming", {"01_attention": {}})
    tarball = _tarball(incoming, tmp_path / "chapters_01.tgz")
    _add_member(tarball, member)
    root = tmp_path / "results"
    before = _snapshot(tmp_path)
    with pytest.raises(ValueError) as refused:
        committed.import_run(tarball, "gpu", results_dir=root, log=lambda _: None)
    line = str(refused.value)
    assert "\n" not in line and repr(member.name) in line and why in line
    code, err = _cli(root, tarball, capsys)
    assert code == 2 and len(err) == 1 and repr(member.name) in err[0]
    assert _snapshot(tmp_path) == before


def test_a_member_the_data_filter_refuses_is_one_line_too(tmp_path, monkeypatch):
    """tarfile's "data" filter stands behind the check: a member that got past it would be
    refused by the filter, in one line naming it, and nothing unpacked outside."""
    monkeypatch.setattr(committed, "_member_problem", lambda *_: None)
    incoming = make_incoming_run(tmp_path / "incoming", {"01_attention": {}})
    tarball = _tarball(incoming, tmp_path / "chapters_01.tgz")
    escaped = f"../{tmp_path.name}-escaped.json"
    _add_member(tarball, _member(escaped))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    with mock.patch.object(tempfile, "tempdir", str(scratch)):
        with pytest.raises(ValueError, match="outside the destination") as refused:
            committed.import_run(tarball, "gpu", results_dir=tmp_path / "r", log=print)
    assert "\n" not in str(refused.value) and repr(escaped) in str(refused.value)
    assert not (tmp_path / f"{tmp_path.name}-escaped.json").exists()
    assert not list(scratch.iterdir()) and not (tmp_path / "r").exists()


def test_a_damaged_tarball_is_one_line(tmp_path, capsys):
    incoming = make_incoming_run(tmp_path / "incoming", {"01_attention": {}})
    tarball = _tarball(incoming, tmp_path / "chapters_01.tgz")
    tarball.write_bytes(tarball.read_bytes()[:200])
    code, err = _cli(tmp_path / "results", tarball, capsys)
    assert code == 2 and len(err) == 1 and "not a whole tarball" in err[0]
    assert not (tmp_path / "results").exists()


# ----------------------------------------------------------------------------------------------
# Results names: plain results files, never a committed file no chapter wrote


@pytest.mark.parametrize(
    "name, why",
    [
        ("README.md", "not a results file"),
        ("notes.txt", "that no chapter wrote"),
        ("notebooks/01_attention.json", "a file of the layout"),
        ("book_run.json", "a file of the layout"),
        (".hidden.json", "not a plain relative name"),
        ("a b.json", "not a plain relative name"),
        ("linked/x.json", "a link of"),
    ],
)
def test_a_results_name_that_is_not_a_chapter_s_results_file_is_refused(
    tmp_path, capsys, name, why
):
    root = tmp_path / "results"
    target = root / "book_gpu"
    target.mkdir(parents=True)
    (target / "README.md").write_text(HAND)
    (target / "notes.txt").write_text(HAND)
    (tmp_path / "elsewhere").mkdir()
    (target / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    incoming = make_incoming_run(
        tmp_path / "incoming", {"01_attention": {"files": {"attention.json": "{}"}}}
    )
    (incoming / "results" / "gpu" / Path(name).parent).mkdir(parents=True, exist_ok=True)
    if not (incoming / "results" / "gpu" / name).exists():
        (incoming / "results" / "gpu" / name).write_text("replaced")
    _rekey(incoming, "01_attention", "01_attention", results=["attention.json", name])
    before = _snapshot(tmp_path)
    with pytest.raises(ValueError) as refused:
        committed.import_run(incoming, "gpu", results_dir=root, log=lambda _: None)
    line = str(refused.value)
    assert "\n" not in line and repr(name) in line and why in line
    code, err = _cli(root, incoming, capsys)
    assert code == 2 and len(err) == 1
    assert _snapshot(tmp_path) == before
    assert (target / "README.md").read_text() == HAND


def test_an_unlisted_file_is_never_guessed_to_be_a_hand_written_one(tmp_path):
    """A record without results lists: a changed README.md of the profile's folder, written as
    the chapter ran, is not taken for one of its results."""
    incoming = make_incoming_run(
        tmp_path / "incoming",
        {"01_attention": {"files": {"attention.json": "{}"}, "listed": False}},
    )
    stamp = committed._date("2026-11-27T10:00:00+00:00").timestamp()
    for name in ("attention.json", "README.md"):
        (incoming / "results" / "gpu" / name).write_text(f"{name} as the chapter left it")
        os.utime(incoming / "results" / "gpu" / name, (stamp, stamp))
    root = tmp_path / "results"
    (root / "book_gpu").mkdir(parents=True)
    (root / "book_gpu" / "README.md").write_text(HAND)
    report = committed.import_run(incoming, "gpu", results_dir=root, log=lambda _: None)
    assert report.imported == ["01_attention"]
    assert committed.read_run("gpu", root)["metrics"]["chapters"]["01_attention"][
        "results"
    ] == ["attention.json"]
    assert (root / "book_gpu" / "README.md").read_text() == HAND


# ----------------------------------------------------------------------------------------------
# An interrupt publishes all of an import or none of it


def _two_incoming_runs(tmp_path: Path) -> tuple[Path, Path]:
    """A results root holding a committed run of 01, and a later incoming of 01 and 02."""
    root = tmp_path / "results"
    first = make_incoming_run(
        tmp_path / "first",
        {"01_attention": {"files": {"attention.json": '{"v": 1}'}}},
        date="2026-11-27T10:00:00+00:00",
    )
    committed.import_run(first, "gpu", results_dir=root, log=lambda _: None)
    second = make_incoming_run(
        tmp_path / "second",
        {
            "01_attention": {"files": {"attention.json": '{"v": 2}'}},
            "02_model": {"files": {"model.json": '{"v": 2}'}},
        },
        date="2026-11-28T10:00:00+00:00",
    )
    return root, second


def test_ctrl_c_while_the_files_are_moved_into_place_publishes_them_all(
    tmp_path, monkeypatch
):
    root, second = _two_incoming_runs(tmp_path)
    target = root / "book_gpu"
    replace = os.replace
    moved = []

    def interrupted(src, dst):
        replace(src, dst)
        if target in Path(dst).parents:
            moved.append(dst)
            if len(moved) == 1:
                os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C after the first rename

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        committed.import_run(second, "gpu", results_dir=root, log=lambda _: None)
    monkeypatch.undo()
    assert len(moved) == 5  # two notebooks, two results files, the record
    entries = committed.read_run("gpu", root)["metrics"]["chapters"]
    assert set(entries) == {"01_attention", "02_model"}
    assert entries["01_attention"]["date"].startswith("2026-11-28")
    assert json.loads((target / "attention.json").read_text()) == {"v": 2}
    assert json.loads((target / "model.json").read_text()) == {"v": 2}
    assert not list(target.rglob("*.part"))


def test_ctrl_c_before_the_files_are_moved_leaves_the_committed_run_whole(
    tmp_path, monkeypatch, capsys
):
    root, second = _two_incoming_runs(tmp_path)
    before = _snapshot(root)
    calls = []

    def interrupt(staged, target):
        calls.append(target)
        if len(calls) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(files, "_before_publish", interrupt)
    code, err = _cli(root, second, capsys)
    assert code == 130 and len(err) == 1 and "all of the import or none of it" in err[0]
    assert _snapshot(root) == before


# ----------------------------------------------------------------------------------------------
# The property: any layout imports into results/book_gpu/ only, or is refused with nothing written

_PART = st.one_of(
    st.sampled_from(
        [
            "_build",
            "executed",
            "gpu",
            "book",
            "results",
            "..",
            ".",
            "01_attention.ipynb",
            "02_model.ipynb",
            "attention.json",
            "book_run.json",
            "README.md",
            "notebooks",
            "notes.txt",
        ]
    ),
    st.text(
        st.characters(blacklist_categories=("Cs",), blacklist_characters="/\0."),
        min_size=1,
        max_size=6,
    ),
)
_NAME = st.lists(_PART, min_size=1, max_size=4).map("/".join)
_KIND = st.one_of(
    st.sampled_from(["file", "folder"]),
    st.sampled_from(["file", "folder", "link in", "link out", "hard link", "fifo"]),
)
_ENTRY = st.tuples(st.booleans(), _NAME, _KIND)  # (absolute, name, kind)
_CHAPTER = st.sampled_from(["01_attention", "02_model", "03_why_self_attention"])
_KEY = st.one_of(
    _CHAPTER,
    _CHAPTER,
    st.sampled_from(
        [
            "01_attention",
            "02_model",
            "03_why_self_attention",
            "../../../book/01_attention",
            "../../outside/x",
            "01_attention/../../x",
            "{sandbox}/outside/abs",
            "99_missing",
            "01_attention\n",
            "notebooks",
            "",
        ]
    ),
    st.text(
        st.characters(blacklist_categories=("Cs",), blacklist_characters="/\0"),
        max_size=8,
    ),
)
_RESULTS = st.lists(
    st.one_of(
        st.sampled_from(["attention.json", "model.json", "sub/extra.txt", "table.csv"]),
        st.sampled_from(
            [
                "attention.json",
                "model.json",
                "sub/extra.txt",
                "README.md",
                "notes.txt",
                "book_run.json",
                "notebooks/x.json",
                "../climbed.json",
                "../../../x.json",
                "{sandbox}/outside/abs.json",
                "linked/x.json",
                "",
            ]
        ),
        _NAME,
    ),
    max_size=3,
)


def _why(error: Exception) -> str:
    """What kind of refusal `error` is, for the property's statistics."""
    for phrase in (
        "not one of the book's",
        "not the notebook of a chapter",
        "climbs out",
        "absolute path",
        "not a regular file or folder",
        "in the run twice",
        "inside a file",
        "both a file and a folder",
        "not a plain relative name",
        "a file of the layout",
        "not a results file",
        "no chapter wrote",
        "a link of",
        "which the run does not hold",
    ):
        if phrase in str(error):
            return phrase
    return f"{type(error).__name__}: {error}"


def _lay_out(incoming: Path, sandbox: Path, entries, tarball: Path | None) -> Path:
    """`incoming` with the extra `entries` in it (a folder), or packed with them (a tarball)."""
    outside = sandbox / "outside"
    if tarball is None:
        for absolute, name, kind in entries:
            path = Path(os.path.normpath(incoming / name))
            if absolute or incoming not in path.parents:
                continue  # a folder's entries are inside it
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                if kind == "file":
                    path.write_text("{}")
                elif kind == "folder":
                    path.mkdir()
                elif kind == "link in":
                    path.symlink_to(incoming / "results" / "gpu" / "book_run.json")
                elif kind == "link out":
                    path.symlink_to(outside / "secret.json")
                elif kind == "hard link":
                    os.link(outside / "secret.json", path)
                else:
                    os.mkfifo(path)
            except OSError:
                continue  # the name is taken, or a file stands where a folder goes
        return incoming
    with tarfile.open(tarball, "w:gz") as tar:
        for part in ("_build", "results"):
            tar.add(incoming / part, arcname=part)
        for absolute, name, kind in entries:
            info = tarfile.TarInfo(f"{sandbox}/{name}" if absolute else name)
            data = b""
            if kind == "file":
                data = b"{}"
            elif kind == "folder":
                info.type = tarfile.DIRTYPE
            elif kind == "link in":
                info.type, info.linkname = tarfile.SYMTYPE, "book_run.json"
            elif kind == "link out":
                info.type, info.linkname = tarfile.SYMTYPE, str(outside / "secret.json")
            elif kind == "hard link":
                info.type, info.linkname = tarfile.LNKTYPE, "results/gpu/book_run.json"
            else:
                info.type = tarfile.FIFOTYPE
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)
    return tarball


def _one_layout(as_tarball, keys, listed, entries):
    """A returned run (a folder or a tarball) with the `keys` for its two chapters, `listed`
    results names for them and the extra `entries`, imported into a clone in a sandbox: either
    everything that changes lies in results/book_gpu/ (regular files, nothing deleted, the
    hand-written files as they were) or the import is refused in one line and nothing in the
    sandbox changed, its temporary folders included."""
    with tempfile.TemporaryDirectory() as scratch:
        sandbox = Path(scratch)
        (sandbox / "outside").mkdir()
        (sandbox / "outside" / "secret.json").write_text('{"secret": 1}')
        (sandbox / "tmp").mkdir()
        clone = sandbox / "clone"
        (clone / "book").mkdir(parents=True)
        (clone / "book" / "01_attention.ipynb").write_text("the chapter's own")
        root = clone / "results"
        target = root / "book_gpu"
        target.mkdir(parents=True)
        (target / "README.md").write_text(HAND)
        (target / "notes.txt").write_text(HAND)
        (target / "linked").symlink_to(sandbox / "outside", target_is_directory=True)
        incoming = make_incoming_run(
            sandbox / "incoming",
            {
                "01_attention": {"files": {"attention.json": "{}"}},
                "02_model": {"files": {"model.json": "{}"}},
            },
        )
        for old, new, names in zip(["01_attention", "02_model"], keys, listed):
            new = new.replace("{sandbox}", str(sandbox))
            names = [n.replace("{sandbox}", str(sandbox)) for n in names]
            for name in names:
                path = Path(os.path.normpath(incoming / "results" / "gpu" / name))
                if incoming in path.parents and not path.exists():
                    try:
                        path.parent.mkdir(parents=True, exist_ok=True)
                        path.write_text('{"v": 2}')
                    except OSError:
                        pass  # a file stands where a folder goes
            moved = Path(
                os.path.normpath(incoming / "_build/executed/gpu/book" / f"{new}.ipynb")
            )
            if sandbox in moved.parents:
                try:
                    _rekey(incoming, old, new, results=names)
                except OSError:
                    pass
        tarball = sandbox / "chapters.tgz" if as_tarball else None
        source = _lay_out(incoming, sandbox, entries, tarball)
        before = _snapshot(sandbox)
        with mock.patch.object(tempfile, "tempdir", str(sandbox / "tmp")):
            try:
                committed.import_run(source, "gpu", results_dir=root, log=lambda _: None)
            except (ValueError, OSError) as error:
                event(f"refused: {_why(error)}")
                assert "\n" not in str(error), str(error)
                assert _snapshot(sandbox) == before
                return
        event("imported")
        after = _snapshot(sandbox)
        changed = {k for k in after if after[k] != before.get(k)}
        assert set(before) <= set(after)  # nothing deleted
        assert all(k.startswith("clone/results/book_gpu/") for k in changed), changed
        assert all(after[k] == "folder" or isinstance(after[k], bytes) for k in changed)
        assert (target / "README.md").read_text() == HAND
        assert (target / "notes.txt").read_text() == HAND
        assert not list((sandbox / "tmp").iterdir())


def _property(examples: int):
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )(
        given(
            as_tarball=st.booleans(),
            keys=st.lists(_KEY, min_size=1, max_size=2),
            listed=st.lists(_RESULTS, min_size=2, max_size=2),
            entries=st.lists(_ENTRY, max_size=4),
        )(_one_layout)
    )


test_any_layout_imports_into_the_committed_run_only_or_is_refused_in_one_line = _property(
    25
)
test_many_layouts_import_into_the_committed_run_only_or_are_refused = pytest.mark.slow(
    _property(500)
)
