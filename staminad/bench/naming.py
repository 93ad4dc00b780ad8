"""Names for generated designs: `programmatic` word combinations and `themed` product domains.

A namer only draws from the caller's `random.Random` and looks at the names already in use, so
the same seed always yields the same names. Themed domains read like real products; when a long
scenario exhausts a domain's nouns, names are compounded from the same vocabulary, never numbered. Every name
drawn keeps the policy written down in `namerules` (one meaning per field name, no name nested in another): a
field's `taken` is a `namerules.FieldRoom`, and an entity name is drawn clear of the state's entity names.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Literal

from staminad.bench.domains import DOMAINS, Domain
from staminad.bench.namerules import nesting
from staminad.bench.vocabulary import (
    ACTION_VERBS,
    GENERIC_FIELDS,
    NEUTRAL_WORDS,
    PROG_ENUM_VALUES,
    PROG_NOUNS,
    PROG_WORDS,
    QUALIFIERS,
    RENAME_QUALIFIERS,
    ROLE_ENUMS,
    THEMED_PREFIXES,
    name_fits,
)

NamingMode = Literal["programmatic", "themed"]


@functools.lru_cache(maxsize=4096)
def _split_camel(name: str) -> tuple[str, ...]:
    words: list[str] = []
    for ch in name:
        if ch.isupper() or not words:
            words.append(ch.lower())
        else:
            words[-1] += ch
    return tuple(words)


def strip_qualifiers(name: str) -> str:
    """A themed field word without the qualifiers renames put in front (`target_roast_level` -> `roast_level`)."""
    for q in (*RENAME_QUALIFIERS, *QUALIFIERS):
        name = name.removeprefix(q + "_")
    return name


def enum_vocabulary(domain: Domain) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """(field word, values, spare values) of every enum a themed scenario of `domain` starts from its words."""
    roles = [(h, tuple(v.split()), tuple(sp.split())) for h, (v, sp) in ROLE_ENUMS.items()]
    return [*domain.enums, *roles]


def _compounds(base: str, suffixes: tuple[str, ...], words: tuple[str, ...]) -> Iterator[str]:
    """`base` with each suffix, then with one word in front, then two, and so on: never a number."""
    yield from (base + s for s in suffixes)
    for n in itertools.count(1):
        yield from ("".join(p) + base for p in itertools.product(words, repeat=n))


def _first_fit(rng: random.Random, options: list[str], ok: Callable[[str], bool]) -> str:
    """A random option that is `ok`, drawn as `rng.choice` would while the first draw fits; "" when none does."""
    while options:
        name = rng.choice(options)
        if ok(name):
            return name
        options.remove(name)
    return ""


def _words(rng: random.Random, words: Sequence[str]) -> str:
    """Two or three words of `words` run together: an entity name of last resort."""
    return "".join(rng.sample(words, rng.randint(2, 3)))


def _qualified_word(rng: random.Random, pool: Sequence[str], taken: Collection[str]) -> str:
    """A role word of `pool` with a qualifier in front, then also a neutral tail, then two qualifiers: a random
    free name of the first of these tiers that has one."""
    for tier in _qualified_tiers(pool):
        name = _first_fit(rng, tier, lambda n: n not in taken)
        if name:
            return name
    raise AssertionError(f"no free name of {pool}")


def _qualified_tiers(pool: Sequence[str]) -> Iterator[list[str]]:
    for tier in _tiers(tuple(pool)):
        yield list(tier)  # a copy: `_first_fit` takes out what does not fit


@functools.lru_cache(maxsize=64)
def _tiers(pool: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    return (
        tuple(f"{q}_{p}" for q in QUALIFIERS for p in pool),
        tuple(f"{q}_{p}_{n}" for q in QUALIFIERS for p in pool for n in NEUTRAL_WORDS),
        tuple(
            f"{q}_{r}_{p}_{n}" for q in QUALIFIERS for r in QUALIFIERS if q != r for p in pool for n in NEUTRAL_WORDS
        ),
    )


class Namer:
    """Draws fresh names for one scenario from its mode (and, if themed, its domain).

    Both modes remember what they have handed out: an entity name or an enum type name is never
    given twice in a scenario (so no name passes from a deleted or renamed entity to another one,
    and chained renames cannot shuffle names), and no name contradicts its type (a word that says
    what a field holds, such as `username` or `count`, names only a field of that kind; a reference
    is named after its target). The themed mode also reuses field words only once the role's fresh
    words are used up, and gives no two enums the same value list. The programmatic mode otherwise
    draws the paper's random word combinations.
    """

    def __init__(self, mode: NamingMode, rng: random.Random) -> None:
        self.mode = mode
        self.domain: Domain | None = rng.choice(DOMAINS) if mode == "themed" else None
        self._entities_seen: set[str] = set()  # lowercased
        self._enum_types_issued: set[str] = set()
        self._fields_issued: set[str] = set()
        self._enum_sets_issued: set[tuple[str, ...]] = set()
        self._spares: dict[tuple[str, ...], tuple[str, ...]] = {}  # an issued value set -> its spare values, if any
        self._compounds: list[tuple[str, str]] = []  # (compound of nouns, lowercased), made once

    def _nouns(self) -> tuple[str, ...]:
        return self.domain.nouns if self.domain else PROG_NOUNS

    def entity_name(self, rng: random.Random, taken: Collection[str]) -> str:
        """A CamelCase entity name whose endpoint is unused (case-insensitively) and that is no whole-word part
        of an entity name in `taken` (the state's), nor they of it (`namerules`)."""
        self._entities_seen.update(map(str.lower, taken))
        nests = nesting(taken)
        seen = self._entities_seen

        def ok(name: str) -> bool:
            return name.lower() not in seen and not nests(name)

        name = self._themed_entity_name(rng, ok) if self.domain else self._programmatic_entity_name(rng, ok)
        seen.add(name.lower())
        return name

    def _programmatic_entity_name(self, rng: random.Random, ok: Callable[[str], bool]) -> str:
        nouns = self._nouns()
        name = _first_fit(rng, [n for n in nouns if n.lower() not in self._entities_seen], ok)
        if name:
            return name
        if not self._compounds:
            pairs = [_split_camel(a)[0].capitalize() + b for a in nouns for b in nouns if a != b]
            self._compounds = [(n, n.lower()) for n in pairs]
        name = _first_fit(rng, [n for n, lower in self._compounds if lower not in self._entities_seen], ok)
        if name:
            return name
        words = [w.capitalize() for w in PROG_WORDS]
        for tries in itertools.count():  # then names of words alone, which hold no noun of the state
            name = rng.choice(words) + rng.choice(words) + rng.choice(nouns) if tries < 500 else _words(rng, words)
            if ok(name):
                return name
        raise AssertionError("unreachable")

    def _themed_entity_name(self, rng: random.Random, ok: Callable[[str], bool]) -> str:
        assert self.domain is not None
        seen = self._entities_seen
        nouns = self.domain.nouns
        name = _first_fit(rng, [n for n in nouns if n.lower() not in seen], ok)
        if not name:
            if not self._compounds:
                self._compounds = [(p + n, (p + n).lower()) for p in THEMED_PREFIXES for n in nouns]
            name = _first_fit(rng, [name for name, lower in self._compounds if lower not in seen], ok)
            for tries in itertools.count():
                if name and ok(name):
                    break
                words = THEMED_PREFIXES if tries < 500 else tuple(w.capitalize() for w in PROG_WORDS)
                name = rng.choice(words) + _split_camel(rng.choice(nouns))[0].capitalize() + rng.choice(nouns)
                if tries >= 1000:  # names of prefixes alone, which hold no noun of the state
                    name = _words(rng, THEMED_PREFIXES)
        return name

    def field_name(self, rng: random.Random, kind: str, taken: Collection[str]) -> str:
        """A snake_case field name, drawn from words that suit `kind` where the mode has them. `taken` holds
        every name the field may not take (a `namerules.FieldRoom` says so for the whole policy)."""
        if self.domain is not None:
            return self._themed_field_name(rng, kind, taken)
        pool: list[str] = []
        for _ in range(4):
            n = rng.randint(1, 3)
            pool.append("_".join(rng.sample(PROG_WORDS, n)))
        fresh = [p for p in pool if p != "id" and p not in taken and name_fits(p, kind)]
        if fresh:
            return rng.choice(fresh)
        for tries in itertools.count():  # the pool's words with a neutral tail, then any words: room always remains
            head = rng.choice(pool) if tries < 100 else "_".join(rng.sample(PROG_WORDS, 1 + tries % 3))
            name = f"{head}_{rng.choice(NEUTRAL_WORDS)}"
            if name not in taken:
                return name
        raise AssertionError("unreachable")

    def _role_words(self, kind: str) -> list[str]:
        assert self.domain is not None
        if kind == "enum":
            return [hint for hint, _, _ in self.domain.enums] + list(ROLE_ENUMS)
        role = kind if kind in GENERIC_FIELDS else "string"
        return list(self.domain.fields.get(role, ())) + list(GENERIC_FIELDS[role])

    def _themed_field_name(self, rng: random.Random, kind: str, taken: Collection[str]) -> str:
        pool = self._role_words(kind)
        usable = [p for p in pool if p not in taken]
        fresh = [p for p in usable if p not in self._fields_issued]
        if fresh or usable:
            name = rng.choice(fresh or usable)
        else:
            name = _qualified_word(rng, pool, taken)
        self._fields_issued.add(name)
        return name

    def renamed_field(self, rng: random.Random, kind: str, old: str, taken: Collection[str]) -> str | None:
        """A new name for field `old` of `kind`, or None when there is none. Reference fields (and themed enum
        fields) keep their word and gain a qualifier (`roast_level` -> `target_roast_level`), since their values
        already say what they hold."""
        refs = kind in ("ref", "ref_list")
        if not refs and (self.domain is None or kind != "enum"):
            return self.field_name(rng, kind, taken)
        name = self._qualified(rng, strip_qualifiers(old), old, taken)
        if name is not None:
            self._fields_issued.add(name)
        return name

    def _qualified(self, rng: random.Random, base: str, old: str, taken: Collection[str]) -> str | None:
        """`base` with a qualifier in front (two or three once one is not enough): a name that keeps saying what
        it holds; None when every such name is taken (a field of the entity holds `base` itself)."""
        words = (*RENAME_QUALIFIERS, *QUALIFIERS)
        options = [f"{q}_{base}" for q in words if f"{q}_{base}" not in taken and f"{q}_{base}" != old]
        fresh = [o for o in options if o not in self._fields_issued]
        if fresh or options:
            return rng.choice(fresh or options)
        for n in (2, 3):  # never a number: more qualifiers
            more = ["_".join(p) + f"_{base}" for p in itertools.product(words, repeat=n) if len(set(p)) == n]
            free = [o for o in more if o not in taken and o != old]
            if free:
                return rng.choice(free)
        return None

    def ref_field_name(self, rng: random.Random, target: str, many: bool, taken: Collection[str]) -> str | None:
        """A name for a reference to `target`, e.g. `supplier` or `items` style plurals; None when none is free."""
        base = "_".join(_split_camel(target))
        candidates = [base + ("s" if many else "")]
        candidates += [
            f"{w}_{base}{'s' if many else ''}"
            for w in ("primary", "linked", "main", "related", "assigned", "backup", "preferred")
        ]
        for c in candidates:
            if c not in taken and c != "id":
                return c
        return self._qualified(rng, candidates[0], "", taken)

    def enum_values(
        self, rng: random.Random, field: str, in_use: Collection[tuple[str, ...]] = ()
    ) -> tuple[str, tuple[str, ...]]:
        """A (field name hint, values) pair for a new enum field; themed lists differ from every list `in_use`."""
        if self.domain is not None:
            return self._themed_enum_values(rng, field, set(in_use))
        in_use_sets = set(map(frozenset, in_use))
        values = tuple(rng.sample(PROG_ENUM_VALUES, rng.randint(3, 4)))
        while frozenset(values) in in_use_sets:  # a new enum type never repeats an existing one's values
            values = tuple(rng.sample(PROG_ENUM_VALUES, rng.randint(3, 4)))
        return field, values

    def _themed_enum_values(
        self, rng: random.Random, field: str, in_use: set[tuple[str, ...]]
    ) -> tuple[str, tuple[str, ...]]:
        assert self.domain is not None

        in_use_sets = list(map(frozenset, in_use))  # once per call, not once per candidate

        def free(values: tuple[str, ...]) -> bool:  # no enum of the state holds it already, grown or not
            return not any(map(set(values).issubset, in_use_sets))

        own = [(h, v, sp) for h, v, sp in self.domain.enums if free(v)]
        fresh = [x for x in own if x[1] not in self._enum_sets_issued]
        generic = [x for x in enum_vocabulary(self.domain)[len(self.domain.enums) :] if free(x[1])]
        # The domain's own sets first, fresh ones before reused ones; the role sets only once those are in use.
        pick = fresh or own or [x for x in generic if x[0] == field] or generic
        if pick:
            hint, values, spares = rng.choice(pick)
        else:
            hint, spares = field, ()
            values = tuple(rng.sample(PROG_ENUM_VALUES, 3))
            in_use_frozen = set(in_use_sets)
            while frozenset(values) in in_use_frozen:
                values = tuple(rng.sample(PROG_ENUM_VALUES, rng.randint(3, 4)))
        self._enum_sets_issued.add(values)
        if spares:
            self._spares[values] = spares
        else:  # a set with no spares gives a grown enum nothing: not kept, so the lookups below skip it
            self._spares.pop(values, None)
        return hint, values

    def enum_field_name(self, rng: random.Random, taken: Collection[str]) -> str:
        """A role word such as `status` that is not `taken`, else a drawn name; "" in the themed mode, whose enum
        fields are named after their values (the caller draws a name only if those give none)."""
        options = ["status", "phase", "stage", "state", "tier", "kind", "category", "mode", "level", "priority_band"]
        fresh = [o for o in options if o not in taken]
        if fresh:
            return rng.choice(fresh)
        return "" if self.domain is not None else self.field_name(rng, "enum", taken)

    def enum_type_name(self, field: str, taken: Collection[str]) -> str:
        """A CamelCase name for the enum type of `field`: after the field, never after its entity (an entity
        rename would leave the prefix behind), and never a name an enum type or an entity had before."""
        base = "".join(w.capitalize() for w in field.split("_"))
        used = self._entities_seen.union(map(str.lower, taken))
        suffixes = ("", "Type", "Option", "Choice", "Kind", "Variant", "Set", "Scale")
        words = tuple(w.capitalize() for w in (*RENAME_QUALIFIERS, *QUALIFIERS, *NEUTRAL_WORDS))
        name = next(n for n in _compounds(base, suffixes, words) if n.lower() not in used)
        self._entities_seen.add(name.lower())  # one namespace: no entity takes it later either
        return name

    def enum_value(
        self, rng: random.Random, taken: Collection[str], in_use: Collection[tuple[str, ...]] = ()
    ) -> str | None:
        """A value to add to an enum whose values are `taken`; themed values come from that enum's own
        vocabulary, and None says it has none left (a compound such as `extra_open` would read as noise)."""
        if self.domain is not None:
            return self._themed_enum_value(rng, tuple(taken), set(in_use))
        used = set(map(frozenset, in_use))
        fresh = [v for v in PROG_ENUM_VALUES if v not in taken and frozenset((*taken, v)) not in used]
        if fresh:
            return rng.choice(fresh)
        while True:
            v = f"{rng.choice(PROG_ENUM_VALUES)}_{rng.choice(PROG_WORDS)}"
            if v not in taken and frozenset((*taken, v)) not in used:
                return v

    def _themed_enum_value(
        self, rng: random.Random, taken: tuple[str, ...], in_use: set[tuple[str, ...]]
    ) -> str | None:
        taken_set = set(taken)
        origins = [sp for first, sp in self._spares.items() if taken_set.issuperset(first)]
        used = set(map(frozenset, in_use))
        spares = [v for sp in origins for v in sp if v not in taken and frozenset((*taken, v)) not in used]
        return rng.choice(spares) if spares else None

    def action_name(self, rng: random.Random, taken: Collection[str]) -> str:
        fresh = [v for v in ACTION_VERBS if v not in taken]
        if fresh:
            return rng.choice(fresh)
        while True:
            v = f"{rng.choice(ACTION_VERBS)}_{rng.choice(PROG_WORDS)}"
            if v not in taken:
                return v
