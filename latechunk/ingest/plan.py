"""What ``latechunk embed`` does with its output folder, decided before the model loads: a new run, a run
continued (``--resume``), documents added to a finished folder (``--append``), a new version of an earlier folder
(``--reuse OLD``), or nothing (``--resume`` of a finished folder); with the settings of each and every check of
that policy. The command line prints; this decides.

The settings of a run: the options given (a ``--config`` file's and the command line's) over embed's defaults, or
over a folder's recorded settings (its run.json, :meth:`EmbedConfig.from_dict
<latechunk.config.EmbedConfig.from_dict>` with ``recorded=True``) where there is one to follow:

- ``--append``: the folder's (``--out``); its model from the manifest's model folder when that still exists
  (the bundled model by its name);
- ``--resume`` of a run that wrote its run.json: the folder's; the model by its recorded name or path (what the
  settings diff compares);
- ``--reuse OLD``: OLD's, as for ``--append`` (a new version of OLD; also when ``--resume`` finds no run.json);
- otherwise embed's defaults (:meth:`EmbedConfig.option_defaults <latechunk.config.EmbedConfig.option_defaults>`).

``trust_remote_code``, the device, ``compile`` and the sentence workers are the run's own (never read from a
folder: a model's own code runs only when asked for again).

Nothing here imports torch: :func:`plan_embed` and :meth:`EmbedPlan.check_folder` run before the model loads,
:func:`check_finished` once it is loaded (it compares the model's facts). Tests: ``tests/cli/test_cli_plan.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from latechunk.config import EmbedConfig
from latechunk.console import plural
from latechunk.output import SHARD_FILE, OutputFolder

__all__ = ["EmbedPlan", "check_finished", "finished_run_note", "interrupted_append_shards", "plan_embed",
           "recorded_model_hint", "settings_folder"]


@dataclass(frozen=True)
class EmbedPlan:
    """What an ``embed`` run does, and with which settings.

    Attributes:
        config: The run's validated settings.
        append: ``--append``: add the inputs to the finished folder ``config.out``.
        reuse: ``--reuse OLD`` (or the OLD a resumed ``--reuse`` run recorded): take unchanged documents from it.
        resumed: ``--resume`` found a run to continue (a run.json); False for a new run.
        finished: With ``--resume``, what to say of a finished folder (left as it is); ``""`` otherwise.
        done: Nothing to do: a finished folder resumed with no option given (print ``finished`` and stop; with
            options given they are checked against it once the model loads: :func:`check_finished`).
        model_recorded: The model came from the folder's run.json (``--append``/``--resume`` without ``--model``):
            a model that no longer loads gets :func:`recorded_model_hint`.
        rank: This process's rank (0: it checks and clears the folder).
    """

    config: EmbedConfig
    append: bool = False
    reuse: Path | None = None
    resumed: bool = False
    finished: str = ""
    done: bool = False
    model_recorded: bool = False
    rank: int = 0

    @property
    def out(self) -> Path:
        """The output folder."""
        return self.config.out

    def check_folder(self) -> None:
        """Before the model loads: a new run's folder must be empty, or a latechunk output that ``--force`` may
        clear (rank 0 checks it; the other ranks find it being filled). Nothing for ``--resume``/``--append``.

        Raises:
            ValueError: naming the folder and what is in the way.
        """
        if self.rank != 0 or self.config.resume or self.append:
            return
        from latechunk.ingest.folder import check_force, check_not_empty

        check_force(self.out) if self.config.force else check_not_empty(self.out)


def finished_run_note(out: Path) -> str:
    """What ``embed --resume`` says of a finished output folder (one with a manifest.json: the assembly writes it
    last), which it leaves as it is.

    Args:
        out: The output folder.

    Returns:
        The note; ``""`` when ``out`` holds no finished run (a resume then continues it).
    """
    folder = OutputFolder(out)
    if not folder.manifest_path.is_file():
        return ""
    try:
        counts = folder.read_manifest().get("counts", {}) or {}
        what = (f"{plural(counts.get('documents_embedded', '?'), 'document')}, "
                f"{plural(counts.get('chunks', '?'), 'chunk')}")
    except (ValueError, OSError) as err:  # damaged: verify says what is wrong
        what = f"its manifest.json does not read: {err}"
    return (f"--resume: {out} holds a finished run ({what}); there is nothing to continue and the folder is left as "
            f"it is. To add documents: latechunk embed NEW --out {out} --append; to check it: latechunk verify {out}; "
            "to start over: --force")


def interrupted_append_shards(out: Path) -> int:
    """Shards of a finished folder beyond the ones its manifest lists: an ``--append`` (or ``Index.add``) that was
    interrupted.

    Args:
        out: The output folder.

    Returns:
        How many; 0 when none (or the folder is not finished, or does not read).
    """
    folder = OutputFolder(out)
    try:
        listed = {s.get("name") for s in folder.read_manifest().get("shards") or []}
        names = {f.name.removesuffix(".tmp").split(".")[0] for f in folder.shards_dir.iterdir()
                 if SHARD_FILE.fullmatch(f.name.removesuffix(".tmp"))}
    except (ValueError, OSError):
        return 0
    return len(names - listed)


def recorded_model_hint(message: str, out: Path, recorded: bool) -> str:
    """``message`` (a model that does not load), with where the model came from when it is the folder's recorded
    one (``--append``/``--resume`` without ``--model``) and it no longer exists: a moved model folder.

    Args:
        message: The error.
        out: The output folder.
        recorded: The model was taken from its run.json.

    Returns:
        The message, with the hint where it applies.
    """
    if recorded and "does not exist" in message:
        return (f"{message} (the model {out}'s run.json records; if it moved, give its new place: --model PATH, "
                "the same model)")
    return message


def settings_folder(out: Path, *, append: bool = False, resume: bool = False, reuse: Path | None = None) -> Path | None:
    """The folder whose recorded settings give the options not given: ``out`` for ``--append`` and for a
    ``--resume`` that finds a run.json there, else ``reuse`` (None: embed's defaults).

    Args:
        out: ``--out``.
        append: ``--append``.
        resume: ``--resume``.
        reuse: ``--reuse OLD``.

    Returns:
        The folder, or None.
    """
    return out if append or (resume and OutputFolder(out).run_path.is_file()) else reuse


def _recorded_reuse(out: Path) -> Path | None:
    """The OLD folder a resumed ``--reuse`` run recorded in its run.json (it reuses OLD again); None when it is
    no ``--reuse`` run.

    Raises:
        ValueError: when it recorded one that is no longer there.
    """
    recorded = None
    with contextlib.suppress(ValueError, OSError):
        recorded = OutputFolder(out).read_run().get("reuse")
    if not isinstance(recorded, str):
        return None
    if Path(recorded).is_dir():
        return Path(recorded)
    # a trial: it went on, silently encoding the whole corpus again
    raise ValueError(f"--resume: {out} is a --reuse run of {recorded}, which is no longer there; give its new place "
                     "with --resume --reuse OLD (or --force to embed everything again)")


def _recorded_config(folder: Path | None, inputs: Sequence[Path], out: Path, *, resume: bool) -> tuple[
        EmbedConfig, str | None]:
    """The config a folder's run.json records (over these inputs and ``out``) and the model to load for it, or
    embed's defaults and None where there is no folder or its run.json does not read (``--append`` and
    ``--resume`` then fail on it, saying why)."""
    base = {"inputs": [str(p) for p in inputs], "out": str(out)}
    settings: dict = {}
    if folder is not None:
        with contextlib.suppress(ValueError, OSError):
            settings = OutputFolder(folder).read_run().get("settings", {}) or {}
    if not settings:
        return EmbedConfig.from_dict(base), None
    config = EmbedConfig.from_dict(settings, out=out, inputs=inputs, recorded=True)
    name = config.model.name
    from latechunk.models import DEFAULT_MODEL

    if resume or name == DEFAULT_MODEL:  # resume: the recorded name or path, which the settings diff compares
        return config, name
    recorded = {}
    with contextlib.suppress(ValueError, OSError):  # the model folder the manifest records, where it still exists
        recorded = OutputFolder(folder).read_manifest().get("model", {}) or {}
    path = recorded.get("path") or ""
    # the bundled model by its name (its folder's path would be recorded as the model's name: a trial saw a
    # --reuse folder's manifest, and so its exports, name the model by a site-packages path)
    return config, path if path and Path(path).is_dir() else name


def _check_reuse(config: EmbedConfig, reuse: Path, *, given_dedup: bool, append: bool, engine: str,
                 world_size: int) -> None:
    """``--reuse OLD``: OLD is a finished folder embedded without ``--dedup``, not ``--out``, and the run is a
    fresh folder written by one process."""
    if config.dedup is not None and not given_dedup:  # taken from OLD's run.json
        raise ValueError(f"--reuse {reuse}: it was embedded with --dedup, so its documents lack the chunks dropped "
                         "as near-duplicates of others (which may be gone now): embed without --reuse")
    clash = [name for name, on in (("--append", append), ("--engine ray", engine == "ray"),
                                   ("--dedup", config.dedup is not None),
                                   ("torchrun ($WORLD_SIZE > 1)", world_size > 1)) if on]
    if clash:
        raise ValueError(f"--reuse does not combine with {', '.join(clash)} (it writes a fresh folder in one process)")
    if not (reuse / "manifest.json").is_file():
        raise ValueError(f"--reuse {reuse}: not a finished output folder of `latechunk embed` (no manifest.json)")
    if config.out.resolve() == reuse.resolve():
        raise ValueError(f"--reuse {reuse} is --out itself: embed into a new folder and swap it in when it is done "
                         "(README: updating a served index)")


def _check_resumed(config: EmbedConfig, finished: str) -> None:
    """``--resume`` of a run with a run.json: every setting but the model's facts (known once it loads) as
    recorded; an unreadable run.json passes here (preparing the folder says why)."""
    from latechunk.ingest.folder import check_same_settings

    try:
        old = {k: v for k, v in (OutputFolder(config.out).read_run().get("settings") or {}).items() if k != "model"}
    except (ValueError, OSError):
        return
    check_same_settings(old, {k: v for k, v in config.to_dict().items() if k != "model"},
                        what=f"--resume of {'a finished' if finished else 'an interrupted'} run with settings that "
                             "differ from it")


def plan_embed(inputs: Sequence[str | Path], out: str | Path, given: Mapping | None = None, *,
               run: Mapping | None = None, force: bool = False, resume: bool = False, append: bool = False,
               reuse: str | Path | None = None, engine: str = "local", rank: int = 0, world_size: int = 1,
               note: Callable[[str], None] | None = None) -> EmbedPlan:
    """Decide what an ``embed`` run does and with which settings, checking everything that can be checked before
    the model loads but the model's files (the command line reads those next) and the folder's emptiness
    (:meth:`EmbedPlan.check_folder`, after them).

    Args:
        inputs: The input paths.
        out: ``--out``.
        given: The options given, by :data:`latechunk.config.EMBED_OPTIONS`' names (a value None: not given):
            each replaces the recorded or default setting.
        run: How this process runs the model, never read from a folder: ``device``, ``compile``,
            ``sentence_workers``, ``trust_remote_code``, ``index_gpu`` (any of them).
        force: ``--force``: start over in ``out``.
        resume: ``--resume``: continue the run in ``out``.
        append: ``--append``: add the inputs to the finished folder ``out``.
        reuse: ``--reuse OLD``.
        engine: ``--engine`` (``local`` or ``ray``; ``--reuse`` runs locally).
        rank: This process's rank; rank 0 checks that no other process writes ``out``.
        world_size: Processes of the run.
        note: Called with each note on the way (``--resume`` finding no run to continue), before a later check
            may fail.

    Returns:
        The :class:`EmbedPlan`.

    Raises:
        ValueError: an option or setting a constructor refuses, flags that exclude each other (``--force`` and
            ``--resume``, ``--reuse`` with ``--append``, ...), a ``--reuse`` OLD that is no finished folder or
            is ``out``, an ``--append`` whose settings differ from the folder's, a ``--resume`` whose settings
            differ from the run's or of a finished folder with an interrupted append, a run.json that this
            version cannot read back, another process writing ``out``.
    """
    out, given = Path(out), {k: v for k, v in (given or {}).items() if v is not None}
    inputs = tuple(Path(p) for p in inputs)
    reuse = None if reuse is None else Path(reuse)
    has_run = OutputFolder(out).run_path.is_file()
    if resume and reuse is None and has_run:  # a --reuse run resumed: it reuses OLD again
        reuse = _recorded_reuse(out)
    folder = settings_folder(out, append=append, resume=resume, reuse=reuse)
    resumed = resume and has_run  # a run to continue (else --resume starts one)
    if resume and force:  # before saying what --resume would do (a trial saw that note, then this refusal)
        raise ValueError("--force (start over) and --resume (continue) exclude each other; give one")
    if resume and not resumed and note is not None:  # killed before run.json: a new run, said so
        note(f"--resume: {out} holds no run to continue (no run.json); starting a new run with the options given "
             "(embed's defaults for the others)")
    base, model = _recorded_config(folder, inputs, out, resume=resume)
    config = base.with_overrides({"model": model, "trust_remote_code": False, **given, **(run or {}), "force": force,
                                  "resume": resume})  # trust_remote_code: only when asked for, never the folder's
    if reuse is not None:
        _check_reuse(config, reuse, given_dedup="dedup" in given, append=append, engine=engine,
                     world_size=world_size)
    if append:  # the folder's settings, as far as the options tell them, before the model loads
        from latechunk.ingest.append import check_append_options

        check_append_options(config, force=force, resume=resume, world_size=world_size)
    # a finished folder: nothing to continue, and nothing in it is touched; with options given, they are checked
    # against its run.json (here, and once the model's facts are known), so a different one is still refused
    finished = finished_run_note(out) if resume else ""
    if finished and (stray := interrupted_append_shards(out)):  # a trial was told "--force to start over" here
        raise ValueError(f"--resume: {out} holds a finished run and {stray} shard(s) of an --append that was "
                         "interrupted; --resume continues a first run only: run that `latechunk embed NEW --out "
                         f"{out} --append` again to finish it (it drops the partial shards and appends again; the "
                         "folder serves its last finished state meanwhile)")
    if resumed:
        _check_resumed(config, finished)
    plan = EmbedPlan(config=config, append=append, reuse=reuse, resumed=resumed, finished=finished,
                     done=bool(finished) and not given and not (run or {}).get("trust_remote_code"),
                     model_recorded=(append or resume) and "model" not in given, rank=rank)
    if rank == 0 and (append or resume or force) and not plan.done:  # another process writing --out
        from latechunk.ingest.folder import check_unlocked

        check_unlocked(out)
    return plan


def check_finished(plan: EmbedPlan, encoder) -> None:
    """``--resume`` of a finished folder with options given: the settings they give, with the loaded model's
    facts, must be the folder's (the index too: another index is ``latechunk reindex``'s).

    Args:
        plan: The plan (``plan.finished`` set).
        encoder: The loaded :class:`~latechunk.encoder.Encoder`.

    Raises:
        ValueError: naming every difference (and ``reindex`` where the index differs).
    """
    from latechunk.ingest import run_settings
    from latechunk.ingest.folder import check_same_settings

    try:
        check_same_settings(OutputFolder(plan.out).read_run().get("settings", {}), run_settings(plan.config, encoder),
                            what="--resume of a finished run with settings that differ from it", may_change=())
    except ValueError as err:
        hint = (f" (another index for a finished folder: latechunk reindex {plan.out} --index/--precision/"
                "--truncate-dim ...)" if "index." in str(err) else "")
        raise ValueError(str(err) + hint) from None
