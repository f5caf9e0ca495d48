"""The Ctrl-C message of an interrupted embed: the shard size it names is the run's group_tokens as resolved
(``--group-tokens``, else the ``--config`` file's, else the folder's run.json), and a folder never created is
said to be not created (not "nothing is kept in OUT")."""

from __future__ import annotations

import json

from latechunk.cli import interrupted_message
from latechunk.config import DEFAULT_GROUP_TOKENS


def test_interrupted_message_uses_group_tokens_of_the_config_file(tmp_path):
    config = tmp_path / "run.toml"
    config.write_text("group_tokens = 4096\n", encoding="utf-8")
    out = tmp_path / "o"
    out.mkdir()
    message = interrupted_message(["embed", "docs", "--out", str(out), "--config", str(config)])
    assert "a shard holds about 4,096 tokens" in message and f"{DEFAULT_GROUP_TOKENS:,}" not in message, message
    # the command line wins over the file
    message = interrupted_message(["embed", "docs", "--out", str(out), "--config", str(config), "--group-tokens", "512"])
    assert "a shard holds about 512 tokens" in message, message
    # out given by the file only
    config.write_text(f'group_tokens = 2048\nout = "{out.as_posix()}"\n', encoding="utf-8")
    message = interrupted_message(["embed", "docs", "--config", str(config)])
    assert f"nothing is kept in {out.as_posix()}" in message and "about 2,048 tokens" in message, message


def test_interrupted_message_uses_group_tokens_of_a_resumed_folder(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"settings": {"group_tokens": 8192}}), encoding="utf-8")
    message = interrupted_message(["embed", "docs", "--out", str(out), "--resume"])
    assert "a shard holds about 8,192 tokens" in message, message


def test_interrupted_message_says_a_folder_never_created_was_not_created(tmp_path):
    out = tmp_path / "never"
    message = interrupted_message(["embed", "docs", "--out", str(out)])
    assert message.startswith(f"interrupted (Ctrl-C); nothing is kept: {out} was not created (no shard"), message
    assert f"nothing is kept in {out}" not in message
    assert f"about {DEFAULT_GROUP_TOKENS:,} tokens" in message
