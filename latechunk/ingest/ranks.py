"""Several processes on one machine, with the file system as the rendezvous (no ``torch.distributed``).

One process per GPU: ``torchrun --nproc-per-node N -m latechunk embed ...`` or ``accelerate launch -m latechunk
embed ...``; :func:`dist_env` reads ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``. Every rank reads and tokenizes the
whole input stream and so forms the same groups as a single process (groups depend on token counts alone), but
chunks, encodes and writes only the groups ``k % WORLD_SIZE == RANK``, as shard ``k`` under the single-process
name; the others pass by as light groups that keep the input positions and the running digest right.

- rank 0 checks and prepares the folder (``--force``/``--resume`` as for one process), then writes
  ``ranks/go.json``; the others wait for a ``go.json`` newer than their own process (a stale one of an earlier run
  is older) whose rank 0 still runs, check that ``run.json`` holds their own settings, and start. Before that they
  touch nothing in ``DIR`` and refuse what rank 0 will refuse (a non-empty folder without ``--force``, other
  settings on resume);
- each rank keeps ``ranks/R.json`` up to date and marks it ``failed`` with the error when it fails; every rank
  looks at the others once per group, so a failed rank, or one whose process is gone without finishing (SIGKILL,
  out of memory: seen from its pid), stops rank 0 with an error naming it, and a failed rank 0 stops the others;
- rank 0 then waits for every shard ``.json`` (each must cover exactly the input items rank 0 put in that group)
  and every rank's ``done`` (same number of groups, same input digest), and assembles exactly as a single process
  does; the manifest records ``world_size``. Any wait gives up after ``$LATECHUNK_RANK_TIMEOUT`` seconds (default
  1800) without progress.

``--resume`` with several ranks: rank 0 keeps every complete shard (checksums verified), gaps allowed, and deletes
the rest; each rank then skips the kept shards it meets and writes the missing ones of its own, after checking
that a kept shard covers exactly the input items (and digest) this run puts in that group. A shard does not
depend on which rank or how many wrote it, so a run may be resumed with another number of processes, or with a
single one (which keeps the shards up to the first gap and redoes the rest).

Kept beside ``embed --engine ray`` (:mod:`latechunk.ingest.ray_engine`) for one machine's GPUs: no cluster to
start and no extra dependency (the measurement: results/engines.md); several machines take the Ray engine.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from latechunk.config import EmbedConfig, dist_env  # dist_env: read before torch is imported (cli)
from latechunk.ingest.assemble import assemble
from latechunk.ingest.files import read_json, write_json
from latechunk.ingest.folder import check_not_empty, check_same_settings, prepare_output
from latechunk.ingest.shards import check_shard_files, clean_shards, complete_shards
from latechunk.ingest.stream import ShardInput, stream, write_group
from latechunk.io import iter_inputs
from latechunk.output import LOCK_FILE, RANKS_FORMAT, OutputFolder

__all__ = ["DEFAULT_RANK_TIMEOUT", "RANK_TIMEOUT_ENV", "RankError", "dist_env", "ingest_rank", "rank_timeout"]

#: several processes: seconds to wait without progress from the others before giving up
RANK_TIMEOUT_ENV = "LATECHUNK_RANK_TIMEOUT"
DEFAULT_RANK_TIMEOUT = 1800.0
_POLL_S = 0.1


class RankError(RuntimeError):
    """Several processes: another one failed, died or stalled, or the processes disagree about the groups."""


def rank_timeout(value: float | None = None) -> float:
    """Seconds a rank waits without progress from the others: ``value``, else ``$LATECHUNK_RANK_TIMEOUT``, else
    1800.

    Args:
        value: The caller's timeout in seconds; None: from the environment.

    Returns:
        The timeout in seconds.

    Raises:
        ValueError: if ``$LATECHUNK_RANK_TIMEOUT`` is not a number.
    """
    return float(os.environ.get(RANK_TIMEOUT_ENV, DEFAULT_RANK_TIMEOUT)) if value is None else float(value)


_T_IMPORT = time.time()


def _process_start() -> float:
    """Wall-clock time at which this process started (Linux: from /proc, to a clock tick, from monotonic
    counters so clock steps since boot do not matter); elsewhere the time this module was imported."""
    try:
        stat = Path("/proc/self/stat").read_text()
        ticks = int(stat[stat.rindex(")") + 2:].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return _T_IMPORT


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` (on this machine) still runs; a zombie (exited, not yet reaped) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2] not in "ZX"
    except (OSError, ValueError, IndexError):
        return True


def _peer(folder: OutputFolder, r: int, run: str, host: str) -> dict | None:
    """Rank ``r``'s status in run ``run`` (``None`` before it wrote one).

    Raises:
        RankError: when it failed, or its process is gone (same machine) without having finished.
    """
    path = folder.ranks_dir / f"{r}.json"
    st = read_json(path)
    if st is None or st.get("run") != run:
        return None
    if st.get("state") not in ("done", "failed") and st.get("host") == host and not _pid_alive(int(st.get("pid", 0))):
        st = read_json(path) or st  # it may have finished between the two looks: the status is written first
        if st.get("state") not in ("done", "failed"):
            raise RankError(f"rank {r} (pid {st.get('pid')}, {st.get('device')}) exited without finishing "
                            "(killed? out of memory?); the complete shards are kept: run again with --resume")
    if st.get("state") == "failed":
        raise RankError(f"rank {r} failed: {st.get('error', '?')}")
    return st


def _precheck_rank(out: Path, settings: dict, force: bool, resume: bool, since: float) -> None:
    """Ranks > 0, before waiting for rank 0: refuse what rank 0 will refuse, without touching ``out``.

    Entries of ``out`` older than this process were there before the run started (rank 0's are newer).
    """
    if force or not out.is_dir():
        return
    old = set()
    for p in out.iterdir():
        if p.name == LOCK_FILE:  # rank 0's writer lock (also left by earlier runs): never content
            continue
        try:
            if p.stat().st_mtime < since:
                old.add(p.name)
        except OSError:
            pass
    if not resume:
        check_not_empty(out, old)
    folder = OutputFolder(out)
    if resume and folder.run_path.name in old:
        check_same_settings((read_json(folder.run_path) or {}).get("settings", {}), settings)


def _wait_go(folder: OutputFolder, since: float, world: int, timeout: float, host: str) -> dict:
    """Ranks > 0: wait until rank 0 has made the folder ready (a ``ranks/go.json`` of this run) and return it.

    A ``go.json`` counts when it is newer than this process (launchers start the ranks together, and rank 0
    writes it only after loading its model) and the rank 0 that wrote it is still running.
    """
    path = folder.ranks_dir / "go.json"
    t_end = time.monotonic() + timeout
    while True:
        try:
            fresh = path.stat().st_mtime >= since
        except OSError:
            fresh = False
        go = read_json(path) if fresh else None
        if go is not None and (go.get("host") != host or _pid_alive(int(go.get("pid", 0)))):
            if go.get("world_size") != world:
                raise RankError(f"rank 0 runs with world size {go.get('world_size')}, this rank with {world}")
            return go
        if time.monotonic() > t_end:
            raise RankError(f"rank 0 did not make {folder.path} ready within {timeout:.0f} s (no ranks/go.json of "
                            f"this run); see rank 0's error, and give every rank the same --out "
                            f"(${RANK_TIMEOUT_ENV} sets the wait)")
        time.sleep(_POLL_S)


def ingest_rank(config: EmbedConfig, encoder, settings: dict, header: dict, rank: int, world: int, timeout: float,
                t_start: float, on_shard: Callable[[dict], None] | None = None, progress: bool = False
                ) -> dict | None:
    """One of ``world`` processes: encode the groups ``k % world == rank``; rank 0 prepares and assembles.

    Args:
        config: The run (the same on every rank).
        encoder: This rank's encoder.
        settings: The run's settings (run.json's).
        header: Extra manifest fields.
        rank: This process's rank, ``0 <= rank < world``.
        world: The number of processes.
        timeout: Seconds to wait without progress from the others.
        t_start: ``time.time()`` at the start of the run.
        on_shard: Called with each shard record this rank writes.
        progress: Show the progress bar of :func:`~latechunk.ingest.stream.stream` (rank 0 only: it moves as
            this rank encodes its groups and reads past the others' groups, so it runs a little ahead of the other
            ranks' work).

    Returns:
        The manifest on rank 0, ``None`` on the others.

    Raises:
        ValueError: on a folder that may not be written, settings that differ, or inputs that changed.
        RankError: when another rank failed, died or stalled, or the ranks disagree on the groups.
    """
    out = config.out
    folder = OutputFolder(out)
    host = socket.gethostname()
    rdir = folder.ranks_dir
    if rank == 0:
        prepare_output(out, settings, force=config.force, resume=config.resume, scan=False)
        kept = complete_shards(out) if config.resume else {}
        if kept:  # seconds.total covers the interrupted run(s) too (a trial: a resumed torchrun said 5.0 s)
            from latechunk.ingest import _earlier_seconds

            t_start -= _earlier_seconds(folder, [kept[k] for k in sorted(kept)])
        clean_shards(out, lambda i: i in kept)
        rdir.mkdir(exist_ok=True)
        token = uuid.uuid4().hex
        write_json(rdir / "go.json", {"format": RANKS_FORMAT, "run": token, "world_size": world,
                                      "pid": os.getpid(), "host": host, "kept": sorted(kept)})
    else:
        since = _process_start()
        _precheck_rank(out, settings, config.force, config.resume, since)
        go = _wait_go(folder, since, world, timeout, host)
        token = go["run"]
        kept = {}
    status = {"format": RANKS_FORMAT, "run": token, "rank": rank, "world_size": world, "pid": os.getpid(),
              "host": host, "device": str(encoder.device), "state": "running", "shards": 0, "inputs_consumed": 0}

    def set_status(**kw) -> None:
        status.update(kw)
        write_json(rdir / f"{rank}.json", status)

    set_status()
    try:
        if rank != 0:
            prev = read_json(folder.run_path) or {}
            check_same_settings(prev.get("settings", {}), settings,
                                what=f"rank {rank} was started with other options than rank 0")
            for k in go.get("kept", []):
                kept[k] = read_json(folder.shard_path(k, "json")) or {}
        peers = [r for r in range(world) if r != rank] if rank == 0 else [0]
        expected: dict[int, tuple[list[int], str]] = {}
        records: dict[int, dict] = dict(kept)

        def on_group(s: ShardInput) -> None:
            for r in peers:
                _peer(folder, r, token, host)
            expected[s.k] = (list(s.inputs), s.digest)
            if s.k in kept:
                if kept[s.k].get("inputs") != list(s.inputs) or kept[s.k].get("inputs_digest") != s.digest:
                    raise ValueError(f"--resume: the inputs changed since the interrupted run (shards/"
                                     f"{folder.shard_name(s.k)} covered input items {kept[s.k].get('inputs')}, now "
                                     f"{list(s.inputs)}); pass --force to start over")
            elif s.group.selected if s.group is not None else s.k % world == rank:
                rec = write_group(folder, config, encoder.dim, s)
                records[s.k] = rec
                if on_shard is not None:
                    on_shard(rec)
                set_status(shards=status["shards"] + 1, inputs_consumed=s.end)

        n, consumed, digest = stream(config, encoder, iter_inputs(config.inputs, config.fields), 0, "", 0,
                                     lambda k: k % world == rank and k not in kept, on_group,
                                     progress=progress and rank == 0)
        beyond = sorted(k for k in kept if k >= n)
        if beyond:
            raise ValueError(f"--resume: the inputs changed since the interrupted run (they now form {n} shards, "
                             f"but shards/{folder.shard_name(beyond[0])} is complete); pass --force to start over")
        if rank != 0:
            set_status(state="done", groups=n, inputs_consumed=consumed, digest=digest)
            return None
        set_status(state="collecting", groups=n, inputs_consumed=consumed, digest=digest)
        ordered = _collect(folder, expected, records, world, token, host, timeout, digest)
        manifest = assemble(out, ordered, settings, config.index, encoder.dim, header, t_start, world_size=world)
        set_status(state="done")
    except BaseException as err:
        try:
            set_status(state="failed", error=f"{type(err).__name__}: {err}")
        except OSError:
            pass
        raise
    shutil.rmtree(rdir, ignore_errors=True)
    return manifest


def _collect(folder: OutputFolder, expected: dict[int, tuple[list[int], str]], records: dict[int, dict], world: int,
             token: str, host: str, timeout: float, digest: str) -> list[dict]:
    """Rank 0: wait for every shard and every rank to finish; return the shard records in order.

    Each shard record must cover the input items rank 0 put in that group (same range, same running digest),
    and each rank must end having seen the same number of groups and the same inputs.
    """
    n = len(expected)
    pending = sorted(k for k in range(n) if k not in records)
    finished: set[int] = set()
    last = time.monotonic()
    while True:
        progressed = False
        for k in list(pending):
            rec = read_json(folder.shard_path(k, "json"))
            if rec is None:
                continue
            want_inputs, want_digest = expected[k]
            if rec.get("shard") != k or rec.get("inputs") != want_inputs or rec.get("inputs_digest") != want_digest:
                raise RankError(f"shards/{folder.shard_name(k)}.json from rank {k % world} covers input items "
                                f"{rec.get('inputs')}, but rank 0 formed that group from {want_inputs}: the ranks "
                                "read different inputs")
            bad = check_shard_files(folder.shards_dir, rec, verify_hashes=False)
            if bad:
                raise RankError("; ".join(bad))
            records[k] = rec
            pending.remove(k)
            progressed = True
        for r in range(1, world):
            if r in finished:
                continue
            st = _peer(folder, r, token, host)
            if st is None or st.get("state") != "done":
                continue
            if st.get("groups") != n or st.get("digest") != digest:
                raise RankError(f"rank {r} read {st.get('inputs_consumed')} input items into {st.get('groups')} "
                                f"groups, rank 0 {expected[n - 1][0][1] if n else 0} into {n}: the ranks read "
                                "different inputs")
            finished.add(r)
            progressed = True
        if not pending and len(finished) == world - 1:
            return [records[k] for k in range(n)]
        lost = [k for k in pending if k % world in finished]
        if lost and not progressed:
            raise RankError(f"rank {lost[0] % world} finished, but shards/{folder.shard_name(lost[0])}.json is missing")
        now = time.monotonic()
        if progressed:
            last = now
        elif now - last > timeout:
            waiting = sorted({k % world for k in pending} | (set(range(1, world)) - finished))
            raise RankError(f"no progress from rank(s) {waiting} for {timeout:.0f} s (waiting for "
                            f"{len(pending)} shard(s), first shards/{folder.shard_name(pending[0]) if pending else '-'}); "
                            f"${RANK_TIMEOUT_ENV} sets the wait; the complete shards are kept for --resume")
        time.sleep(_POLL_S)
