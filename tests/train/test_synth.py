"""Task synthesis on the shipped sample corpus (real index, template writer: no model)."""

from __future__ import annotations

import json

import pytest

from sieve.train.rewards.metrics import contains_answer, normalize_answer
from sieve.train.synth import CorpusView, SynthConfig, read_task_ids, synthesize
from sieve.train.synth_generators import Draft, bridge_snippet, first_description


def _read(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def synth_run(sample_index, tmp_path_factory):
    out = tmp_path_factory.mktemp("synth") / "tasks.jsonl"
    report = synthesize(sample_index, out, SynthConfig(n=6, seed=3), progress=False)
    return out, report


def test_synthesized_tasks_are_verified(sample_index, synth_run) -> None:
    out, report = synth_run
    tasks = _read(out)
    assert report.written == len(tasks) == 6
    for t in tasks:
        assert set(t) == {"id", "question", "answers", "gold_ids", "meta"}
        meta = t["meta"]
        bridge_id, target_id = meta["gold_chunk_ids"]
        bridge, target = sample_index.get_chunks([bridge_id, target_id])
        assert t["gold_ids"] == [bridge.doc_id, target.doc_id] and bridge.doc_id != target.doc_id
        # Supported by the target, absent from the bridge and from the question: both chunks are needed.
        assert contains_answer(target.text, t["answers"])
        assert not contains_answer(bridge.text, t["answers"]) and not contains_answer(t["question"], t["answers"])
        assert f" {normalize_answer(target.title)} " not in f" {normalize_answer(t['question'])} "
        # The bridge really mentions the target (that is the hop).
        assert target.title.split()[0] in bridge.text
        assert meta["hops"] == 2 and meta["generator"] == "heuristic" and meta["seed"] == 3
        assert meta["answer_chunk_ids"] == [target_id]
        distractors = sample_index.get_chunks(meta["distractor_ids"])
        assert distractors and all(not contains_answer(d.text, t["answers"]) for d in distractors)
        assert not {d.chunk_id for d in distractors} & {bridge_id, target_id}


def test_synthesis_is_deterministic_and_resumable(sample_index, synth_run, tmp_path) -> None:
    out, _ = synth_run
    first = [t["id"] for t in _read(out)]
    part = tmp_path / "part.jsonl"
    r1 = synthesize(sample_index, part, SynthConfig(n=3, seed=3), progress=False)
    assert [t["id"] for t in _read(part)] == first[:3] and r1.written == 3
    r2 = synthesize(sample_index, part, SynthConfig(n=6, seed=3), progress=False)  # resume to 6
    assert r2.existing == 3 and r2.written == 3
    assert [t["id"] for t in _read(part)] == first
    r3 = synthesize(sample_index, part, SynthConfig(n=6, seed=3), progress=False)  # nothing left to do
    assert r3.written == 0 and len(read_task_ids(part)) == 6
    other = synthesize(sample_index, tmp_path / "other.jsonl", SynthConfig(n=3, seed=4), progress=False)
    assert other.written == 3 and [t["id"] for t in _read(tmp_path / "other.jsonl")] != first[:3]


def test_verification_rejects_bad_drafts(sample_index) -> None:
    from sieve.train.synth import find_links, verify

    view = CorpusView.load(sample_index)
    cfg = SynthConfig(n=1)
    link = next(lk for c in view.chunks for lk in find_links(c, view, None, cfg, allow_bm25=False))
    answer_in_bridge = Draft("q about it?", (link.mention,), "x")  # the mention is in the bridge text
    assert verify(answer_in_bridge, link, sample_index, cfg)[0] in ("answer_in_bridge", "unsupported")
    unsupported = Draft("q about it?", ("zzqx not in any text",), "x")
    assert verify(unsupported, link, sample_index, cfg)[0] == "unsupported"
    named = Draft(f"What about {link.target.title}?", ("placeholder",), "x")
    word = next(w for w in link.target.text.split() if len(w) > 6 and w.isalpha()
                and not contains_answer(link.bridge.text, [w]))
    named = Draft(f"What does {link.target.title} say?", (word,), "x")
    assert verify(named, link, sample_index, cfg)[0] == "target_named"


def test_template_helpers() -> None:
    assert first_description("Giacomo Puccini was an Italian composer known for operas.") == "Italian composer"
    assert first_description("Paris.") is None
    from sieve.retriever.types import Chunk
    from sieve.train.synth_generators import Link

    b = Chunk("b#0", "b", 0, "Intro here. The film was directed by Stanley Kubrick in 1968. End.", title="Film")
    t = Chunk("k#0", "k", 0, "Stanley Kubrick was an American filmmaker.", title="Stanley Kubrick")
    s = b.text.index("Stanley")
    snippet = bridge_snippet(Link(b, t, "Stanley Kubrick", s, s + len("Stanley Kubrick")))
    assert snippet == "The film was directed by ___ in 1968."
