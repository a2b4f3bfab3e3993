"""Task synthesis on the shipped sample corpus (real index, template writer: no model)."""

from __future__ import annotations

import json

import pytest

from sieve.retriever.types import Chunk
from sieve.train.rewards.metrics import contains_answer, normalize_answer
from sieve.train.synth import CorpusView, SynthConfig, synthesize
from sieve.train.task_io import read_task_ids
from sieve.train.synth_facts import clean_title, find_role, first_description, quoted_content_words, read_subject
from sieve.train.synth_generators import Draft, Link, TemplateWriter


def _read(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def synth_run(sample_index, tmp_path_factory):
    out = tmp_path_factory.mktemp("synth") / "tasks.jsonl"
    report = synthesize(sample_index, out, SynthConfig(n=8, seed=3), progress=False)
    return out, report


def test_synthesized_tasks_are_verified(sample_index, synth_run) -> None:
    out, report = synth_run
    tasks = _read(out)
    assert report.written == len(tasks) == 8
    kinds = {t["meta"]["kind"].split(":")[0] for t in tasks}
    assert kinds == {"bridge", "comparison"}, kinds  # seed 3 draws both shapes on the sample
    for t in tasks:
        assert set(t) == {"id", "question", "answers", "gold_ids", "meta"}
        meta = t["meta"]
        bridge_id, target_id = meta["gold_chunk_ids"]
        bridge, target = sample_index.get_chunks([bridge_id, target_id])
        assert t["gold_ids"] == [bridge.doc_id, target.doc_id] and bridge.doc_id != target.doc_id
        assert meta["hops"] == 2 and meta["generator"] == "heuristic" and meta["seed"] == 3
        assert quoted_content_words(t["question"], [bridge.text, target.text]) <= 4, t["question"]
        q = f" {normalize_answer(t['question'])} "
        if meta["kind"].startswith("bridge:"):
            # Supported by the target, absent from the bridge and from the question: both chunks are needed.
            assert contains_answer(target.text, t["answers"])
            assert not contains_answer(bridge.text, t["answers"]) and not contains_answer(t["question"], t["answers"])
            assert f" {normalize_answer(clean_title(target.title))} " not in q
            # The bridge really mentions the target (that is the hop), and the question names the bridge.
            assert target.title.split()[0] in bridge.text
            assert f" {normalize_answer(clean_title(bridge.title))} " in q
            assert meta["answer_chunk_ids"] == [target_id] and meta["link"] == "title"
            distractors = sample_index.get_chunks(meta["distractor_ids"])
            assert distractors and all(not contains_answer(d.text, t["answers"]) for d in distractors)
        else:
            # "Which of A and B ...": both named, the answer is one of them (or yes / no).
            names = [f" {normalize_answer(clean_title(c.title))} " for c in (bridge, target)]
            assert all(n in q for n in names), t["question"]
            assert t["answers"][0] in ("yes", "no") or f" {normalize_answer(t['answers'][0])} " in names
            assert sorted(meta["answer_chunk_ids"]) == sorted([bridge_id, target_id]) and meta["link"] == "compare"
            distractors = sample_index.get_chunks(meta["distractor_ids"])
        assert not {d.chunk_id for d in distractors} & {bridge_id, target_id}


def test_synthesis_is_deterministic_and_resumable(sample_index, synth_run, tmp_path) -> None:
    out, _ = synth_run
    first = [t["id"] for t in _read(out)]
    part = tmp_path / "part.jsonl"
    r1 = synthesize(sample_index, part, SynthConfig(n=3, seed=3), progress=False)
    assert [t["id"] for t in _read(part)] == first[:3] and r1.written == 3
    r2 = synthesize(sample_index, part, SynthConfig(n=8, seed=3), progress=False)  # resume to 8
    assert r2.existing == 3 and r2.written == 5
    assert [t["id"] for t in _read(part)] == first
    r3 = synthesize(sample_index, part, SynthConfig(n=8, seed=3), progress=False)  # nothing left to do
    assert r3.written == 0 and len(read_task_ids(part)) == 8
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
    word = next(
        w for w in link.target.text.split() if len(w) > 6 and w.isalpha() and not contains_answer(link.bridge.text, [w])
    )
    named = Draft(f"What does {link.target.title} say?", (word,), "x")
    assert verify(named, link, sample_index, cfg)[0] == "target_named"


def test_verification_rejects_quoting_and_bad_comparisons(sample_index) -> None:
    from sieve.train.synth import find_links, verify

    view = CorpusView.load(sample_index)
    cfg = SynthConfig(n=1)
    link = next(
        lk
        for c in view.chunks
        for lk in find_links(c, view, None, cfg, allow_bm25=False)
        if len(lk.bridge.text.split()) > 30
    )
    word = next(
        w
        for w in link.target.text.split()
        if len(w) > 6
        and w.isalpha()
        and not contains_answer(link.bridge.text, [w])
        and not contains_answer(link.target.title, [w])
    )
    # The old template's shape: a bridge sentence quoted verbatim around a blank.
    words = link.bridge.text.replace(link.mention, "___").split()
    quote = " ".join(words[:25])
    assert (
        verify(Draft(f'The article says: "{quote}". What is ___?', (word,), "x"), link, sample_index, cfg)[0]
        == "quotes_passage"
    )
    a, b = view.lead["wiki-stanley-kubrick"], view.lead["wiki-andrei-tarkovsky"]
    pair = Link(a, b, "", 0, 0, "compare")
    names = "Stanley Kubrick and Andrei Tarkovsky"
    ok = Draft(
        f"Are {names} of the same nationality?", ("no",), "comparison:nationality", evidence=("American", "Russian")
    )
    assert verify(ok, pair, sample_index, cfg)[0] is None
    wrong = Draft(
        f"Are {names} of the same nationality?", ("no",), "comparison:nationality", evidence=("Russian", "American")
    )  # each value must come from its own passage
    assert verify(wrong, pair, sample_index, cfg)[0] == "unsupported"
    leaks = Draft(
        f"Is {names.replace(' and ', ', the American, or ')} Russian?",
        ("no",),
        "comparison:nationality",
        evidence=("American", "Russian"),
    )
    assert verify(leaks, pair, sample_index, cfg)[0] == "answer_in_question"


def test_quoted_content_words_counts_runs_not_names() -> None:
    passage = "Lone Wolf McQuade is a 1983 American action film directed by Steve Carver and starring Chuck Norris."
    assert quoted_content_words("Who directed the film Lone Wolf McQuade?", [passage]) == 1
    assert quoted_content_words("What is the 1983 American action film directed by Steve Carver?", [passage]) == 3
    assert quoted_content_words("Which action film was directed and starring someone?", [passage]) == 2  # "action film"
    assert quoted_content_words("Anything here?", []) == 0


def test_facts_and_roles_from_passages() -> None:
    assert first_description("Giacomo Puccini was an Italian composer known for operas.") == "Italian composer"
    assert first_description("Paris.") is None
    film = (
        "Lone Wolf McQuade is a 1983 American action film, starring Chuck Norris and David Carradine, and "
        "directed by Steve Carver."
    )
    person = "Steve Carver (born April 5, 1945) is an American film director and photographer."
    s = read_subject("Lone Wolf McQuade", film)
    assert (s.type_noun, s.person, s.label) == ("film", False, "the film Lone Wolf McQuade")
    assert s.fact("year").answers == ("1983",) and s.fact("directed").answers == ("Steve Carver",)
    p = read_subject("Steve Carver", person)
    assert (
        p.person
        and p.fact("born").answers == ("April 5, 1945", "1945")
        and p.fact("nationality").answers == ("American",)
    )
    assert p.fact("died") is None
    assert find_role(film, film.index("Steve"), film.index("Steve") + 12, s).noun == "the director of {a}"
    assert find_role(film, film.index("David"), film.index("David") + 15, s).noun == "one of the stars of {a}"
    town = "Leland is a town in Brunswick County. The film Maximum Overdrive was filmed in the town in 1986."
    assert (
        find_role(town, town.index("Maximum"), town.index("Maximum") + 17, None).clause
        == "the {btype} that was filmed in {a}"
    )
    assert find_role("It is a word.", 3, 5, None) is None
    assert clean_title("Mirror (1975 film)") == "Mirror"


def test_template_writer_shapes() -> None:
    a = Chunk(
        "f#0",
        "f",
        0,
        "Lone Wolf McQuade is a 1983 American action film directed by Steve Carver.",
        title="Lone Wolf McQuade",
    )
    b = Chunk("s#0", "s", 0, "Steve Carver (born April 5, 1945) is an American film director.", title="Steve Carver")
    c = Chunk(
        "g#0", "g", 0, "Greta Gerwig (born August 4, 1983) is an American actress and filmmaker.", title="Greta Gerwig"
    )
    s = a.text.index("Steve")
    drafts = TemplateWriter().drafts(Link(a, b, "Steve Carver", s, s + 12))
    questions = {d.question for d in drafts}
    assert drafts and all("Steve Carver" not in q and "Lone Wolf McQuade" in q for q in questions)
    assert any("the director of the film Lone Wolf McQuade" in q or "who directed the film" in q for q in questions)
    born = next(d for d in drafts if d.kind.startswith("bridge:born"))
    assert born.answers[-1] == "1945" and born.kind == "bridge:born:directed"
    comps = TemplateWriter().compare(b, c)
    assert {d.kind for d in comps} == {"comparison:born", "comparison:nationality"}
    first = next(d for d in comps if d.kind == "comparison:born")
    assert first.answers == ("Steve Carver",) and first.evidence == ("1945", "1983")
    assert "Steve Carver" in first.question and "Greta Gerwig" in first.question
    assert next(d for d in comps if d.kind == "comparison:nationality").answers == ("yes",)
    assert TemplateWriter().compare(a, b) == []  # a film and a person are not compared


def test_bridge_comparison_drafts_and_verification(sample_index) -> None:
    from sieve.train.synth import make_task, verify

    a1 = Chunk(
        "f#0",
        "f",
        0,
        "Lone Wolf McQuade is a 1983 American action film directed by Steve Carver.",
        title="Lone Wolf McQuade",
    )
    b1 = Chunk("s#0", "s", 0, "Steve Carver (born April 5, 1945) is an American film director.", title="Steve Carver")
    a2 = Chunk(
        "l#0",
        "l",
        0,
        "Lady Bird is a 2017 American comedy-drama film directed by Greta Gerwig.",
        title="Lady Bird (film)",
    )
    b2 = Chunk(
        "g#0", "g", 0, "Greta Gerwig (born August 4, 1983) is an American actress and filmmaker.", title="Greta Gerwig"
    )
    s1, s2 = a1.text.index("Steve"), a2.text.index("Greta")
    other = Link(a2, b2, "Greta Gerwig", s2, s2 + 12)
    link = Link(a1, b1, "Steve Carver", s1, s1 + 12, "bridge_compare", partner=other)
    drafts = TemplateWriter().compare_bridges(link)
    assert {d.kind for d in drafts} == {"bridge_comparison:born", "bridge_comparison:nationality"}
    born = next(d for d in drafts if d.kind == "bridge_comparison:born")
    assert born.answers == ("Lone Wolf McQuade",) and born.evidence == ("1945", "1983")
    assert "director" in born.question and "Lady Bird" in born.question and "Gerwig" not in born.question
    cfg = SynthConfig(n=1)
    reason, facts = verify(born, link, sample_index, cfg)
    assert reason is None, reason
    task = make_task(born, link, facts, cfg, "heuristic")
    assert task["gold_ids"] == ["f", "s", "l", "g"] and task["meta"]["answer_chunk_ids"] == ["s#0", "g#0"]
    assert task["meta"]["hops"] == 4
    named = Draft("Is Steve Carver older than the director of Lady Bird?", ("yes",), "x", evidence=("1945", "1983"))
    assert verify(named, link, sample_index, cfg)[0] == "target_named"
    swapped = Draft(born.question, born.answers, born.kind, evidence=("1983", "1945"))
    assert verify(swapped, link, sample_index, cfg)[0] == "unsupported"
