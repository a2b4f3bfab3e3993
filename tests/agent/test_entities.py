"""Query candidates from the question's own words (pure functions, a corpus's shares given by hand)."""

from __future__ import annotations

from sieve.agent.policies.entities import COMMON_SHARE, KEYPHRASE_MAX_SHARE, keyphrases, mentions, query_problem

SHARE = {
    "amcor": 0.01,
    "quick": 0.01,
    "ratio": 0.03,
    "improved": 0.08,  # too common on this corpus to be part of a keyphrase
    "fy2023": 0.004,
    "fy2022": 0.03,  # one word, but not rare enough to be searched alone
    "restructuring": 0.02,
    "liability": 0.04,
}


def share(word: str) -> float:
    return SHARE.get(word, 0.0)  # words the corpus lacks count as absent


def test_keyphrases_are_rare_adjacent_words_in_any_case():
    got = keyphrases("Has AMCOR's quick ratio improved between FY2023 and FY2022?", share)
    assert got == ["AMCOR quick ratio", "FY2023"]  # the possessive dropped; "improved" ends the run
    assert all(len(p.split()) > 1 or share(p.lower()) <= COMMON_SHARE for p in got)


def test_keyphrases_stop_at_punctuation_and_cap_their_length():
    # the comma ends a run; the rarer pair comes first
    assert keyphrases("What is the restructuring liability, quick ratio?", share) == [
        "quick ratio",
        "restructuring liability",
    ]
    long = keyphrases("amcor quick restructuring liability ratio", share)
    assert all(len(p.split()) <= 3 for p in long) and len(long) == 2


def test_no_keyphrases_without_corpus_shares_or_rare_words():
    assert keyphrases("Has AMCOR's quick ratio improved?", None) == []
    assert keyphrases("What improved and how?", share) == []
    assert all(v <= KEYPHRASE_MAX_SHARE or k == "improved" for k, v in SHARE.items())


def test_markdown_links_read_as_their_words():
    """Documentation in Markdown: a link's target is no part of a name, and its end ends one."""
    text = "See [Private Modules](https://docs.npmjs.com/private-modules/intro) and [Orgs](https://x.y/z) now."
    found = mentions(text)
    assert [m.text for m in found] == ["See Private Modules", "Orgs"]
    assert text[found[1].start :].startswith("Orgs")  # offsets still point into the original text
    # A target with spaces: a title, or a Hugo shortcode (Poetry's docs: "See Extras]({{<" was searched).
    hugo = 'the option (see [Extras]({{< relref "pyproject#extras" >}}) and [Orgs](https://x.y/z "Orgs page")).'
    assert [m.text for m in mentions(hugo)] == ["Extras", "Orgs"]


def test_no_query_is_a_stop_word_a_filler_word_or_a_bare_number():
    """The issue's step logs: "2020" and "2026" (a year left after "In" was trimmed, a year of the
    question), "my", "Now", "Congratulations" (sentence openers), "UCAVs" (a token of one chunk)."""
    from sieve.agent.policies.entities import query_problem, question_names, searchable
    from sieve.retriever.bm25 import STOPWORDS

    shares = {"population": 0.01, "lindbergh": 0.004, "2020": 0.01, "ucavs": 0.001, "congratulations": 0.001}

    def corpus(w: str) -> float:  # as BM25's doc_share: a stop word is everywhere
        return 1.0 if w in STOPWORDS else shares.get(w, 0.003)

    chunks = 1000  # a share of 0.001 is one chunk
    names = question_names("What was the 2020 population of the city Lindbergh's plane was named after?", corpus)
    assert "2020" not in names and "Lindbergh" in names
    for query in ("my", "Now", "Now I", "2020", "2026", "In 2026", "1990s"):
        assert query_problem(query, corpus, chunks) is not None, query
    text = "In 2026 the navy flew UCAVs. Congratulations, it worked. Now the Spirit of St. Louis flew."
    found = [m for m in (searchable(m, corpus, chunks) for m in mentions(text)) if m is not None]
    assert [m.text for m in found] == ["Spirit of St. Louis"], found
    # A plain name of one chunk stays searchable where its capitals are its own (not opening a sentence).
    assert query_problem("Balzac", corpus, chunks) is None


def test_degree_adverbs_rare_in_a_small_corpus_are_no_keyphrase():
    """httpx's docs (306 chunks) hold "too" in a few chunks: the learned policy searched "too" alone."""
    small = {"too": 0.003, "pool": 0.02, "size": 0.04, "connections": 0.03}.get
    got = keyphrases("My app opens too many connections. How do I cap the pool size?", lambda w: small(w, 0.0))
    assert got == ["pool size"]
    assert query_problem("too", lambda w: small(w, 0.0)) == "stop words only"


def test_subordinating_conjunctions_are_no_keyphrase():
    """httpx's docs hold "because" in a few chunks: the learned policy searched "because" alone."""
    small = {"because": 0.004, "charset": 0.01, "encoding": 0.03, "garbled": 0.0033}.get
    got = keyphrases("The text comes out garbled because the server sent no charset.", lambda w: small(w, 0.0))
    assert "because" not in " ".join(got)
    assert query_problem("because", lambda w: small(w, 0.0)) == "stop words only"


def test_contractions_and_capitalised_labels_are_no_names():
    """npm's docs: the learned policy searched "Don't" (a bullet of tips) and "BAD" / "GOOD" / "BEST"
    (verdicts in a code block's comments: ``// BAD, will throw an EOVERRIDE error``) as bridging names."""
    text = (
        "Some tips:\n\n* Don't use the same name as a core module.\n* Won't work offline.\n\n```json\n"
        '"overrides": {\n  // BAD, will throw an EOVERRIDE error\n  // GOOD, specs match\n}\n```\n'
        "NOTE: the AMCOR filing. NASA flew."
    )
    assert [m.text for m in mentions(text)] == ["EOVERRIDE", "AMCOR", "NASA"]
    for query in ("Don't", "I'm", "I've", "You're", "They'll", "I'd"):
        assert query_problem(query, lambda w: 0.001) == "stop words only", query
    assert query_problem("Macy's", lambda w: 0.001) is None
    # Codes in capitals inside a sentence stay names (HotpotQA: "ICAO: KELP," is an airport's code).
    assert "KELP" in [m.text for m in mentions("El Paso International Airport (IATA: ELP, ICAO: KELP, FAA LID: ELP)")]


def test_a_chat_turns_interjections_are_no_part_of_a_name():
    """locomo-dev: "Congrats Caroline" and "Woohoo Melanie" were searched; the name alone is the search."""
    found = mentions("Melanie: Congrats Caroline! Good on you. Woohoo Melanie, I'm proud. World War I ended.")
    assert [m.text for m in found if m.text != "Good"] == ["Melanie", "Caroline", "Melanie", "World War I"]


def test_a_name_ends_at_a_code_span_emphasis_or_a_paragraph():
    """Poetry's docs: "POETRY_VIRTUALENVS_CREATE` Create" (an environment variable in code, then the next
    paragraph's first word) and "Poetry?** Execute" (a bold question, then its answer) were searched."""
    text = (
        "**Environment Variable**: `POETRY_VIRTUALENVS_CREATE`\n\nCreate a new virtual environment.\n"
        "**Which Python runs Poetry?** Execute the `poetry debug info` command. Python Software\nFoundation."
    )
    names = [m.text for m in mentions(text)]
    assert "POETRY_VIRTUALENVS_CREATE" in names and "Poetry" in names
    assert not any("Create" in n and "POETRY" in n for n in names) and "Poetry Execute" not in names
    assert "Python Software Foundation" in names  # a line wrapped inside a paragraph does not end a name
