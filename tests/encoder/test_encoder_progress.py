"""The encoder's token bar (``progress=True``) shows on stderr only when it is a terminal (as ``embed``'s): stderr
redirected to a file holds no carriage-return bar lines."""

from __future__ import annotations

import sys

import pytest

from tests.models import minilm_encoder


@pytest.mark.parametrize("tty", [False, True])
def test_encode_bar_only_on_a_terminal(capsys, monkeypatch, tty):
    encoder = minilm_encoder()
    toks = [encoder.tokenizer("Rivers flow to the sea."), encoder.tokenizer("Trains run on rails.")]
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
    capsys.readouterr()
    states = encoder.token_states(toks, progress=True)
    assert [len(s) for s in states] == [len(t) for t in toks]
    err = capsys.readouterr().err
    assert ("encode" in err) is tty, err
    assert ("tok" in err and "\r" in err) is tty, err
