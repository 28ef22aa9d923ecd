"""How the book executes a chapter: papermill's nbclient engine, with two changes.

- It tells a `ChapterProgress` which cell starts, so the terminal can say where a long chapter is.
- A Ctrl-C stops the running cell before the kernel is shut down, as Jupyter's own interrupt
  does. Without this, nbclient shuts the kernel down while a cell still runs. The kernel then
  prints a traceback about a closed socket, or the cell's KeyboardInterrupt comes back later as
  "Task exception was never retrieved", and the page of noise buries the book's one line about
  the interrupt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from jupyter_core.utils import ensure_async, ensure_event_loop
from papermill.clientwrap import PapermillNotebookClient
from papermill.engines import NBClientEngine, papermill_engines

from .progress import ChapterProgress

ENGINE_NAME = "annotated_transformer"
# How long an interrupted cell has to stop before the kernel is shut down under it. With the
# kernel's own shutdown (up to 5 s) it fits inside 15 s between a SIGINT and a SIGKILL (what
# `timeout --signal=INT --kill-after=15` leaves), so a chapter cut short is still recorded.
INTERRUPT_GRACE_S = 5.0


class ChapterClient(PapermillNotebookClient):
    """Papermill's client that, on a Ctrl-C, interrupts the kernel and waits for the running
    cell to stop before the KeyboardInterrupt goes on to the kernel's shutdown."""

    grace_s = INTERRUPT_GRACE_S

    def papermill_execute_cells(self):
        try:
            super().papermill_execute_cells()
        except KeyboardInterrupt:
            self.stop_running_cell()
            raise

    def stop_running_cell(self) -> None:
        """Interrupt the kernel and wait up to `grace_s` for the unfinished cell to end. The
        cell's error is read here, because nobody else will; a cell that does not stop in time
        is cancelled. A second Ctrl-C during the wait ends it at once."""
        loop = ensure_event_loop()
        unfinished = [task for task in asyncio.all_tasks(loop) if not task.done()]
        if not unfinished:
            return
        try:
            with contextlib.suppress(Exception):  # a kernel already gone
                loop.run_until_complete(ensure_async(self.km.interrupt_kernel()))
            loop.run_until_complete(asyncio.wait(unfinished, timeout=self.grace_s))
        finally:
            late = [task for task in unfinished if not task.done()]
            for task in late:
                task.cancel()
            if late:
                with contextlib.suppress(BaseException):
                    loop.run_until_complete(asyncio.wait(late, timeout=1.0))
            for task in unfinished:
                if task.done() and not task.cancelled():
                    task.exception()  # read: not logged as never retrieved


class ChapterEngine(NBClientEngine):
    """Papermill's nbclient engine with `ChapterClient`, telling a `ChapterProgress` (the
    `progress` keyword of `papermill.execute_notebook`) which cell starts."""

    @classmethod
    def execute_managed_notebook(
        cls,
        nb_man,
        kernel_name,
        log_output=False,
        stdout_file=None,
        stderr_file=None,
        start_timeout=60,
        execution_timeout=None,
        progress: ChapterProgress | None = None,
        input_path=None,
        **client_options,
    ):
        if progress is not None:
            progress.notebook(nb_man.nb.cells)
            original = nb_man.cell_start

            def cell_start(cell, cell_index=None, **more):
                code = cell.get("cell_type") == "code"  # prose runs in no time
                progress.cell_started(cell_index, cell.get("source", "") if code else "")
                return original(cell, cell_index, **more)

            nb_man.cell_start = cell_start
        client = ChapterClient(
            nb_man,
            kernel_name=kernel_name,
            log=logging.getLogger("papermill"),
            log_output=log_output,
            stdout_file=stdout_file,
            stderr_file=stderr_file,
            startup_timeout=start_timeout,
            timeout=execution_timeout,
            **client_options,
        )
        return client.execute()


papermill_engines.register(ENGINE_NAME, ChapterEngine)
