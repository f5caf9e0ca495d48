"""The commit of an assembly: the journal (``commit.json``) that renames the assembled files into place.

Tests: ``tests/ingest/test_ingest.py`` (kills between the renames, late readers, copies without file times).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from latechunk.output.durable import _identity, _json_bytes, commit, fsync_dir
from latechunk.output.layout import COMMIT_FILE, COMMIT_ORDER


class CommitJournal:
    """The commit of an assembly's files into an output folder: :meth:`begin_commit`, :meth:`finish_commit`.

    A base of :class:`~latechunk.output.OutputFolder`, which gives it ``path`` (the folder) and ``commit_path``
    (``DIR/commit.json``).
    """

    path: Path
    commit_path: Path

    def begin_commit(self, rename: Sequence[str], remove: Sequence[str] = (),
                     after_first: Callable[[], None] | None = None) -> None:
        """Decide an assembly's new state: write the commit journal, then :meth:`finish_commit`.

        Every file named in ``rename`` must be whole at its ``.tmp`` name (flushed). Until the journal is in
        place the folder serves its old state (the temp files are ignored by readers and overwritten by the next
        assembly); once it is, the new state is decided and whoever opens the folder next completes it, so a
        kill between the renames never leaves the index and the chunk table out of step.

        Args:
            rename: Names from :data:`COMMIT_ORDER` to rename from ``NAME.tmp`` to ``NAME``.
            remove: Names from :data:`COMMIT_ORDER` to remove (a file of the old state the new one lacks, such
                as ``index.ivfdata`` when the index type changed).
            after_first: Called after the first rename (a fault-injection point).

        Raises:
            ValueError: if a name is not one of :data:`COMMIT_ORDER`.
            OSError: if the journal cannot be written or a rename fails.
        """
        bad = [n for n in (*rename, *remove) if n not in COMMIT_ORDER]
        if bad:
            raise ValueError(f"commit of {bad}: only {COMMIT_ORDER} are committed together")
        # each file by its identity (size, mtime): a reader that finishes this journal late, after a
        # newer assembly has begun writing temp files of the same names, touches none of them
        journal = {"rename": {n: _identity(self.path / (n + ".tmp")) for n in rename},
                   "remove": {n: _identity(self.path / n) for n in remove if (self.path / n).exists()}}
        tmp = self.path / (COMMIT_FILE + ".tmp")
        tmp.write_bytes(_json_bytes(journal, 1))
        commit(tmp, self.commit_path)
        self.finish_commit(after_first)

    def finish_commit(self, after_first: Callable[[], None] | None = None, repair: bool = False) -> bool:
        """Complete an assembly's commit that was interrupted (a kill between :meth:`begin_commit`'s renames).

        Readers (:func:`read_output`, :meth:`read_manifest`, ``latechunk verify``, ``export``) call it first, and
        ``--append``/``Index.add`` with ``repair=True``; ``--resume`` and ``--force`` remove the journal with the
        files they rebuild. It costs one ``stat`` when there is nothing to finish. Two processes may
        finish the same commit at once: a rename already done is skipped, and a file is renamed or removed only
        while it is the one the journal names (size and mtime, which ``cp -a``, rsync and tar keep), so a reader
        that finishes a journal late never moves a newer assembly's temp files.

        Args:
            after_first: Called after the first rename (a fault-injection point of :meth:`begin_commit`).
            repair: A writer that rebuilds the assembled files anyway (``--append``): a journal whose files are not
                as it recorded them is dropped instead of refused.

        Returns:
            True when a commit was finished (or was found finished and its journal removed), False when there
            was none.

        Raises:
            ValueError: if the journal is unreadable, names files that are not as it recorded them (a copy made
                mid-commit that lost the file times; not with ``repair``), or the folder cannot be written (a
                read-only copy of a folder whose commit was interrupted: the message says to open it writable
                once).
        """
        try:
            journal_id = _identity(self.commit_path)
            journal = json.loads(self.commit_path.read_text(encoding="utf-8"))
            rename, remove = dict(journal["rename"]), dict(journal["remove"])
        except FileNotFoundError:  # none, or finished by another process meanwhile
            return False
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{self.commit_path} (the commit journal of an interrupted assembly) is unreadable "
                             f"({err}); run `latechunk verify {self.path}`") from err
        # each file is this journal's (at its temp name: to rename), already renamed (at its final name), or
        # neither: a copy made with its times lost, files touched since, or a newer assembly's temp files
        state = {}
        for name, want in rename.items():
            tmp, final = self.path / (name + ".tmp"), self.path / name
            state[name] = ("rename" if _identity(tmp) == list(want) else
                           "done" if _identity(final) == list(want) else "neither")
        stray = sorted(n for n, st in state.items() if st == "neither")
        if stray and not repair:
            raise ValueError(f"{self.path}: {COMMIT_FILE} (the journal of an assembly killed while committing its "
                             f"files) names {', '.join(stray)} as files that are not here as it recorded them (was the "
                             "folder copied mid-commit without its file times, or its files touched?), so the index "
                             "and the chunk table may disagree; run the same `latechunk embed ... --append` (or "
                             "Index.add) on it again: it rebuilds them from the shards")
        try:
            for name in COMMIT_ORDER:  # the order of begin_commit's renames; a file already renamed is skipped
                final = self.path / name
                if state.get(name) == "rename" and not stray:
                    os.replace(final.with_name(name + ".tmp"), final)
                    if after_first is not None:
                        after_first()
                        after_first = None
                elif name in remove and not stray and _identity(final) == list(remove[name]):
                    final.unlink()
            fsync_dir(self.path)
            if _identity(self.commit_path) == journal_id:  # not a newer assembly's journal of the same name
                with contextlib.suppress(FileNotFoundError):
                    self.commit_path.unlink()
            fsync_dir(self.path)
        except OSError as err:
            raise ValueError(f"{self.path}: an assembly was killed while committing its files ({COMMIT_FILE} is "
                             f"there) and they cannot be renamed into place here ({err}); open the folder once "
                             "where it is writable (any `latechunk search` or `verify` finishes the commit)") from err
        return True
