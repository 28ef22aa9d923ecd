"""Staged writes: a reader sees the old output or the new one, never half of either.

Every file the package produces (checkpoints, averages, tokenizers, downloaded corpora, results,
translations, exports, executed notebooks, the site) goes through the one helper of this module:
`atomic_write` for a file, `staged_files` for a set of files written into a folder by a library
that wants paths (the ONNX export), `staged_tree` for a folder the command owns whole (the site).
The bytes land in a temporary sibling, are flushed, and only then `os.replace` moves them into
place; `_before_publish` is the one moment between the two (the tests interrupt it). A crash, a
full disk or a Ctrl-C mid-write leaves the previous version intact and no temporary file behind,
and a full disk is one line (`DiskFull`, an OSError), whatever library was writing. A new file
keeps the permissions of the one it replaces (a new file gets the umask's, as `open` would give
it), and a symlink is written through: its target gets the new bytes, the link stays a link.

What is not a regular file is never replaced by one: a FIFO, a character device (`/dev/null`, a
terminal) and a name of an open file (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`, whatever it
points at) are opened and written (`written_through`); a block device or a socket is refused in
one line.

`clone_root` is the one place that asks whether the package runs from a clone (results/, the book,
the cache of the web runtime live there) or from an installed copy.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator

# A site Sphinx built holds this file; a folder without it is not replaced as a site.
SITE_MARKER = ".buildinfo"


class DiskFull(OSError):
    """No space (or quota) left where an output was being written; the previous version is intact."""


def _disk_full_cause(error: BaseException) -> OSError | None:
    """The ENOSPC/EDQUOT error behind `error`, also when a library wrapped it (torch's archive
    writer raises RuntimeError with the OSError as its context, or says "file write failed")."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            return error
        if isinstance(error, RuntimeError) and "file write failed" in str(error):
            return OSError(errno.ENOSPC, "file write failed")
        error = error.__cause__ or error.__context__
    return None


def _free_space(folder: Path) -> str:
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return "unknown"
    return f"{free / 2**20:,.0f} MiB"


@contextlib.contextmanager
def _disk_full_named(path: str | os.PathLike) -> Iterator[None]:
    """A full disk in the block, whatever library was writing, is one `DiskFull` line naming
    `path`; any other error passes unchanged."""
    try:
        yield
    except Exception as error:
        if _disk_full_cause(error) is None:
            raise
        folder = Path(path).parent
        raise DiskFull(
            errno.ENOSPC,
            f"no space left on the disk of {folder} to write {Path(path).name} ({_free_space(folder)} "
            "free): free some space or write elsewhere; the previous version of the file is intact",
        ) from error


@contextlib.contextmanager
def _naming(destination: str | os.PathLike) -> Iterator[None]:
    """An OSError in the block (making the temporary sibling, moving it into place) names the
    destination the user asked for, not the temporary `.part` file it went through."""
    try:
        yield
    except DiskFull:
        raise
    except OSError as error:
        if error.errno is None:
            raise
        raise type(error)(error.errno, error.strerror, str(destination)) from error


# What tempfile adds around the stem of a staging name: "." + stem + "." + 8 random characters + ".part".
_STAGING_EXTRA = len(".") + len(".") + 8 + len(".part")


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def staging_prefix(folder: str | os.PathLike, name: str) -> str:
    """The prefix (".<name>.") of the staging sibling of `folder`/`name`, shortened when the whole
    staging name would not fit the file system's limit on one name (NAME_MAX, 255 bytes), so every
    name that may exist may also be written: its first bytes, then "~" and 8 hex digits of a hash
    of the whole name, so two long names with the same beginning stage under different names."""
    encoded = os.fsencode(name)
    room = _name_max(Path(folder)) - _STAGING_EXTRA
    if len(encoded) <= room:
        return f".{name}."
    digest = hashlib.sha256(encoded).hexdigest()[:8]
    head = encoded[: room - len(digest) - 1]
    # Cut on a character, not inside one: an incomplete UTF-8 sequence at the end is dropped.
    for end in range(len(head), max(len(head) - 4, 0), -1):
        try:
            head[:end].decode("utf-8")
        except UnicodeDecodeError:
            continue
        head = head[:end]
        break
    return f".{os.fsdecode(head)}~{digest}."


def _before_publish(staged: Path, target: Path) -> None:
    """Called with the complete staged output just before it is moved into place: the one moment
    every producer passes through (a test interrupts it here, as a signal or a full disk would)."""


# The folders whose entries name a process's open files (/dev/fd is a link to one of them).
_OPEN_FILES = re.compile(r"/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/fd")


def _names_an_open_file(path: Path) -> bool:
    """Whether `path`, or a link on the way to what it points at, is an entry of a process's
    open files (`/dev/stdout` -> `/proc/self/fd/1`)."""
    current = Path(os.path.abspath(path))
    for _ in range(40):  # the kernel's own limit on links followed
        if _OPEN_FILES.fullmatch(os.path.realpath(current.parent)):
            return True
        if not current.is_symlink():
            return False
        current = Path(os.path.abspath(current.parent / os.readlink(current)))
    return False


def written_through(path: str | os.PathLike) -> bool:
    """Whether `atomic_write` opens and writes `path` instead of replacing it: a FIFO, a character
    device, or a name of an open file. Raises OSError, naming the fix, for a block device or a
    socket, which no command writes."""
    try:
        mode = os.stat(path).st_mode  # follows links, /proc's too
    except OSError:  # missing, a dangling link, a folder on the way that is a file
        return False
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return True
    if stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
        kind = "a block device" if stat.S_ISBLK(mode) else "a socket"
        raise OSError(f"{path} is {kind}, not a file: name a file, a FIFO or a terminal")
    return stat.S_ISREG(mode) and _names_an_open_file(Path(path))


def _staging_file(given: Path) -> tuple[Path, int, str]:
    """(the file `given` is published as: a link's target; the open descriptor and the name of a
    new staging sibling of it); an error making the sibling names `given`."""
    target = Path(os.path.realpath(given)) if given.is_symlink() else given
    target.parent.mkdir(parents=True, exist_ok=True)
    prefix = staging_prefix(target.parent, target.name)
    with _naming(given):
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=prefix, suffix=".part")
    return target, fd, name


def atomic_write(path: str | os.PathLike, fill: Callable[[BinaryIO], None]) -> Path:
    """Call `fill(handle)` on a temporary binary file next to `path`, then move it into place
    (`staged_path`).

    If `fill` raises (a checksum that does not match, say), nothing is moved and the error propagates.
    Returns `path` as given (a symlink's own name, not its target's). An output that is not a
    regular file (`written_through`) is opened and appended to instead: a FIFO or a device it is
    writing, and through `/dev/stdout` to a file it keeps what the process wrote there before.
    """
    given = Path(path)
    mode = "ab" if written_through(given) else "wb"
    with staged_path(given) as staged, open(staged, mode) as handle:
        fill(handle)
        handle.flush()
    return given


@contextlib.contextmanager
def staged_files(folder: str | os.PathLike) -> Iterator[Path]:
    """Write files into the yielded staging folder; when the block ends without an error, each is
    moved to the same name under `folder` (other files there are left alone).

    For libraries that write by path (torch.onnx.export): nothing under `folder` changes until all
    of them are complete. An error or interrupt removes the staging folder and changes nothing.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with _naming(folder):
        stage = Path(tempfile.mkdtemp(dir=folder, prefix=".staged.", suffix=".part"))
    try:
        with _disk_full_named(folder / "(staged files)"):
            yield stage
            files = sorted(p for p in stage.rglob("*") if p.is_file())
            _before_publish(stage, folder)
        for path in files:
            target = folder / path.relative_to(stage)
            with _naming(target):
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


@contextlib.contextmanager
def staged_tree(
    folder: str | os.PathLike, *, marker: str | None = None
) -> Iterator[Path]:
    """Build a whole folder in the yielded sibling; when the block ends without an error it
    replaces `folder` (the old one is removed only after the new one is in place).

    For outputs the command owns whole (the site). `marker`: a file the old folder must hold to
    be replaced (a folder of someone else's is refused, not removed; `check_replaceable_tree`).
    """
    folder = Path(folder)
    check_replaceable_tree(folder, marker)
    folder.parent.mkdir(parents=True, exist_ok=True)
    prefix = staging_prefix(folder.parent, folder.name)
    with _naming(folder):
        stage = Path(tempfile.mkdtemp(dir=folder.parent, prefix=prefix, suffix=".part"))
    old = stage.with_suffix(".old")
    try:
        with _disk_full_named(folder / "(staged folder)"):
            yield stage
            _before_publish(stage, folder)
        with _naming(folder):
            os.chmod(stage, 0o777 & ~_umask())  # mkdtemp made it 0700
            if folder.exists():
                os.replace(folder, old)
            os.replace(stage, folder)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """A SIGINT (Ctrl-C) or SIGTERM that comes during the block takes effect when it ends, as it
    would have at its start: for the renames of a `Publication`, so that an interrupt never
    publishes part of it. Only the main thread handles signals; elsewhere this holds nothing."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    held = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(signum)
        if handler is not None:  # None: a handler Python did not install, left alone
            held[signum] = signal.signal(signum, lambda num, _frame: caught.append(num))
    try:
        yield
    finally:
        for signum, handler in held.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(caught):
            signal.raise_signal(signum)


class Publication:
    """Several files published together, for outputs that are one thing (a book chapter's
    notebook, results and record entry): `add` stages each next to its destination (where a full
    disk shows, before anything changes), and leaving the `publication()` block moves them all
    into place with renames only, a Ctrl-C among them taking effect after the last (a folder
    where a file goes is refused before the first); an error in the block discards them all."""

    def __init__(self) -> None:
        self.staged: list[tuple[Path, Path]] = []

    def add(self, path: str | os.PathLike, source: str | os.PathLike) -> None:
        target, fd, tmp_name = _staging_file(Path(path))
        self.staged.append((Path(tmp_name), target))
        with _disk_full_named(target):
            with os.fdopen(fd, "wb") as handle, open(source, "rb") as original:
                shutil.copyfileobj(original, handle)
                handle.flush()
                os.fchmod(handle.fileno(), 0o666 & ~_umask())
                os.fsync(handle.fileno())

    def _commit(self) -> None:
        for tmp, target in self.staged:
            with _disk_full_named(target):
                _before_publish(tmp, target)
        for _, target in self.staged:
            if target.is_dir():
                raise IsADirectoryError(
                    errno.EISDIR,
                    "a folder stands where a file is to be published: move it away",
                    str(target),
                )
        with _signals_held():  # all the renames, or (an error aside) none
            for tmp, target in self.staged:
                with _naming(target):
                    os.replace(tmp, target)

    def _discard(self) -> None:
        for tmp, _ in self.staged:
            tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def publication() -> Iterator[Publication]:
    pub = Publication()
    try:
        yield pub
        pub._commit()
    finally:
        pub._discard()


def check_replaceable_tree(folder: str | os.PathLike, marker: str | None) -> None:
    """Refuse, before any work, a folder `staged_tree` would replace that is not its own output."""
    folder = Path(folder)
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise FileExistsError(
            f"{folder} is a link or a file, not a folder this command built: remove it or write elsewhere"
        )
    if (
        marker
        and folder.is_dir()
        and any(folder.iterdir())
        and not (folder / marker).is_file()
    ):
        raise FileExistsError(
            f"{folder} holds files this command did not build (no {marker}): it would be "
            "replaced; move them, or write elsewhere"
        )


def _umask() -> int:
    """This process's umask: read from /proc where it can be (setting it to read it is racy)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    return atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def move_aside(source: str | os.PathLike, target: str | os.PathLike) -> Path:
    """Rename the file `source` to `target` (absent, on the same file system), making the folders
    on the way: how an old output is set aside, never copied or deleted."""
    target = Path(target)
    with _naming(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)
    return target


def remove_empty_folder(folder: str | os.PathLike) -> bool:
    """Remove `folder` if it is empty; whether it went."""
    try:
        Path(folder).rmdir()
    except OSError:
        return False
    return True


@contextlib.contextmanager
def scratch_folder(prefix: str = "at-") -> Iterator[Path]:
    """A private temporary folder for files that are not outputs, gone when the block ends."""
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        yield Path(folder)


def check_can_write(folder: str | os.PathLike) -> None:
    """Make `folder` if needed and create (and drop) a nameless file in it: OSError when the
    folder cannot take outputs, found before any long work."""
    ensure_folder(folder)
    with tempfile.TemporaryFile(dir=folder):
        pass


def unpack_tarball(tar, folder: str | os.PathLike) -> None:
    """Unpack the open tarball `tar` into `folder` (a scratch folder) with tarfile's `data`
    filter where Python has it: no member lands outside, no link or device is made."""
    import tarfile

    if hasattr(tarfile, "data_filter"):
        tar.extractall(folder, filter="data")
    else:  # a Python before 3.10.12 / 3.11.4: the caller checks the members first
        tar.extractall(folder)


def make_world_readable(folder: str | os.PathLike) -> None:
    """Give every file directly in `folder` mode 0644: an ONNX export writes private files,
    and the web server of a site must read them."""
    for path in Path(folder).iterdir():
        if path.is_file():
            path.chmod(0o644)


def point_link(link: str | os.PathLike, target: str | os.PathLike) -> bool:
    """Make `link` a symbolic link to `target`, replacing an older link there; a file or folder
    standing at `link` is left as it is. True when `link` now points at `target`."""
    link, target = Path(link), Path(target)
    if link.is_symlink():
        link.unlink()
    if link.exists():
        return False
    link.symlink_to(target, target_is_directory=target.is_dir())
    return True


def make_folder(folder: str | os.PathLike, flag: str) -> Path:
    """Make the output folder `folder` (and its parents) before any long work: one line naming
    `flag` when it cannot be made (a file on the way, no permission)."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OSError(
            error.errno, f"{flag} {folder} cannot be made: {error.strerror}"
        ) from None
    return folder


def remove_partial_writes(folder: str | os.PathLike) -> list[Path]:
    """Delete the temporary files of `atomic_write`s that a killed process left in `folder`:
    only safe while no other process writes there, so callers hold the folder's lock."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    leftovers = list(folder.glob(".*.part"))
    for path in leftovers:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    return leftovers


def ensure_folder(folder: str | os.PathLike) -> Path:
    """Make `folder` and its parents where missing, raising mkdir's own errors: for a folder a
    lock or a run's files live in, which no flag of the command names."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def save_torch(path: str | os.PathLike, obj: object) -> Path:
    """`torch.save(obj)` as `path` through `atomic_write`: written once, straight into the staging
    sibling, then renamed, so a checkpoint of any size is never copied and never seen half written."""
    import torch

    return atomic_write(path, lambda handle: torch.save(obj, handle))


def copy_file(source: str | os.PathLike, path: str | os.PathLike) -> Path:
    """Publish a copy of the file `source` as `path` through `atomic_write`."""

    def fill(handle: BinaryIO) -> None:
        with open(source, "rb") as original:
            shutil.copyfileobj(original, handle)

    return atomic_write(path, fill)


def append_line(path: str | os.PathLike, line: str) -> Path:
    """Append `line` and a newline to the UTF-8 log `path` (made with its folders if missing): a
    log that grows line by line is appended to, never rewritten, so each line costs one write."""
    if "\n" in line or "\r" in line:
        raise ValueError(
            f"a line for {path} holds a line break: each record of a log is one line"
        )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    return path


def remove_file(path: str | os.PathLike) -> bool:
    """Delete the file `path`, if there (whether it was): an output retired by its own rule."""
    try:
        Path(path).unlink()
    except FileNotFoundError:
        return False
    return True


def remove_folder(folder: str | os.PathLike) -> None:
    """Delete `folder` and all it holds, as far as it can: only a scratch folder owned whole."""
    shutil.rmtree(folder, ignore_errors=True)


def new_folder(folder: str | os.PathLike) -> Path:
    """Make the fresh folder `folder` and its parents; FileExistsError for one that is there (a
    staging folder must not mix with an earlier one's files)."""
    folder = Path(folder)
    folder.mkdir(parents=True)
    return folder


def rename(source: str | os.PathLike, target: str | os.PathLike) -> Path:
    """Move the file or folder `source` to `target` in one step (os.replace, on one file system:
    a file or an empty folder at `target` is replaced): for a run folder set aside and brought
    back, and for a name changed inside a staging folder, where the move must be atomic."""
    os.replace(source, target)
    return Path(target)


def copy_file_as_is(source: str | os.PathLike, path: str | os.PathLike) -> Path:
    """`copy_file` that also gives `path` the permission bits and times of `source`, as
    shutil.copy2 does: for a site's sources and assets, which Sphinx rebuilds by their times."""
    copy_file(source, path)
    shutil.copystat(source, path)
    return Path(path)


def copy_tree(
    source: str | os.PathLike,
    folder: str | os.PathLike,
    *,
    symlinks: bool = False,
    ignore: Callable[[str, list[str]], Iterable[str]] | None = None,
    fresh_times: bool = False,
) -> Path:
    """Copy the folder `source` into `folder`, merged with what is there (shutil.copytree;
    `fresh_times`: the files get new times and default permissions): only into a folder the
    command stages (a chapter's results, a site's sources, a `staged_tree`), which its own step
    publishes, so no reader sees a half copy."""
    shutil.copytree(
        source,
        folder,
        symlinks=symlinks,
        ignore=ignore,
        copy_function=shutil.copyfile if fresh_times else shutil.copy2,
        dirs_exist_ok=True,
    )
    return Path(folder)


@contextlib.contextmanager
def staged_path(path: str | os.PathLike) -> Iterator[Path]:
    """The name of a temporary sibling of `path`, for a library that writes only by name (altair's
    `save`): when the block ends without an error it is moved into place as `atomic_write` moves
    its file (the permissions of the file it replaces kept, a link written through); an error
    leaves the previous version and no temporary file. An output `written_through` is yielded
    itself, for the library to open and write."""
    given = Path(path)
    if written_through(given):
        with _disk_full_named(given):
            yield given
        return
    try:
        mode = stat.S_IMODE(given.stat().st_mode)  # a link's target's
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    target, fd, tmp_name = _staging_file(given)
    os.close(fd)
    try:
        with _disk_full_named(given):
            yield Path(tmp_name)
            with open(tmp_name, "rb") as handle:
                os.fsync(handle.fileno())
            os.chmod(tmp_name, mode)  # mkstemp made it 0600
            _before_publish(Path(tmp_name), target)
        with _naming(given):
            os.replace(tmp_name, target)
    finally:
        Path(tmp_name).unlink(missing_ok=True)


PACKAGE_DIR = Path(__file__).resolve().parents[1]  # annotated_transformer/


def clone_root() -> Path | None:
    """The clone this package was imported from (it holds pyproject.toml and book/), or None for an
    installed copy (a wheel, Colab)."""
    candidate = PACKAGE_DIR.parent
    if (candidate / "pyproject.toml").is_file() and (candidate / "book").is_dir():
        return candidate
    return None


def cache_dir() -> Path:
    """Where downloads, trained tokenizers and measured choices go: $AT_CACHE_DIR, else
    ~/.cache/annotated_transformer."""
    configured = os.environ.get("AT_CACHE_DIR")
    return (
        Path(configured).expanduser()
        if configured
        else Path.home() / ".cache" / "annotated_transformer"
    )
