"""Names for generated designs: `programmatic` word combinations and `themed` product domains.

A namer only draws from the caller's `random.Random` and looks at the names already in use, so
the same seed always yields the same names. Themed domains read like real products; when a long
scenario exhausts a domain's nouns, names are compounded from the same vocabulary, never numbered.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Collection, Iterator
from typing import Literal

import msgspec

NamingMode = Literal["programmatic", "themed"]

# Field word pools by kind, shared by every domain; themed domains add their own in front.
_GENERIC_FIELDS: dict[str, tuple[str, ...]] = {
    "string": (
        "name",
        "title",
        "notes",
        "label",
        "code",
        "description",
        "email",
        "reference_code",
        "comment",
        "owner_name",
        "location",
        "summary",
        "contact_phone",
        "tag",
    ),
    "integer": (
        "quantity",
        "priority",
        "rank",
        "count",
        "capacity",
        "level",
        "stock",
        "duration_minutes",
        "attempts",
        "points",
        "sequence",
        "age_years",
    ),
    "float": (
        "price",
        "weight_kg",
        "rating",
        "score",
        "balance",
        "cost",
        "discount",
        "height_cm",
        "ratio",
        "budget",
        "total_amount",
        "temperature",
    ),
    "boolean": ("active", "verified", "archived", "public", "featured", "paid", "approved", "locked"),
    "datetime": (
        "created_at",
        "updated_at",
        "due_date",
        "start_time",
        "end_time",
        "scheduled_at",
        "completed_at",
        "expires_at",
    ),
}

# Words for the programmatic mode (paper E.5 style: random combinations, no domain).
_PROG_NOUNS = (
    "Dog",
    "Page",
    "Comment",
    "Order",
    "User",
    "Task",
    "Note",
    "Item",
    "Group",
    "Event",
    "Ticket",
    "Shelf",
    "Report",
    "Badge",
    "Folder",
    "Invoice",
    "Channel",
    "Device",
    "Route",
    "Member",
)
_PROG_WORDS = (
    "active",
    "first",
    "secondary",
    "deleted",
    "shared",
    "unique",
    "enabled",
    "local",
    "raw",
    "level",
    "last",
    "rank",
    "root",
    "private",
    "public",
    "name",
    "external",
    "priority",
    "height",
    "legacy",
    "credits",
    "previous",
    "username",
    "backup",
    "verified",
    "end",
    "start",
    "total",
    "main",
    "next",
    "count",
    "score",
    "flag",
    "value",
    "limit",
)
# Words that say what a field holds: as the last word of a name (its head), they name only fields of these kinds.
_NUM = ("integer", "float")
_WORD_KINDS: dict[str, tuple[str, ...]] = {
    "name": ("string",),
    "username": ("string",),
    "count": _NUM,
    "total": _NUM,
    "score": _NUM,
    "credits": _NUM,
    "limit": _NUM,
    "height": _NUM,
    "rank": _NUM,
    "verified": ("boolean",),
    "enabled": ("boolean",),
    "flag": ("boolean",),
    "deleted": ("boolean",),
}
_NEUTRAL_WORDS = tuple(w for w in _PROG_WORDS if w not in _WORD_KINDS)  # for tails: they say nothing of the kind


def name_fits(name: str, kind: str) -> bool:
    """The name's head word does not say it holds another kind of value (`username` names no float)."""
    kinds = _WORD_KINDS.get(name.rsplit("_", 1)[-1])
    return kinds is None or kind in kinds


_PROG_ENUM_VALUES = (
    "in_progress",
    "review",
    "planning",
    "beginner",
    "advanced",
    "intermediate",
    "open",
    "closed",
    "pending",
    "done",
    "draft",
    "archived",
    "low",
    "medium",
    "high",
    "blocked",
    "active",
    "inactive",
    "new",
    "expired",
)
_ACTION_VERBS = (
    "approve",
    "archive",
    "reopen",
    "submit",
    "cancel",
    "complete",
    "activate",
    "suspend",
    "publish",
    "close",
    "start",
    "finish",
    "confirm",
    "reject",
    "escalate",
    "resolve",
    "schedule",
    "retire",
    "restock",
    "assign",
    "release",
    "verify",
    "pause",
    "resume",
    "promote",
    "flag",
)


class Domain(msgspec.Struct, frozen=True):
    """A product vocabulary for themed scenarios: nouns, field words per role, enum value sets.

    `enums` holds (field name, values, spare values): the values an enum of that role starts with,
    and the ones a later "add an enum value" change draws, so an enum only ever grows in its own
    vocabulary. No two value sets of a domain are alike.
    """

    key: str
    nouns: tuple[str, ...]
    fields: dict[str, tuple[str, ...]]
    enums: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]


def _d(
    key: str, nouns: str, strings: str, integers: str, floats: str, booleans: str, datetimes: str, enums: dict[str, str]
) -> Domain:
    def values(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        first, _, spare = text.partition("/")
        return tuple(first.split()), tuple(spare.split())

    return Domain(
        key,
        tuple(nouns.split()),
        {
            "string": tuple(strings.split()),
            "integer": tuple(integers.split()),
            "float": tuple(floats.split()),
            "boolean": tuple(booleans.split()),
            "datetime": tuple(datetimes.split()),
        },
        tuple((k, *values(v)) for k, v in enums.items()),
    )


DOMAINS: tuple[Domain, ...] = (
    _d(
        "coffee_roastery",
        "CoffeeBatch Subscription Roaster Supplier GreenBean CuppingSession Blend Shipment Cafe "
        "Barista Grinder Espresso SampleRoast Wholesaler",
        "batch_number origin_country farm_name tasting_notes",
        "roast_minutes bag_count altitude_m",
        "weight_kg cupping_score moisture_pct price_per_kg",
        "decaf organic single_origin fair_trade",
        "roasted_at harvested_at cupped_at shipped_at",
        {
            "roast_level": "light medium dark / espresso city_plus",
            "grind": "whole_bean coarse fine / extra_fine",
            "process": "washed natural honey / anaerobic",
            "bag_size": "quarter_pound half_pound two_pound / bulk",
            "cupping_grade": "specialty premium commercial / exchange",
        },
    ),
    _d(
        "veterinary_clinic",
        "Patient Owner Appointment Veterinarian Vaccination Prescription Kennel Invoice "
        "Treatment LabResult Surgery Referral Ward Pharmacy",
        "species breed microchip_code diagnosis",
        "age_years visit_count dose_mg",
        "weight_kg temperature_c fee",
        "neutered insured allergic fasting",
        "admitted_at vaccinated_at discharged_at next_checkup_at",
        {
            "triage": "routine urgent emergency / critical",
            "species_group": "canine feline avian / exotic reptile",
            "visit_reason": "checkup vaccination injury illness / dental",
            "diet": "standard renal hypoallergenic / weight_control",
            "recovery": "stable improving guarded / recovered",
        },
    ),
    _d(
        "climbing_gym",
        "ClimbingRoute Member Wall Session Instructor Gear Competition Membership Hold Belayer "
        "Boulder Locker Course Judge",
        "route_name setter_name color grade_label",
        "height_m attempts_allowed capacity",
        "difficulty_score rental_fee chalk_kg",
        "overhang kids_friendly belay_certified retired_route",
        "set_at reset_at certified_at last_visit_at",
        {
            "grade": "easy moderate hard / expert elite",
            "wall_type": "bouldering top_rope lead / speed",
            "hold_type": "jug crimp sloper pinch / pocket",
            "membership_plan": "day_pass ten_visit annual / family",
            "gear_condition": "new worn damaged / retired",
        },
    ),
    _d(
        "bakery",
        "Recipe Loaf Order Customer Oven Ingredient Batch Pastry Delivery Baker Starter Pantry Cake Supplier",
        "recipe_name flour_type allergen_notes",
        "proof_minutes bake_minutes loaves_per_batch",
        "hydration_pct price unit_cost",
        "gluten_free vegan sliced seasonal",
        "baked_at proofed_at delivered_at best_before",
        {
            "crust": "soft crusty / extra_crusty",
            "order_channel": "counter phone online / wholesale",
            "flour_grade": "whole_grain bread_flour pastry_flour / rye",
            "bake_state": "mixed proofing baking cooling",
            "pastry_kind": "croissant danish eclair tart / brioche",
        },
    ),
    _d(
        "library",
        "Book Patron Loan Branch Author Shelf Reservation Fine Periodical Librarian Catalog Event ReadingRoom Donation",
        "isbn title_text author_name call_number",
        "page_count copies renewals",
        "fine_amount replacement_cost",
        "reference_only large_print signed damaged",
        "borrowed_at due_back_at returned_at published_at",
        {
            "format": "hardcover paperback ebook / audiobook",
            "loan_state": "requested loaned returned / lost",
            "audience": "children teen adult / scholarly",
            "condition": "mint good fair poor / withdrawn",
            "membership": "resident student visitor / staff",
        },
    ),
    _d(
        "bike_rental",
        "Bike Station Rental Rider Repair Dock Pass Trip Technician Helmet Battery Tariff Zone Incident",
        "frame_serial station_name rider_email",
        "gear_count dock_slots ride_minutes",
        "battery_pct hourly_rate distance_km",
        "has_basket child_seat electric_assist docked",
        "rented_at returned_at serviced_at reported_at",
        {
            "bike_type": "city mountain electric / cargo tandem",
            "repair_state": "reported diagnosed fixed / scrapped",
            "pass_type": "single_ride day_pass monthly / annual",
            "frame_size": "small medium large / extra_large",
            "tariff_band": "off_peak standard peak / night",
        },
    ),
    _d(
        "hotel",
        "Room Guest Booking Housekeeper Amenity Invoice Floor Suite Review Concierge Minibar Spa Conference Shuttle",
        "room_number guest_email special_requests",
        "floor_number beds max_guests",
        "nightly_rate minibar_total rating_score",
        "smoking sea_view breakfast_included accessible",
        "check_in_at check_out_at cleaned_at booked_at",
        {
            "room_type": "single double twin / suite penthouse",
            "booking_state": "tentative confirmed checked_in / checked_out",
            "bed_size": "queen king sofa_bed / bunk",
            "cleanliness": "dirty in_cleaning clean / inspected",
            "meal_plan": "room_only half_board full_board / all_inclusive",
        },
    ),
    _d(
        "brewery",
        "Brew Tank Recipe Keg Taproom Hop Batch Distributor Tasting Brewer Malt Canning Yeast Cellar",
        "style_name hop_variety tank_label",
        "ibu fermentation_days keg_count",
        "abv_pct gravity volume_liters",
        "filtered barrel_aged gluten_reduced limited_release",
        "brewed_at kegged_at canned_at tasted_at",
        {
            "beer_style": "lager ale stout / porter sour",
            "tank_state": "empty fermenting conditioning / cleaning",
            "hop_form": "pellet whole_cone extract / cryo",
            "package": "keg can bottle / growler",
            "malt_color": "pale amber crystal chocolate / black",
        },
    ),
    _d(
        "plant_nursery",
        "Plant Greenhouse GrowingGuide Supplier Order Seedling Pot Customer Shipment Gardener "
        "Fertilizer Cutting Bed Tray",
        "plant_name latin_name soil_mix",
        "germination_days pot_size_cm watering_interval",
        "soil_ph height_cm price",
        "perennial pet_safe drought_tolerant indoor",
        "sown_at potted_at watered_at sold_at",
        {
            "light_need": "full_sun partial_shade / shade",
            "watering_frequency": "daily weekly biweekly / monthly",
            "growth_stage": "seed sprout juvenile mature / flowering",
            "hardiness": "tender half_hardy hardy / frost_proof",
            "propagation": "from_seed from_cutting grafted / divided",
        },
    ),
    _d(
        "music_school",
        "Student Teacher Lesson Instrument Recital Course Room Enrollment Exam Ensemble Score Rehearsal Term Tuner",
        "student_name instrument_name repertoire",
        "lesson_minutes grade_level seats",
        "tuition_fee practice_hours exam_score",
        "rental_instrument online accompanist_needed scholarship",
        "enrolled_at lesson_at exam_at recital_at",
        {
            "skill": "beginner intermediate advanced / professional",
            "lesson_state": "booked held missed / rescheduled",
            "instrument_family": "strings woodwind brass percussion / keyboard",
            "exam_result": "fail pass merit / distinction",
            "ensemble_size": "solo duet quartet / orchestra",
        },
    ),
    _d(
        "food_bank",
        "FoodDonor FoodItem Pantry Volunteer Distribution Shift Household Pickup Warehouse Driver "
        "Drive Agency Crate Donation",
        "donor_name item_name storage_notes",
        "units_available household_size shift_hours",
        "weight_kg value_estimate",
        "perishable halal needs_refrigeration first_visit",
        "donated_at expires_at picked_up_at distributed_at",
        {
            "category": "packaged fresh frozen canned / dry_goods",
            "verification_status": "pending verified rejected / expired",
            "storage": "ambient chilled frozen_storage / quarantine",
            "urgency": "normal soon today / overdue",
            "shift_slot": "morning afternoon evening / overnight",
        },
    ),
    _d(
        "ceramics_studio",
        "GlazeRecipe CeramicFiringSession Kiln Potter ClayBody Workshop Piece Glaze Order Wheel "
        "Mold Commission Exhibit Apprentice",
        "glaze_name clay_type finish_notes",
        "cone_number firing_hours pieces_loaded",
        "peak_temperature shrinkage_pct price",
        "food_safe handmade signed_piece glazed_inside",
        "thrown_at bisque_fired_at glaze_fired_at sold_at",
        {
            "atmosphere": "oxidation reduction / neutral",
            "piece_state": "greenware bisqued glazed fired / sold",
            "clay_family": "earthenware stoneware porcelain / raku",
            "finish": "matte satin gloss / crackle",
            "kiln_type": "electric gas wood / soda",
        },
    ),
    _d(
        "fleet_logistics",
        "Vehicle Driver Route Delivery Depot Package Maintenance FuelLog Customer Dispatcher "
        "Trailer Manifest Inspection Hub",
        "plate_number driver_name depot_code",
        "stops_planned odometer_km package_count",
        "fuel_liters payload_kg delivery_fee",
        "refrigerated hazardous signature_required fragile",
        "dispatched_at delivered_at inspected_at refueled_at",
        {
            "vehicle_class": "van truck bike / drone",
            "delivery_state": "queued loaded in_transit / delivered",
            "fuel_type": "diesel petrol electric_charge / hydrogen",
            "service_level": "economy express same_day / overnight",
            "package_size": "envelope parcel pallet / oversized",
        },
    ),
)
DOMAIN_KEYS: tuple[str, ...] = tuple(d.key for d in DOMAINS)


@functools.lru_cache(maxsize=4096)
def _split_camel(name: str) -> tuple[str, ...]:
    words: list[str] = []
    for ch in name:
        if ch.isupper() or not words:
            words.append(ch.lower())
        else:
            words[-1] += ch
    return tuple(words)


# Enum roles every themed domain may fall back on once its own value sets are all in use: (values, spares).
_ROLE_ENUMS: dict[str, tuple[str, str]] = {
    "status": ("draft active retired", "suspended"),
    "phase": ("planning in_progress wrapping_up", "cancelled"),
    "stage": ("intake processing complete", "on_hold"),
    "state": ("open paused closed", "reopened"),
    "tier": ("basic standard premium", "enterprise"),
    "kind": ("regular special custom", "trial"),
    "category": ("core seasonal clearance", "limited"),
    "mode": ("manual automatic assisted", "hybrid"),
    "level": ("entry middle senior", "principal"),
    "priority_band": ("low normal high", "critical"),
}
_RENAME_QUALIFIERS = ("current", "target", "planned", "primary", "preferred", "assigned", "default", "latest")
_QUALIFIERS = ("extra", "secondary", "internal", "public", "backup", "legacy")  # for field words used up
# Compounds for themed names once a domain's own words are used up: they read as kinds of the noun.
_THEMED_PREFIXES = (
    "Main",
    "Spare",
    "Guest",
    "Night",
    "Express",
    "Partner",
    "Regional",
    "Legacy",
    "Mobile",
    "Premium",
    "Backup",
    "Pilot",
    "Archive",
    "Seasonal",
    "Staff",
    "Annual",
)


def strip_qualifiers(name: str) -> str:
    """A themed field word without the qualifiers renames put in front (`target_roast_level` -> `roast_level`)."""
    for q in (*_RENAME_QUALIFIERS, *_QUALIFIERS):
        name = name.removeprefix(q + "_")
    return name


def enum_vocabulary(domain: Domain) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """(field word, values, spare values) of every enum a themed scenario of `domain` starts from its words."""
    roles = [(h, tuple(v.split()), tuple(sp.split())) for h, (v, sp) in _ROLE_ENUMS.items()]
    return [*domain.enums, *roles]


def _compounds(base: str, suffixes: tuple[str, ...], words: tuple[str, ...]) -> Iterator[str]:
    """`base` with each suffix, then with one word in front, then two, and so on: never a number."""
    yield from (base + s for s in suffixes)
    for n in itertools.count(1):
        yield from ("".join(p) + base for p in itertools.product(words, repeat=n))


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
        self._compounds: list[tuple[str, str]] = []  # (prefix + noun, lowercased), themed only, made once

    def _nouns(self) -> tuple[str, ...]:
        return self.domain.nouns if self.domain else _PROG_NOUNS

    def entity_name(self, rng: random.Random, taken: Collection[str]) -> str:
        """A CamelCase entity name whose endpoint is unused (case-insensitively)."""
        self._entities_seen.update(map(str.lower, taken))
        if self.domain is not None:
            return self._themed_entity_name(rng)
        name = self._programmatic_entity_name(rng, self._entities_seen)
        self._entities_seen.add(name.lower())
        return name

    def _programmatic_entity_name(self, rng: random.Random, taken_lower: set[str]) -> str:
        nouns = self._nouns()
        fresh = [n for n in nouns if n.lower() not in taken_lower]
        if fresh:
            return rng.choice(fresh)
        for _ in range(200):
            a, b = rng.choice(nouns), rng.choice(nouns)
            name = _split_camel(a)[0].capitalize() + b
            if a != b and name.lower() not in taken_lower:
                return name
        words = list(_PROG_WORDS)
        while True:
            name = rng.choice(words).capitalize() + rng.choice(words).capitalize() + rng.choice(nouns)
            if name.lower() not in taken_lower:
                return name

    def _themed_entity_name(self, rng: random.Random) -> str:
        assert self.domain is not None
        seen = self._entities_seen
        nouns = self.domain.nouns
        name = ""
        fresh = [n for n in nouns if n.lower() not in seen]
        if fresh:
            name = rng.choice(fresh)
        else:
            if not self._compounds:
                self._compounds = [(p + n, (p + n).lower()) for p in _THEMED_PREFIXES for n in nouns]
            compounds = [name for name, lower in self._compounds if lower not in seen]
            if compounds:
                name = rng.choice(compounds)
            for tries in range(10**6):
                if name and name.lower() not in seen:
                    break
                words = _THEMED_PREFIXES if tries < 500 else tuple(w.capitalize() for w in _PROG_WORDS)
                name = rng.choice(words) + _split_camel(rng.choice(nouns))[0].capitalize() + rng.choice(nouns)
        seen.add(name.lower())
        return name

    def field_name(self, rng: random.Random, kind: str, taken: Collection[str]) -> str:
        """A snake_case field name, drawn from words that suit `kind` where the mode has them."""
        taken_set = set(taken) | {"id"}
        if self.domain is not None:
            return self._themed_field_name(rng, kind, taken_set)
        pool: list[str] = []
        for _ in range(4):
            n = rng.randint(1, 3)
            pool.append("_".join(rng.sample(_PROG_WORDS, n)))
        fresh = [p for p in pool if p not in taken_set and name_fits(p, kind)]
        if fresh:
            return rng.choice(fresh)
        base_pool = pool or list(_PROG_WORDS)
        while True:
            name = f"{rng.choice(base_pool)}_{rng.choice(_NEUTRAL_WORDS)}"
            if name not in taken_set:
                return name

    def _role_words(self, kind: str) -> list[str]:
        assert self.domain is not None
        if kind == "enum":
            return [hint for hint, _, _ in self.domain.enums] + list(_ROLE_ENUMS)
        role = kind if kind in _GENERIC_FIELDS else "string"
        return list(self.domain.fields.get(role, ())) + list(_GENERIC_FIELDS[role])

    def _themed_field_name(self, rng: random.Random, kind: str, taken: set[str]) -> str:
        pool = self._role_words(kind)
        usable = [p for p in pool if p not in taken]
        fresh = [p for p in usable if p not in self._fields_issued]
        if fresh or usable:
            name = rng.choice(fresh or usable)
        else:
            name = ""
            for tries in range(10**6):
                if name and name not in taken:
                    break
                tail = f"_{rng.choice(_NEUTRAL_WORDS)}" if tries > 200 else ""
                name = f"{rng.choice(_QUALIFIERS)}_{rng.choice(pool)}{tail}"
        self._fields_issued.add(name)
        return name

    def renamed_field(self, rng: random.Random, kind: str, old: str, taken: Collection[str]) -> str:
        """A new name for field `old` of `kind`. Reference fields (and themed enum fields) keep their word and
        gain a qualifier (`roast_level` -> `target_roast_level`), since their values already say what they hold."""
        refs = kind in ("ref", "ref_list")
        if not refs and (self.domain is None or kind != "enum"):
            return self.field_name(rng, kind, taken)
        name = self._qualified(rng, strip_qualifiers(old), old, taken)
        self._fields_issued.add(name)
        return name

    def _qualified(self, rng: random.Random, base: str, old: str, taken: Collection[str]) -> str:
        """`base` with a qualifier in front (two once one is not enough): a name that keeps saying what it holds."""
        words = (*_RENAME_QUALIFIERS, *_QUALIFIERS)
        options = [f"{q}_{base}" for q in words if f"{q}_{base}" not in taken and f"{q}_{base}" != old]
        fresh = [o for o in options if o not in self._fields_issued]
        if fresh or options:
            return rng.choice(fresh or options)
        for n in itertools.count(2):  # never a number: more qualifiers
            more = ["_".join(p) + f"_{base}" for p in itertools.product(words, repeat=n) if len(set(p)) == n]
            free = [o for o in more if o not in taken and o != old]
            if free:
                return rng.choice(free)
        raise AssertionError("unreachable")

    def ref_field_name(self, rng: random.Random, target: str, many: bool, taken: Collection[str]) -> str:
        """A name for a reference to `target`, e.g. `supplier` or `items` style plurals."""
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
        n = rng.randint(3, 4)
        return field, tuple(rng.sample(_PROG_ENUM_VALUES, n))

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
            values = tuple(rng.sample(_PROG_ENUM_VALUES, 3))
            in_use_frozen = set(in_use_sets)
            while frozenset(values) in in_use_frozen:
                values = tuple(rng.sample(_PROG_ENUM_VALUES, rng.randint(3, 4)))
        self._enum_sets_issued.add(values)
        if spares:
            self._spares[values] = spares
        else:  # a set with no spares gives a grown enum nothing: not kept, so the lookups below skip it
            self._spares.pop(values, None)
        return hint, values

    def enum_field_name(self, rng: random.Random, taken: Collection[str]) -> str:
        options = ["status", "phase", "stage", "state", "tier", "kind", "category", "mode", "level", "priority_band"]
        fresh = [o for o in options if o not in taken]
        return rng.choice(fresh) if fresh else self.field_name(rng, "enum", taken)

    def enum_type_name(self, field: str, taken: Collection[str]) -> str:
        """A CamelCase name for the enum type of `field`: after the field, never after its entity (an entity
        rename would leave the prefix behind), and never a name an enum type or an entity had before."""
        base = "".join(w.capitalize() for w in field.split("_"))
        used = self._entities_seen.union(map(str.lower, taken))
        suffixes = ("", "Type", "Option", "Choice", "Kind", "Variant", "Set", "Scale")
        words = tuple(w.capitalize() for w in (*_RENAME_QUALIFIERS, *_QUALIFIERS, *_NEUTRAL_WORDS))
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
        fresh = [v for v in _PROG_ENUM_VALUES if v not in taken]
        if fresh:
            return rng.choice(fresh)
        while True:
            v = f"{rng.choice(_PROG_ENUM_VALUES)}_{rng.choice(_PROG_WORDS)}"
            if v not in taken:
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
        fresh = [v for v in _ACTION_VERBS if v not in taken]
        if fresh:
            return rng.choice(fresh)
        while True:
            v = f"{rng.choice(_ACTION_VERBS)}_{rng.choice(_PROG_WORDS)}"
            if v not in taken:
                return v
