"""``sentence_window:late_unit=sentence`` (issue 38): late mode indexes each window's middle sentence and keeps the
window as the chunk (context unit); naive mode and the chunk records are those of plain ``sentence_window``."""

from __future__ import annotations

import numpy as np
import pytest

from latechunk.config import PipelineConfig
from latechunk.pipeline import embed
from latechunk.strategies import get_strategy
from latechunk.types import Document
from tests.models import minilm_encoder

TEXT = ("Paris is the capital of France. It lies on the Seine. The city has two million people. "
        "Its museums are famous. The Louvre is the largest. Many tourists visit every year. "
        "The metro has sixteen lines. Bakeries open early. The river floods in some winters. "
        "Cafes line the boulevards. The tower was built in 1889.")


@pytest.fixture(scope="module")
def encoder():
    return minilm_encoder()


def test_spec_of_the_default_is_unchanged():
    assert get_strategy("sentence_window").spec == "sentence_window:window=1,stride=1"
    s = get_strategy("sentence_window:late_unit=sentence")
    assert s.spec == "sentence_window:window=1,stride=1,late_unit=sentence"
    assert get_strategy(s.spec) == s
    with pytest.raises(ValueError, match="late_unit"):
        get_strategy("sentence_window:late_unit=middle")


@pytest.mark.parametrize("window,stride", [(1, 1), (2, 1), (2, 3), (1, 3)])
def test_units_tile_the_chunks_and_equal_sentence_vectors(encoder, window, stride):
    doc = Document("p", TEXT)
    spec = f"sentence_window:window={window},stride={stride},late_unit=sentence"
    res = embed([doc], encoder, PipelineConfig((spec, f"sentence_window:window={window},stride={stride}",
                                                "sentence_window:window=0"), modes=("late", "naive")))
    tok = res.tokenizations[0]
    s = get_strategy(spec)
    b = res.run(spec).boundaries[0]
    units = s.pool_spans(b, doc, tok)
    # units tile the chunks' tokens, each inside its chunk, non-empty
    assert units[0, 0] == b.token_spans[0, 0] and units[-1, 1] == b.token_spans[-1, 1]
    assert (units[1:, 0] == units[:-1, 1]).all()
    assert ((units[:, 0] >= b.token_spans[:, 0]) & (units[:, 1] <= b.token_spans[:, 1])).all()
    assert (units[:, 1] > units[:, 0]).all()
    # chunk records and naive vectors are plain sentence_window's
    plain = res.run(f"sentence_window:window={window},stride={stride}")
    np.testing.assert_array_equal(b.char_spans, plain.boundaries[0].char_spans)
    np.testing.assert_allclose(res.run(spec).vectors["naive"].vectors, plain.vectors["naive"].vectors, atol=1e-6)
    # a middle unit that is one sentence has that sentence's late vector (window=0 chunks are the sentences)
    sent = res.run("sentence_window:window=0")
    sent_spans = [tuple(x) for x in sent.boundaries[0].token_spans.tolist()]
    late = res.run(spec).vectors["late"].vectors
    hits = 0
    for i, u in enumerate(units.tolist()):
        if tuple(u) in sent_spans:
            np.testing.assert_allclose(late[i], sent.vectors["late"].vectors[sent_spans.index(tuple(u))], atol=1e-5)
            hits += 1
    if stride == 1:
        assert hits >= 1
    else:  # a middle unit is `stride` whole sentences, from the middle one on
        starts = [a for a, _ in sent_spans]
        for u in units[1:-1].tolist():
            assert u[0] in starts and sum(u[0] <= a < u[1] for a in starts) == stride
    # and neighbouring late vectors differ more than plain windows' do
    if stride == 1 and len(late) > 2:
        cos_unit = np.mean(np.sum(late[1:] * late[:-1], axis=1))
        pv = plain.vectors["late"].vectors
        assert cos_unit < np.mean(np.sum(pv[1:] * pv[:-1], axis=1))
