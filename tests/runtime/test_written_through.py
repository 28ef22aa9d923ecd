"""What is not a regular file is written, never replaced: a FIFO, a character device and a name of
an open file (`/dev/stdout`) keep being what they are, and get the bytes."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from annotated_transformer.runtime import files

WRITE = (
    "import sys; from annotated_transformer.runtime.files import atomic_write_text; "
    "print('before', flush=True); atomic_write_text(sys.argv[1], 'written\\n')"
)


def test_a_fifo_is_written_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    files.atomic_write_text(fifo, "through the pipe\n")
    reader.join(timeout=10)
    assert got == [b"through the pipe\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no staged file left


def test_a_character_device_is_written_not_replaced(tmp_path):
    """A terminal (a pseudo-terminal here: /dev/null itself is never written by the tests, so
    a writer that replaced devices could not replace it) gets the bytes and stays a device."""
    leader, follower = os.openpty()
    try:
        terminal = Path(os.ttyname(follower))
        link = tmp_path / "tty"  # through a link: its target is what is written
        link.symlink_to(terminal)
        assert files.written_through(link) and files.written_through(os.devnull)
        files.atomic_write_bytes(link, b"on the terminal")
        assert b"on the terminal" in os.read(leader, 100)
        assert stat.S_ISCHR(os.stat(terminal).st_mode)
        assert link.is_symlink() and list(tmp_path.iterdir()) == [link]
    finally:
        os.close(leader)
        os.close(follower)


@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
def test_dev_stdout_redirected_to_a_file_is_appended_to(tmp_path, name):
    """Through /dev/stdout the file the shell opened gets the bytes after what the process
    printed before; replacing it would drop that, and a shell's `>>` would lose the file's
    older lines."""
    out = tmp_path / "out.txt"
    out.write_text("older line\n")
    with open(out, "a") as handle:
        subprocess.run([sys.executable, "-c", WRITE, name], stdout=handle, check=True)
    assert out.read_text() == "older line\nbefore\nwritten\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_dev_stdout_into_a_pipe_is_written(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", WRITE, "/dev/stdout"],
        capture_output=True,
        check=True,
        cwd=tmp_path,
    )
    assert done.stdout == b"before\nwritten\n"


def test_a_socket_is_refused_in_one_line(tmp_path):
    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(OSError, match="is a socket, not a file: name a file"):
            files.atomic_write_text(path, "x")
    assert stat.S_ISSOCK(os.stat(path).st_mode)


def test_a_regular_file_is_still_replaced_whole(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old\n")
    inode = os.stat(path).st_ino
    assert not files.written_through(path) and not files.written_through(tmp_path / "new")
    files.atomic_write_text(path, "new\n")
    assert path.read_text() == "new\n" and os.stat(path).st_ino != inode


def test_translate_output_onto_a_fifo_keeps_the_fifo(tmp_path, monkeypatch, capsys):
    """`translate --output FIFO` replaced the FIFO with a regular file (as root `--output
    /dev/null` would replace /dev/null): now the reader at the FIFO gets the translations."""
    from annotated_transformer.cli import main
    from tests.support.tiny_checkpoint import write_tiny_checkpoint

    monkeypatch.setenv("AT_OFFLINE", "1")
    checkpoint = write_tiny_checkpoint(tmp_path / "tiny.pt")
    source = tmp_path / "en.txt"
    source.write_text("a man runs\ntwo dogs\n")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    argv = [
        "translate",
        "--checkpoint",
        str(checkpoint),
        "--device",
        "cpu",
        "--beam",
        "1",
    ]
    assert main([*argv, "--input", str(source), "--output", str(fifo)]) == 0
    reader.join(timeout=30)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert len(got) == 1 and got[0].decode().count("\n") == 2
