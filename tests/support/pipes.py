"""A FIFO fed from a thread, as a shell's pipe or `<(...)` feeds a command."""

from __future__ import annotations

import os
import threading
from pathlib import Path


def feed_fifo(path: Path, data: bytes) -> threading.Event:
    """Make `path` a FIFO and write `data` into it from a thread, once; set the event returned
    when done with it. After writing, the thread keeps knocking (a non-blocking open for
    writing), so that a reader opening the FIFO a second time finds it empty, as it would find
    a drained pipe, instead of waiting for ever."""
    os.mkfifo(path)
    done = threading.Event()

    def write() -> None:
        with open(path, "wb") as fifo:
            fifo.write(data)
        while not done.wait(0.02):
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # no reader waiting
                pass

    threading.Thread(target=write, daemon=True).start()
    return done
