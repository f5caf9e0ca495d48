"""What the console script adds around the commands: its warnings printed for a user (:func:`format_warning`), and
after Ctrl-C what was kept and the command that goes on (:func:`interrupted_message`), then an exit without the
interpreter's teardown (:func:`exit_at_once`). :func:`latechunk.cli.main` calls them."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import warnings
from pathlib import Path

from latechunk.config import DEFAULT_GROUP_TOKENS


def exit_at_once(code: int) -> None:
    """End the process after Ctrl-C without the interpreter's teardown: a trial saw the Ctrl-C message at once and
    the process exit ~2.5 s later under load. What ran then was no thread join or executor shutdown (the
    pipeline's threads are daemons, the sentence workers' pool shuts down without waiting) but CPython's
    finalisation: a full garbage collection and the freeing of every module (torch, transformers, the loaded
    model), ~0.5 s idle and seconds on a loaded machine. What the run keeps is on disk by now (a shard is renamed
    into place when complete; the exception has closed every file on its way up), so this runs the ``atexit``
    callbacks (the sentence workers' pipes are closed and they end, logging is flushed), flushes stdout and stderr,
    and ends the process with ``os._exit(code)``, skipping the rest.

    Args:
        code: The exit status (130 after Ctrl-C).
    """
    import atexit

    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()  # what the interpreter would run first, in the same order
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe (`| head`) has nothing more to take
            stream.flush()
    os._exit(code)

def _option_value(args: list[str], *names: str) -> str | None:
    """The value of option ``names`` in a command line (``--out X`` or ``--out=X``; the last one wins), or None."""
    value = None
    for i, a in enumerate(args):
        for name in names:
            if a == name and i + 1 < len(args):
                value = args[i + 1]
            elif a.startswith(name + "="):
                value = a[len(name) + 1:]
    return value

def _kept_shards(out: Path) -> str:
    """What an interrupted embed kept in ``out``: its complete shards from shard 0 on (sizes checked, hashes not:
    this runs after Ctrl-C), as ``"3 complete shard(s): the first 1,204 input items, 5,321 chunks"``; ``""`` when
    none is complete or the folder cannot be read."""
    try:
        from latechunk.ingest.shards import scan_shards

        records = scan_shards(out, verify_hashes=False)[0]
    except (OSError, ValueError):
        return ""
    if not records:
        return ""
    return (f"{len(records):,} complete shard(s): the first {int(records[-1]['inputs'][1]):,} input items, "
            f"{sum(int(r.get('rows', 0)) for r in records):,} chunks")

def _config_file(args: list[str]) -> dict:
    """The settings of the command line's ``--config FILE`` (:func:`latechunk.cli.config_file.read_config_file`),
    or ``{}`` when none is given or it cannot be read."""
    path = _option_value(args, "--config")
    if path is None:
        return {}
    from latechunk.cli.config_file import read_config_file

    try:
        return read_config_file(path)
    except ValueError:
        return {}


def _group_tokens(args: list[str], out: Path) -> int | str:
    """The tokens of documents per shard of an interrupted embed, resolved as the run resolves them: the command
    line's ``--group-tokens``, else its ``--config`` file's ``group_tokens``, else the settings of ``out``'s
    run.json (a resumed run), else :data:`~latechunk.config.DEFAULT_GROUP_TOKENS`."""
    given = _option_value(args, "--group-tokens")
    if given is not None:
        return int(given) if given.isdigit() else given
    tokens = _config_file(args).get("group_tokens")
    if tokens is None:
        import json

        with contextlib.suppress(OSError, ValueError, KeyError, AttributeError, TypeError):
            tokens = json.loads((out / "run.json").read_text(encoding="utf-8"))["settings"].get("group_tokens")
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else DEFAULT_GROUP_TOKENS


_DEFAULT_FORMATWARNING = warnings.formatwarning

def format_warning(message, category, filename, lineno, line=None) -> str:
    """``warnings.formatwarning`` for the console script: latechunk's own warnings as ``warning: MESSAGE`` (no
    source path or code line: they are meant for the user, not a developer); other libraries' as Python prints
    them."""
    package = str(Path(__file__).resolve().parents[1])  # latechunk/, this module being latechunk/cli/script.py
    if str(Path(filename).resolve()).startswith(package):
        return f"warning: {message}\n"
    return _DEFAULT_FORMATWARNING(message, category, filename, lineno, line)

def interrupted_message(args: list[str]) -> str:
    """What the console script says after Ctrl-C, for the command line ``args`` (without the program name): what
    was kept and the exact command that goes on, built here only, so a fresh run and a ``--resume`` run stopped in
    the same state get the same message (a trial got "nothing is kept: --force" from one and "complete shards are
    kept: --resume" from the other).

    ``embed``: its complete shards (:func:`_kept_shards`) and the command with ``--resume`` (and without
    ``--force``), which also starts over when nothing was kept; ``embed --append``: the folder as its last manifest
    left it, and the same command again; a finished folder (a ``--force`` run stopped before it cleared it): the
    same command again; ``train``: its checkpoint and ``--resume``, or without one the command again.

    Args:
        args: The command line after the program name.

    Returns:
        One line, beginning ``interrupted (Ctrl-C)``.
    """
    command = args[0] if args else ""
    out = _option_value(args, "--out", "-o")
    if out is None and command == "embed":
        out = _config_file(args).get("out")
    if command not in ("embed", "train") or out is None:
        return "interrupted (Ctrl-C)"
    given = shlex.join(["latechunk", *args])
    resumed = shlex.join(["latechunk", *(a for a in args if a not in ("--resume", "--force")), "--resume"])
    if command == "train":
        from latechunk.train import CHECKPOINT_DIR, CHECKPOINT_FILE

        if (Path(out) / CHECKPOINT_DIR / CHECKPOINT_FILE).is_file():
            return (f"interrupted (Ctrl-C); kept: the run's last checkpoint in {Path(out) / CHECKPOINT_DIR} (every "
                    f"--checkpoint-every steps and at each epoch's end); to continue from it: {resumed}")
        again = shlex.join(["latechunk", *(a for a in args if a != "--resume")])
        return f"interrupted (Ctrl-C); nothing is kept (no checkpoint was written yet); to start again: {again}"
    if "--append" in args:
        return (f"interrupted (Ctrl-C); kept: {out} as its last finished run or append left it (the partial shards "
                f"of this append are dropped when it runs again); to append: {given}")
    if (Path(out) / "manifest.json").is_file():
        return f"interrupted (Ctrl-C); kept: {out} as it was, a finished run (its manifest.json); to run again: {given}"
    kept = _kept_shards(Path(out))
    if kept:
        return f"interrupted (Ctrl-C); kept in {out}: {kept}; to continue: {resumed}"
    tokens = _group_tokens(args, Path(out))
    shard = f"{tokens:,}" if isinstance(tokens, int) else str(tokens)
    where = f"nothing is kept in {out}" if Path(out).is_dir() else f"nothing is kept: {out} was not created"
    return (f"interrupted (Ctrl-C); {where} (no shard was complete yet: a shard holds about {shard} tokens of "
            f"documents); to start again: {resumed}")
