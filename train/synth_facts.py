"""What a passage says about its subject, read with patterns (no model), for the template question writer.

Encyclopedic lead passages state their subject's facts in a few fixed shapes ("X (born 3 May 1950) is an
American film director", "X is a 1968 film directed by Y", "X is a city in Y"), and a passage that mentions
another subject mostly says how the two relate in a short cue before the mention ("directed by", "born in",
"based on the novel"). Regular expressions over the first sentences read both well enough to write 2Wiki /
HotpotQA-shaped questions. A parser (spaCy) was not chosen: no trusted package ships its English model here,
and it would cost more time per passage than the retrieval that verifies each draft.

- :func:`read_subject`: a lead passage -> :class:`Subject` (type noun, person or not, :class:`Fact` list).
- :func:`find_role`: the bridge passage's cue before (or after) a mention -> :class:`Role`, the phrase that
  points at the mentioned subject through the bridge ("the director of the film X").
- :func:`quoted_content_words`: how many content words a question copies verbatim from a passage (names and
  numbers excepted), so a writer can be held to a short phrase.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan\.?|Feb\.?|Mar\.?|Apr\.?|Jun\.?|Jul\.?|Aug\.?|Sep\.?|Sept\.?|Oct\.?|Nov\.?|Dec\.?)"
)
_DATE = (
    rf"(?:\d{{1,2}}\s+{_MONTH}\s*,?\s+\d{{3,4}}|{_MONTH}\s+\d{{1,2}}\s*,\s*\d{{3,4}}|{_MONTH}\s+\d{{1,2}}\s+\d{{4}}|"
    rf"{_MONTH}\s+\d{{3,4}}|\d{{4}})"
)
_CAP = r"(?:[A-ZÀ-Þ]\.(?:[A-Z]\.)*|[A-ZÀ-ÞĀ-Ž][\w'’\-]*)"  # a capitalised word or an initial ("L.", "L.Q.")
_PARTICLE = r"(?:de|da|di|del|della|der|den|du|des|van|von|le|la|bin|ibn|al|el|y|of|the|upon|am|an|on|sur)"
NAME = rf"{_CAP}(?:[\s\-]+(?:{_PARTICLE}\s+)*{_CAP})*"
PLACE = rf"{NAME}(?:,\s*{NAME}){{0,2}}"

DEMONYMS = frozenset(
    """
Afghan Albanian Algerian American Argentine Argentinian Armenian Australian Austrian Azerbaijani Bangladeshi
Belarusian Belgian Bolivian Bosnian Brazilian British Bulgarian Burmese Cambodian Cameroonian Canadian Chilean
Chinese Colombian Croatian Cuban Cypriot Czech Danish Dutch Ecuadorian Egyptian English Estonian Ethiopian
Filipino Finnish French Georgian German Ghanaian Greek Guatemalan Haitian Hungarian Icelandic Indian Indonesian
Iranian Iraqi Irish Israeli Italian Jamaican Japanese Jordanian Kazakh Kenyan Korean Kurdish Latvian Lebanese
Libyan Lithuanian Luxembourgish Macedonian Malaysian Maltese Mexican Moldovan Mongolian Montenegrin Moroccan
Nepalese Nigerian Norwegian Pakistani Palestinian Persian Peruvian Polish Portuguese Prussian Romanian Roman
Russian Saudi Scottish Senegalese Serbian Singaporean Slovak Slovenian Somali Soviet Spanish Swedish Swiss
Syrian Taiwanese Thai Tunisian Turkish Ukrainian Uruguayan Uzbek Venezuelan Vietnamese Welsh Yugoslav
Zimbabwean""".split()
) | {
    "South African",
    "South Korean",
    "North Korean",
    "New Zealand",
    "Sri Lankan",
    "Hong Kong",
    "Puerto Rican",
    "Costa Rican",
    "West German",
    "East German",
}
_DEMONYM = "(?:" + "|".join(sorted((re.escape(d) for d in DEMONYMS), key=len, reverse=True)) + ")"

PERSON_NOUNS = frozenset(
    """
actor actress activist architect artist astronaut astronomer athlete author bassist biologist bishop boxer
businessman businesswoman cardinal chef chemist choreographer cinematographer coach comedian composer conductor
cricketer critic cyclist dancer designer diplomat director drummer economist editor engineer entertainer
entrepreneur explorer filmmaker footballer general guitarist historian illustrator inventor journalist judge
jurist king lawyer librettist linguist lyricist manager mathematician model monarch musician naturalist
novelist officer painter philanthropist philosopher photographer physician physicist pianist playwright poet
politician pope presenter priest prince princess producer professor queen rapper researcher saint scholar
scientist screenwriter sculptor singer soldier songwriter statesman swimmer teacher theologian translator
violinist wrestler writer youtuber emperor empress duke duchess count countess baron lord noblewoman nobleman
aristocrat courtier player
""".split()
) | frozenset(
    _KIN := ("son", "daughter", "wife", "husband", "mother", "father", "brother", "sister", "consort", "heir", "member")
)
_AGENT = re.compile(r"(?:er|or|ist|ian|man|woman|ess|ant|ent|arch)$")  # with a nationality: "British stateswoman"
_NOT_AGENT = frozenset(
    "newspaper river tower center centre theater theatre computer container corner order water "
    "manor corridor harbor harbour monster character paper power border".split()
)
PLACE_NOUNS = frozenset(
    """
city town village hamlet municipality commune county district province state region country island river lake
mountain suburb neighbourhood neighborhood borough parish capital metropolis settlement community valley
peninsula archipelago canton prefecture oblast territory department locality area
""".split()
)
# Kinds of work whose year is a release / publication / first performance.
WORK_VERBS = {
    "film": "released",
    "movie": "released",
    "album": "released",
    "song": "released",
    "single": "released",
    "ep": "released",
    "game": "released",
    "documentary": "released",
    "series": "first broadcast",
    "sitcom": "first broadcast",
    "show": "first broadcast",
    "novel": "published",
    "book": "published",
    "poem": "published",
    "magazine": "first published",
    "newspaper": "first published",
    "comic": "published",
    "memoir": "published",
    "collection": "published",
    "opera": "first performed",
    "play": "first performed",
    "musical": "first performed",
    "ballet": "first performed",
}
_ORG_NOUNS = frozenset(
    "company corporation channel network station band group team club school university "
    "college museum church party organization organisation agency airline airport brand chain "
    "label publisher restaurant hotel stadium festival award franchise league magazine".split()
)
_LABELLED = frozenset(
    "film album song single novel opera play musical ballet game series sitcom magazine "
    "newspaper documentary book poem".split()
)
_GENRE_FILM = frozenset("thriller comedy drama western horror romance musical animated".split())
_KNOWN_TYPES = PERSON_NOUNS | PLACE_NOUNS | _ORG_NOUNS | frozenset(WORK_VERBS)
_CUT = frozenset("of in on at for from by with to that who which whose where when as about near".split())
_ING_NOUNS = frozenset(
    "building king painting recording ring string thing wing spring setting clothing "
    "evening morning offering writing meeting".split()
)

_SENT_END = re.compile(
    r"(?<![A-Z]\.)(?<!\bSt\.)(?<!\bDr\.)(?<!\bMr\.)(?<!\bJr\.)(?<!\bSr\.)(?<!\bMt\.)(?<!\bNo\.)(?<!\bCo\.)"
    r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])"
)
_DESCRIPTION = re.compile(
    r"\b(?:is|was|are|were)\s+(?:(?:also|currently|now|primarily|best)\s+)?(?:an?|the)\s+(?P<d>[^,;.()]{3,90}?)"
    r"(?=\s*(?:[,;.()]|\s(?:who|which|that|whose|best known|known|founded|located|based|from|in|of|by|with|for|"
    r"produced|directed|written|released|starring|developed|published|created|made|composed|designed|"
    r"and is|and was)\b)|\s*$)"
)
_LIFESPAN = re.compile(rf"\(\s*(?:[^()]{{0,80}}?[;,]\s*)?(?P<b>{_DATE})\s*(?:[–—\-]|to)+\s*(?P<d>{_DATE})\s*\)")
_BORN = re.compile(rf"\bborn\s+(?:on\s+)?(?P<b>{_DATE})")
_DIED = re.compile(rf"\bdied\s+(?:on\s+)?(?P<d>{_DATE})")
_BIRTHPLACE = re.compile(rf"\bborn\s+(?:on\s+)?(?:{_DATE}\s*,?\s*)?(?:in|at)\s+(?:the\s+)?(?P<p>{PLACE})")
_DEATHPLACE = re.compile(rf"\bdied\s+(?:on\s+)?(?:{_DATE}\s*,?\s*)?(?:in|at)\s+(?:the\s+)?(?P<p>{PLACE})")
_PEOPLE_VERBS = r"(?:co-)?(?:directed|written|composed|produced|founded|created|developed|published|designed)"
_BY_PERSON = re.compile(
    rf"\b(?P<v>{_PEOPLE_VERBS}(?:(?:\s*,\s*|\s+and\s+|\s*,\s*and\s+){_PEOPLE_VERBS})*)\s+by\s+"
    rf"(?:(?:{_DEMONYM}-?|[a-z][\w\-]*)\s+){{0,4}}?(?P<n>{NAME})"
)
_FOUNDED = re.compile(
    rf"\b(?P<v>founded|established|formed|built|opened|completed|constructed|incorporated|launched)\s+"
    rf"(?:by\s+{NAME}\s+)?(?:(?:in|on)\s+)?(?:(?:\d{{1,2}}\s+{_MONTH}|{_MONTH}\s+\d{{1,2}},?|{_MONTH})\s+)?"
    r"(?P<y>1\d{3}|20\d{2})\b"
)
_RELEASED = re.compile(
    r"\b(?P<v>released|published|premiered|first performed)\s+(?:\w+\s+){0,3}?in\s+"
    r"(?P<y>1\d{3}|20\d{2})\b"
)
_LOCATED = re.compile(rf"\b(?P<v>located|situated|based|headquartered)\s+(?:in|at|on)\s+(?:the\s+)?(?P<p>{PLACE})")
_PLACE_IN = re.compile(
    rf"\b(?:is|was)\s+(?:an?|the)\s+[^.;()]{{0,60}}?\b(?:in|of)\s+(?:the\s+)?"
    rf"(?:(?:U\.S\.|{_DEMONYM})\s+(?:state|province|region|county|city|department|island)\s+of\s+)?"
    rf"(?P<p>{PLACE})"
)
_CAPITAL = re.compile(
    rf"\b(?:[Ii]ts|[Tt]he)\s+capital(?:\s+(?:and|&)\s+(?:largest|most populous)\s+city)?\s+"
    rf"(?:city\s+)?is\s+(?P<p>{PLACE})"
)
_YEAR_LEAD = re.compile(r"^(?P<y>1\d{3}|20\d{2})\b")
_VERB_ROLE = {
    "directed": ("director", "directed"),
    "written": ("writer", "wrote"),
    "composed": ("composer", "composed"),
    "produced": ("producer", "produced"),
    "founded": ("founder", "founded"),
    "created": ("creator", "created"),
    "developed": ("developer", "developed"),
    "published": ("publisher", "published"),
    "designed": ("designer", "designed"),
    "built": ("builder", "built"),
    "owned": ("owner", "owns"),
    "painted": ("painter", "painted"),
    "illustrated": ("illustrator", "illustrated"),
    "edited": ("editor", "edited"),
    "invented": ("inventor", "invented"),
    "narrated": ("narrator", "narrated"),
    "performed": ("performer", "performed"),
    "recorded": ("performer", "recorded"),
    "established": ("founder", "founded"),
    "led": ("leader", "led"),
    "coached": ("coach", "coached"),
    "managed": ("manager", "managed"),
    "distributed": ("distributor", "distributed"),
    "sponsored": ("sponsor", "sponsors"),
    "manufactured": ("manufacturer", "manufactured"),
    "constructed": ("builder", "built"),
    "operated": ("operator", "operates"),
    "hosted": ("host", "hosts"),
    "presented": ("presenter", "presents"),
    "sung": ("singer", "sang"),
    "run": ("operator", "runs"),
}
_ROLE_PRIORITY = (
    "directed",
    "written",
    "composed",
    "created",
    "founded",
    "established",
    "developed",
    "designed",
    "painted",
    "invented",
    "produced",
    "published",
    "illustrated",
    "edited",
    "built",
    "constructed",
    "manufactured",
    "owned",
    "operated",
    "run",
    "sponsored",
    "performed",
    "sung",
    "recorded",
    "narrated",
    "hosted",
    "presented",
    "led",
    "coached",
    "managed",
    "distributed",
)
_WORK_AUTHOR = {
    "novel": ("author", "wrote"),
    "book": ("author", "wrote"),
    "play": ("playwright", "wrote"),
    "poem": ("poet", "wrote"),
    "story": ("author", "wrote"),
    "memoir": ("author", "wrote"),
    "album": ("artist", "recorded"),
    "song": ("artist", "recorded"),
    "single": ("artist", "recorded"),
    "ep": ("artist", "recorded"),
    "opera": ("composer", "composed"),
    "symphony": ("composer", "composed"),
    "painting": ("painter", "painted"),
    "film": ("director", "directed"),
}


@dataclass(frozen=True)
class Fact:
    """One thing a lead passage states about its subject.

    Attributes:
        kind: ``born``, ``died``, ``birthplace``, ``deathplace``, ``nationality``, ``occupation``, ``year``
            (a work's release / publication), ``founded``, ``location``, ``capital`` or a person-verb
            (``directed``, ``written``, ...).
        answers: accepted answer strings, the canonical one first; each occurs in the passage.
        year: the comparable year of a date fact.
        verb: the verb a question uses ("released", "founded", "directed", ...).
    """

    kind: str
    answers: tuple[str, ...]
    year: int | None = None
    verb: str = ""


@dataclass(frozen=True)
class Subject:
    """A lead passage's subject: its name for questions, what it is, and what the passage says about it."""

    name: str
    type_noun: str | None
    person: bool
    facts: tuple[Fact, ...]

    def fact(self, kind: str) -> Fact | None:
        return next((f for f in self.facts if f.kind == kind), None)

    @property
    def label(self) -> str:
        """The name as a question says it: works keep their kind ("the film Mirror")."""
        t = self.type_noun
        if t in _LABELLED and not self.person and t not in self.name.lower().split():
            return f"the {t} {self.name}"
        return self.name


@dataclass(frozen=True)
class Role:
    """How a bridge passage's subject (A) points at a mentioned subject (B).

    ``noun`` and ``clause`` are phrase templates with ``{a}`` (A's label) and ``{btype}`` (B's type noun):
    ``"the director of {a}"`` / ``"the {btype} who directed {a}"``; either may be empty.
    """

    kind: str
    noun: str = ""
    clause: str = ""


def clean_title(title: str) -> str:
    """The title without a trailing disambiguation ("Mirror (1975 film)" -> "Mirror")."""
    t = re.sub(r"\s*\([^()]*\)\s*$", "", title or "").strip()
    return t or (title or "").strip()


def first_sentence(text: str) -> str:
    return _SENT_END.split(text.strip(), maxsplit=1)[0]


def lead_sentences(text: str, n: int = 2) -> str:
    return " ".join(_SENT_END.split(text.strip(), maxsplit=n)[:n])


def first_description(text: str) -> str | None:
    """The noun phrase after "is a / was an / is the" in the first sentence, if any.

    Example:
        >>> first_description("Stanley Kubrick was an American filmmaker and photographer. He ...")
        'American filmmaker and photographer'
    """
    m = _DESCRIPTION.search(first_sentence(text))
    if not m:
        return None
    words = m.group("d").split()
    while words and words[-1].lower().endswith("ly"):  # "a country primarily" -> "country"
        words.pop()
    return " ".join(words) if 1 <= len(words) <= 8 else None


def _strip_nationality(words: list[str]) -> tuple[str | None, list[str]]:
    """Leading demonym(s) off a descriptor: (the first demonym, the rest)."""
    nat = None
    while words:
        two = " ".join(words[:2]).rstrip("-")
        one = words[0].rstrip("-")
        if two in DEMONYMS:
            nat, words = nat or two, words[2:]
        elif one in DEMONYMS:
            nat, words = nat or one, words[1:]
        elif one.lower() in ("and", "-") and nat:
            words = words[1:]
        else:
            break
    return nat, words


def type_noun(descriptor: str | None) -> str | None:
    """What the subject is, one lower-case noun ("1968 epic science fiction film" -> "film").

    Example:
        >>> type_noun("lake crossing the Canada- US border"), type_noun("American filmmaker and photographer")
        ('lake', 'filmmaker')
        >>> type_noun("American cable and satellite television channel")
        'channel'

    """
    if not descriptor:
        return None
    words = [w for w in descriptor.replace(",", " , ").split() if not re.fullmatch(r"\d{4}s?|\d+(st|nd|rd|th)", w)]
    _, words = _strip_nationality(words)
    kept: list[str] = []
    rest: list[str] = []  # the phrase after a first "and" ("cable and satellite channel")
    for w in words:
        lw = w.lower()
        if lw in _CUT or lw in (",", "or") or (lw.endswith("ing") and lw not in _ING_NOUNS and kept):
            break
        if lw in ("and", "&") or rest:
            rest.append(lw)
            continue
        kept.append(lw)
    head = kept[-1] if kept else None
    if rest and head not in _KNOWN_TYPES and rest[-1] in _KNOWN_TYPES:
        head, kept = rest[-1], kept + rest[1:]
    if head in PERSON_NOUNS:  # "film director" is a director
        return head
    for w in reversed(kept):  # a known kind of work anywhere in the phrase wins ("film noir thriller")
        if w in WORK_VERBS:
            return w
    if head in _GENRE_FILM:
        return "film"
    return head if head and re.fullmatch(r"[a-z][a-z\-]*[a-z]", head) and not head.endswith("ly") else None


def _date_answers(date: str) -> tuple[str, int] | None:
    date = " ".join(date.replace(" ,", ",").split())
    years = re.findall(r"\d{3,4}", date)
    if not years:
        return None
    return date, int(years[-1])


def _place_answers(place: str) -> tuple[str, ...]:
    parts = [p.strip() for p in place.split(",") if p.strip()]
    return tuple(dict.fromkeys([place.strip(), parts[0]])) if parts else ()


def _date_fact(kind: str, raw: str) -> Fact | None:
    got = _date_answers(raw)
    if not got:
        return None
    date, year = got
    return Fact(kind, tuple(dict.fromkeys([date, str(year)])), year=year)


def read_subject(title: str, text: str) -> Subject:
    """What a lead passage says about its subject (facts from its first two sentences).

    Example:
        >>> s = read_subject("Edward Cahn", "Edward L. Cahn (February 12, 1899 – August 25, 1963) was an American "
        ...                  "film director. He was born in Brooklyn, New York.")
        >>> s.type_noun, s.person, s.fact("died").answers, s.fact("birthplace").answers
        ('director', True, ('August 25, 1963', '1963'), ('Brooklyn, New York', 'Brooklyn'))
    """
    first = first_sentence(text)
    lead = lead_sentences(text, 2)
    desc = first_description(text)
    tnoun = type_noun(desc)
    facts, lived = _life_facts(first, lead)
    nat, rest = _strip_nationality(desc.split()) if desc else (None, [])
    person = lived or _reads_as_person(tnoun, nat)
    for kind, rx in (("birthplace", _BIRTHPLACE), ("deathplace", _DEATHPLACE)):
        m = rx.search(lead)
        if m and person:
            facts.append(Fact(kind, _place_answers(m.group("p"))))
    if desc:
        facts += _description_facts(desc, nat, rest, tnoun, person)
    if not person:
        _add_thing_facts(facts, first, lead, tnoun)
    return Subject(name=clean_title(title), type_noun=tnoun, person=person, facts=tuple(facts))


def _life_facts(first: str, lead: str) -> tuple[list[Fact], bool]:
    """Birth and death dates (a lifespan in brackets, or "born ..." and "died ..."); and whether either was found."""
    facts: list[Fact] = []
    life = _LIFESPAN.search(first[:300])
    born = _BORN.search(first) if not life else None
    if life:
        facts += [f for f in (_date_fact("born", life.group("b")), _date_fact("died", life.group("d"))) if f]
    elif born:
        facts += [f for f in (_date_fact("born", born.group("b")),) if f]
        died = _DIED.search(lead)
        if died:
            facts += [f for f in (_date_fact("died", died.group("d")),) if f]
    return facts, bool(life or born)


def _reads_as_person(tnoun: str | None, nat: str | None) -> bool:
    """Whether a description with no life dates is of a person: a person noun, or a nationality and an
    agent noun ("American songwriter") that is no kind of work, place or kin."""
    return tnoun in PERSON_NOUNS or bool(
        nat
        and tnoun
        and _AGENT.search(tnoun)
        and tnoun not in _NOT_AGENT
        and tnoun not in WORK_VERBS
        and tnoun not in PLACE_NOUNS
    )


def _description_facts(desc: str, nat: str | None, rest: list[str], tnoun: str | None, person: bool) -> list[Fact]:
    """Facts of the "X is a ..." description: a person's nationality and occupation, a work's year."""
    facts: list[Fact] = []
    if nat and person:
        facts.append(Fact("nationality", (nat,)))
    occ = " ".join(rest).strip(" -")
    if person and occ and 1 <= len(occ.split()) <= 6 and occ[0].islower() and tnoun not in _KIN:
        facts.append(Fact("occupation", (occ,)))
    y = _YEAR_LEAD.match(desc)
    if y and tnoun in WORK_VERBS and not person:
        facts.append(Fact("year", (y.group("y"),), year=int(y.group("y")), verb=WORK_VERBS[tnoun]))
    return facts


def _add_thing_facts(facts: list[Fact], first: str, lead: str, tnoun: str | None) -> None:
    """Add to ``facts`` those of a subject that is no person: its release or founding year, where it is,
    its capital, and who made it ("directed by ...")."""
    m = _RELEASED.search(lead)
    if m and not any(f.kind == "year" for f in facts):
        facts.append(Fact("year", (m.group("y"),), year=int(m.group("y")), verb=m.group("v")))
    m = _FOUNDED.search(lead)
    if m:
        facts.append(Fact("founded", (m.group("y"),), year=int(m.group("y")), verb=m.group("v")))
    m = _LOCATED.search(lead) or (_PLACE_IN.search(first) if tnoun in PLACE_NOUNS else None)
    if m and m.group("p").split()[0].rstrip(",") not in DEMONYMS:
        facts.append(Fact("location", _place_answers(m.group("p")), verb=m.groupdict().get("v") or "located"))
    m = _CAPITAL.search(lead)
    if m:
        facts.append(Fact("capital", _place_answers(m.group("p"))))
    for m in _BY_PERSON.finditer(lead):
        name = m.group("n").rstrip(".")
        for v in re.findall(r"[a-z]+", m.group("v").replace("co-", "")):
            if v in _VERB_ROLE and not any(f.kind == v for f in facts) and len(name) > 3:
                facts.append(Fact(v, (name,), verb=_VERB_ROLE[v][1]))


# -- the bridge's cue: how A relates to the B it mentions ---------------------------------------------------

_VERBS_BY = "|".join(_VERB_ROLE)
_CUE_BY = re.compile(
    rf"\b(?P<v>(?:co-)?(?:{_VERBS_BY})(?:(?:\s*,\s*|\s+and\s+|\s*,\s*and\s+)(?:co-)?(?:{_VERBS_BY}))*)"
    rf"\s+(?:solely\s+|jointly\s+)?by\s+(?:the\s+)?(?:(?:{_DEMONYM}-?|[a-z][\w\-]*)\s+){{0,3}}$"
)
_CUE_WORK_BY = re.compile(
    rf"\b(?P<w>{'|'.join(_WORK_AUTHOR)})\s+(?:(?!based\b|adapted\b)[\w\-]+\s+){{0,4}}?by\s+"
    rf"(?:(?:{_DEMONYM}-?|[a-z][\w\-]*)\s+){{0,3}}$",
    re.I,
)
_CUES: tuple[tuple[str, re.Pattern[str], str, str], ...] = tuple(
    (kind, re.compile(rx + r"$"), noun, clause)
    for kind, rx, noun, clause in (
        (
            "birthplace",
            r"\bborn\s+(?:on\s+[^.;()]{3,25}?\s+)?(?:in|at)\s+(?:the\s+)?",
            "the birthplace of {a}",
            "the {btype} where {a} was born",
        ),
        (
            "deathplace",
            r"\bdied\s+(?:on\s+[^.;()]{3,25}?\s+)?(?:in|at)\s+(?:the\s+)?",
            "the place of death of {a}",
            "the {btype} where {a} died",
        ),
        (
            "located",
            r"\b(?:located|situated|lies|sited)\s+(?:[a-z]+\s+){0,2}?(?:in|at|on|near)\s+(?:the\s+)?",
            "",
            "the {btype} where {a} is located",
        ),
        ("based", r"\b(?:based|headquartered)\s+(?:in|at)\s+(?:the\s+)?", "", "the {btype} where {a} is based"),
        ("capital", r"\bcapital\s+(?:city\s+)?of\s+(?:the\s+)?", "", "the {btype} whose capital is {a}"),
        (
            "member",
            r"\b(?:a\s+)?(?:founding\s+)?member\s+of\s+(?:the\s+)?(?:(?:rock|pop|band|group)\s+)?",
            "",
            "the {btype} that {a} was a member of",
        ),
        (
            "team",
            r"\b(?:played|plays|playing)\s+(?:\w+\s+){0,3}?for\s+(?:the\s+)?",
            "",
            "the {btype} that {a} played for",
        ),
        (
            "school",
            r"\b(?:educated at|studied at|graduated from|attended|alumnus of|alumna of|graduate of)\s+"
            r"(?:the\s+)?",
            "",
            "the {btype} that {a} attended",
        ),
        (
            "source",
            r"\b(?:based on|adapted from|adaptation of)\s+(?:the\s+|an?\s+)?(?:\d{4}\s+)?"
            r"(?:(?:[a-z]+\s+){0,2}(?:novel|book|play|story|film|comic|musical|poem|series|game|memoir)\s+)?",
            "",
            "the {btype} that {a} is based on",
        ),
        (
            "remake",
            r"\bremake\s+of\s+(?:the\s+)?(?:\d{4}\s+)?(?:[a-z]+\s+){0,2}?",
            "",
            "the {btype} that {a} is a remake of",
        ),
        (
            "sequel",
            r"\bsequel\s+to\s+(?:the\s+)?(?:\d{4}\s+)?(?:[a-z]+\s+){0,2}?",
            "",
            "the {btype} that {a} is a sequel to",
        ),
        ("namesake", r"\bnamed\s+(?:after|for)\s+(?:the\s+)?", "", "the {btype} that {a} is named after"),
        ("part", r"\b(?:is|was)\s+(?:a\s+)?part\s+of\s+(?:the\s+)?", "", "the {btype} that {a} is part of"),
        ("label", r"\bsigned\s+(?:to|with)\s+(?:the\s+)?", "", "the {btype} that {a} signed with"),
        (
            "river",
            r"\b(?:tributary\s+of|flows\s+into|empties\s+into)\s+(?:the\s+)?",
            "",
            "the {btype} that {a} flows into",
        ),
        ("parent", r"\b(?:son|daughter|child)\s+of\s+(?:the\s+)?(?:[a-z]+\s+)?", "a parent of {a}", ""),
        ("father", r"\b(?:his|her|their)\s+father,?\s+(?:the\s+[a-z]+\s+)?", "the father of {a}", ""),
        ("mother", r"\b(?:his|her|their)\s+mother,?\s+(?:the\s+[a-z]+\s+)?", "the mother of {a}", ""),
        (
            "spouse",
            r"\b(?:married(?:\s+to)?|wife\s+of|husband\s+of|(?:his|her)\s+(?:wife|husband),?)\s+"
            r"(?:the\s+[a-z]+\s+)?",
            "the spouse of {a}",
            "",
        ),
        (
            "star",
            rf"\b(?:starring|stars|starred|featuring|features)\s+(?:(?:{_DEMONYM}\s+)?(?:actor|actress|singer)\s+)?",
            "the lead actor of {a}",
            "the {btype} who starred in {a}",
        ),
        (
            "band",
            r"\b(?:vocalist|singer|guitarist|drummer|bassist|keyboardist|frontman|rapper|leader)\s+(?:of|for|in)\s+"
            r"(?:the\s+)?(?:[\w\-]+\s+){0,4}?",
            "",
            "the {btype} that {a} performs with",
        ),
        (
            "headed",
            r"\b(?:chairman|chairwoman|chief executive officer|CEO|president|head|director|chief)\s+(?:of|at)\s+"
            r"(?:the\s+)?",
            "",
            "the {btype} that {a} headed",
        ),
        ("founded_by_a", r"\b(?:founder|co-founder|creator)\s+of\s+(?:the\s+)?", "", "the {btype} that {a} founded"),
        (
            "coached",
            r"\b(?:coach|coordinator|manager|captain)\s+(?:of|at|for)\s+(?:the\s+)?",
            "",
            "the {btype} that {a} coached",
        ),
        (
            "about",
            r"\b(?:autobiography|biography|memoir|documentary|biopic)\s+(?:of|about|on)\s+(?:the\s+)?",
            "",
            "the {btype} that {a} is about",
        ),
        (
            "appeared",
            r"\b(?:role|roles|appeared|appearance|appearances|starred|performance|performances)\s+in\s+"
            r"(?:[^.;]{0,40}?\b)?(?:film|films|series|movie|movies|play|musical|show)\s*,?\s*"
            r"(?:including\s+|such as\s+)?",
            "",
            "a {btype} in which {a} appeared",
        ),
        (
            "made",
            r"\b(?P<v>directed|wrote|produced|composed|founded|co-founded|created|designed|painted|recorded|"
            r"released|published)(?:\s*,?\s*(?:and\s+)?(?:directed|wrote|produced|composed|co-wrote))*\s+"
            r"(?:the\s+|an?\s+|his\s+|her\s+)?(?:[^.;]{0,40}?\b)?"
            r"(?:film|novel|album|song|single|book|play|opera|series|company|band|painting)\s*",
            "",
            "a {btype} that {a} made",
        ),
        ("consists", r"\b(?:consists|consisted|composed|comprised)\s+of\s+", "a member of {a}", ""),
        (
            "kin",
            r"\b(?:his|her|their)\s+(?:(?:eldest|elder|younger|youngest|only|first|second|third)\s+)?"
            r"(?:son|daughter|brother|sister|grandson|granddaughter|nephew|niece|cousin),?\s+(?:the\s+[a-z]+\s+)?",
            "a relative of {a}",
            "",
        ),
        ("child", r"\b(?:father|mother|parent)\s+of\s+(?:the\s+[a-z]+\s+)?", "a child of {a}", ""),
    )
)
_LIST_TAIL = re.compile(rf"(?:{NAME}\s*,\s*)*{NAME}\s*,?\s+(?:and|&)\s+$")
_AFTER = re.compile(
    r"^\s*(?:\([^()]*\)\s*)?(?:was|were)\s+(?P<v>filmed|shot|recorded|held|founded|born|built|"
    r"established|set|formed)\s+(?:in|at|on)\b"
)
_PLACE_DESC = re.compile(r"\b(?:is|was)\s+an?\s+[^.;()]{0,60}?\b(?:in|of)\s+(?:the\s+)?$")


def find_role(text: str, start: int, end: int, a: Subject | None) -> Role | None:
    """The cue in ``text`` (A's passage) that says how A relates to the subject mentioned at ``start:end``.

    Example:
        >>> t = "Lone Wolf McQuade is a 1983 American action film directed by Steve Carver."
        >>> find_role(t, t.index("Steve"), len(t) - 1, None).noun
        'the director of {a}'
    """
    sentence_start = max([0] + [m.end() for m in _SENT_END.finditer(text[:start])])
    before = text[sentence_start:start][-160:].rstrip(" \"“‘'(")
    before = before + " " if before else before
    listed = _LIST_TAIL.search(before)
    if listed:  # "directed by X and ___": one of several, so "a director", not "the director"
        before = before[: listed.start()]
    m = _CUE_BY.search(before)
    if m:
        verbs = re.findall(r"[a-z]+", m.group("v").replace("co-", ""))
        verb = next(v for v in _ROLE_PRIORITY if v in verbs)
        noun, clause = _VERB_ROLE[verb]
        if listed:
            return Role(verb, f"one of the {noun}s of {{a}}", f"a {{btype}} who {clause} {{a}}")
        return Role(verb, f"the {noun} of {{a}}", f"the {{btype}} who {clause} {{a}}")
    m = _CUE_WORK_BY.search(before)
    if m and a is not None and a.type_noun == m.group("w").lower():
        noun, clause = _WORK_AUTHOR[m.group("w").lower()]
        return Role(noun, f"the {noun} of {{a}}", f"the {{btype}} who {clause} {{a}}")
    for kind, rx, noun, clause in _CUES:
        if rx.search(before):
            if listed and noun.startswith("the ") and kind != "star":
                continue  # "the father of" a list makes no sense; the generic phrase is used instead
            if listed and kind == "star":
                return Role(kind, "one of the stars of {a}", "a {btype} who starred in {a}")
            return Role(kind, noun, clause.replace("the {btype}", "a {btype}") if listed else clause)
    if a is not None and a.type_noun in PLACE_NOUNS and _PLACE_DESC.search(before) and sentence_start == 0:
        return Role("located", "", "the {btype} where {a} is located")
    after = _AFTER.match(text[end : end + 60])
    if after:
        v = after.group("v")
        return Role(f"{v}_in", "", f"the {{btype}} that was {v} in {{a}}" if v != "born" else "")
    return None


# -- how much a question quotes --------------------------------------------------------------------------

_TOKEN = re.compile(r"[\wÀ-ÿ]+(?:['’][\w]+)?")
STOPWORDS = frozenset(
    """
a an the of in on at to for from by with and or but nor is was are were be been being as that which who whom
whose what when where why how this these those it its his her their he she they them there than then so not no
do does did has have had into onto over under about after before during between both either neither same also
one first which s
""".split()
)


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def quoted_content_words(question: str, passages: list[str]) -> int:
    """Most content words in one run of question words that a passage holds verbatim, in order.

    Names and numbers (capitalised or digit tokens after the first word) and stopwords do not count, so
    "directed by Steve Carver" counts 1 and "an American action film directed by" counts 3.

    Example:
        >>> quoted_content_words("When was the director of the action film Lone Wolf born?",
        ...                      ["Lone Wolf is a 1983 American action film directed by Steve Carver."])
        2
    """
    q = _tokens(question)
    weight = [
        0 if (i > 0 and (w[0].isupper() or w[0].isdigit())) or w.lower() in STOPWORDS or w[0].isdigit() else 1
        for i, w in enumerate(q)
    ]
    ql = [w.lower() for w in q]
    best = 0
    for text in passages:
        p = [w.lower() for w in _tokens(text)]
        prev = [0] * (len(p) + 1)  # content words of the common run ending at (i-1, j-1); -1 marks no run
        prev_run = [False] * (len(p) + 1)
        for i in range(len(ql)):
            cur = [0] * (len(p) + 1)
            cur_run = [False] * (len(p) + 1)
            for j in range(len(p)):
                if ql[i] == p[j]:
                    cur[j + 1] = (prev[j] if prev_run[j] else 0) + weight[i]
                    cur_run[j + 1] = True
                    best = max(best, cur[j + 1])
            prev, prev_run = cur, cur_run
    return best


__all__ = [
    "DEMONYMS",
    "Fact",
    "NAME",
    "PERSON_NOUNS",
    "PLACE",
    "PLACE_NOUNS",
    "Role",
    "STOPWORDS",
    "Subject",
    "WORK_VERBS",
    "clean_title",
    "find_role",
    "first_description",
    "first_sentence",
    "lead_sentences",
    "quoted_content_words",
    "read_subject",
    "type_noun",
]
