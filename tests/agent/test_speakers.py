"""In a conversation, the closing ranking prefers the turns of the speaker a question names."""

from __future__ import annotations

import pytest

from sieve.agent.config import FloorConfig
from sieve.agent.ranking.features import FEATURES, ClosingPool
from sieve.agent.ranking.model import Ranker, fuse
from sieve.agent.ranking.speakers import named, speaker_weights
from sieve.agent.trace import Evidence
from sieve.core.errors import InvalidInput
from sieve.retriever.turns import is_conversation, speaker, speakers

CHAT = {
    "s1#0": "Melanie: Wow, Caroline! Any other exciting LGBTQ events coming up?",
    "s1#1": "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "s2#0": "Melanie: We went camping in the forest last week with the kids.",
    "s3#0": "Caroline: Thanks, Mel!\nMelanie: The pottery class was great.",  # two turns in one chunk
    "s4#0": "[a photo of a tent by a lake]",  # no one's turn
}


def _ev(cid: str) -> Evidence:
    return Evidence(chunk_id=cid, doc_id=cid.split("#")[0], score=0.0, rank=0, text=CHAT[cid])


def test_a_turn_s_speakers_are_the_labels_that_open_its_lines():
    assert speaker("Caroline: I went.") == ("Caroline", "I went.")
    assert speaker("Dr. Jane Smith: Take two.") == ("Dr. Jane Smith", "Take two.")
    assert speaker("lower case: no")[0] == "" and speaker("A sentence: that runs on")[0] == ""
    assert speakers(CHAT["s3#0"]) == {"Caroline", "Melanie"}
    assert speakers("Run it.\nNo label here") == set()
    assert is_conversation(CHAT.values())
    assert not is_conversation(["## Install\nRun it.", "Note: this is a note.", "Plain text."])
    assert not is_conversation(["Caroline: hi"])  # one chunk is no conversation


def test_an_exported_chat_log_s_time_stamps_come_before_its_speakers():
    # WhatsApp (Android, then iOS), a Slack or Discord copy: the speaker follows the stamp
    whatsapp = ["12/31/23, 9:15 PM - Jon Smith: Happy new year!", "12/31/23, 9:16 PM - Gina: You too, Jon."]
    bracketed = ["[31/12/2023, 21:15:02] Jon: Dinner at eight?", "[09:15] Gina: Sure.\n[09:16] Jon: Great."]
    assert [speaker(t)[0] for t in whatsapp + bracketed] == ["Jon Smith", "Gina", "Jon", "Gina"]
    assert speakers(bracketed[1]) == {"Gina", "Jon"} and is_conversation(whatsapp)
    assert speaker("[1] Smith: cited")[0] == "Smith"  # a bracket with a digit reads as a stamp, as in a log
    assert speaker("2023 - Results: up 4%")[0] == "Results"  # the shape alone: callers need most chunks to be turns
    assert speaker("Version 2.0 - notes: see below")[0] == ""


def test_a_speaker_s_capitals_may_be_any_alphabet_s():
    assert speaker("Élodie Martin: Bonjour à tous.")[0] == "Élodie Martin"
    assert speakers("Łukasz: Cześć!\nÖzge: Merhaba.") == {"Łukasz", "Özge"}
    assert speaker("élodie: lower case")[0] == "" and speaker("Élodie martin: half")[0] == ""


def test_named_reads_the_whole_label_or_one_of_its_names_case_kept():
    assert named("When did Caroline go?", "Caroline") and named("What did Jane say?", "Dr. Jane Smith")
    assert named("Did Smith agree?", "Dr. Jane Smith") and not named("Which Dr. said it?", "Dr. Jane Smith")
    assert not named("When did caroline go?", "Caroline") and not named("Carolines?", "Caroline")
    assert not named("A library dropped Python 3.7: what now?", "A")  # an FAQ's "A:" is no one


def test_weights_discount_only_the_turns_of_speakers_the_question_does_not_name():
    texts = list(CHAT.values())
    assert speaker_weights("Where did Melanie go camping?", texts, 0.8) == [1.0, 0.2, 1.0, 1.0, 1.0]
    assert speaker_weights("Where did they go camping?", texts, 0.8) == [1.0] * 5  # no speaker named
    assert speaker_weights("Where did Melanie go camping?", texts, 0.0) == [1.0] * 5  # off
    docs = ["Note: run it first.", "## Install\nMelanie: not a chat", "Plain text."]
    assert speaker_weights("Does Note say Melanie?", docs, 0.8) == [1.0] * 3  # not a conversation


def test_the_named_speaker_s_turn_moves_above_the_other_speaker_s():
    """The ranker (cosine alone here) puts Melanie's question first; asked about Caroline, her turn leads."""
    policy = [_ev("s1#0"), _ev("s1#1"), _ev("s2#0")]
    cos = {"s1#0": 0.9, "s1#1": 0.8, "s2#0": 0.2}
    model = Ranker(coef=[5.0 if n == "cos" else 0.0 for n in FEATURES], intercept=0.0)
    closing = ClosingPool(policy, cos, {})
    question = "What LGBTQ events has Caroline been to?"
    plain = fuse(policy, closing, model, 3, question=question)
    assert [e.chunk_id for e in plain] == ["s1#0", "s1#1", "s2#0"]
    ranked = fuse(policy, closing, model, 3, speaker_discount=0.8, question=question)
    assert [e.chunk_id for e in ranked] == ["s1#1", "s1#0", "s2#0"]
    assert [e.score for e in ranked] == sorted((e.score for e in ranked), reverse=True)
    assert ranked[1].score < plain[0].score  # the discounted probability is the score shown
    assert ranked[1].metadata["speaker_weight"] == 0.2 and "speaker_weight" not in ranked[0].metadata


def test_floor_config_checks_the_speaker_discount():
    assert FloorConfig().speaker_discount == 0.8
    for bad in (-0.1, 1.0, 2.0):
        with pytest.raises(InvalidInput, match="speaker_discount"):
            FloorConfig(speaker_discount=bad)


TURNS = [
    "Gina: I just launched an ad campaign for my clothing store to grow the business.",
    "Jon: Congrats on the clothing store! My dance studio is struggling, so I took a temp job.",
    "Gina: The store's online shop is doing well; I added a new summer line last week.",
    "Jon: I'm thinking of running an ad for the studio too, like your store campaign.",
    "Gina: Networking events helped me find suppliers for the store.",
    "Jon: The studio's students won a dance competition on Saturday!",
]


def test_a_real_episode_puts_the_named_speaker_s_turns_first(tmp_path, embedder):
    """The learned policy over a real store of one conversation's turns (each indexed with the turn before
    it): without the rule a turn of Jon's is second; with it, the turns of Gina, whom the question names,
    lead, and none of hers moves down."""
    from sieve.agent import AgentConfig, SearchAgent, make_policy
    from sieve.retriever import CorpusIndex, Document, RetrieverConfig

    index = CorpusIndex.open(RetrieverConfig(data_dir=tmp_path), "chat", create=True, embedder=embedder)
    docs = [Document(f"c1-D1-{i}", t, title="Gina & Jon, session 1") for i, t in enumerate(TURNS, 1)]
    index.writer.index_documents(docs, progress=False)
    question = "How did Gina promote her clothing store?"

    def ranked(discount: float) -> list[Evidence]:
        config = AgentConfig(k=6, floor=FloorConfig(speaker_discount=discount))
        return SearchAgent(index, make_policy("learned", config), config).run(question).returned

    off, on = ranked(0.0), ranked(0.8)
    assert {e.chunk_id for e in on} == {e.chunk_id for e in off}  # the same pool, ranked again
    speakers_on = [e.text.split(":")[0] for e in on]
    assert speakers_on[:2] == ["Gina", "Gina"], speakers_on
    assert any(e.text.startswith("Jon:") for e in off[:2]), "the case needs a Jon turn high without the rule"
    off_ids, on_ids = [e.chunk_id for e in off], [e.chunk_id for e in on]
    gina = [e.chunk_id for e in on if e.text.startswith("Gina:")]
    assert len(gina) == 3 and all(on_ids.index(c) <= off_ids.index(c) for c in gina), (off_ids, on_ids)
