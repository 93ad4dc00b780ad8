"""Names for generated designs: `programmatic` word combinations and `themed` product domains.

A namer only draws from the caller's `random.Random` and looks at the names already in use, so
the same seed always yields the same names. Themed domains read like real products; when a long
scenario exhausts a domain's nouns, names are compounded from the same vocabulary, never numbered.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Collection
from typing import Literal

import msgspec

NamingMode = Literal["programmatic", "themed"]

# Field word pools by kind, shared by every domain; themed domains add their own in front.
_GENERIC_FIELDS: dict[str, tuple[str, ...]] = {
    "string": ("name", "title", "notes", "label", "code", "description", "email", "reference_code", "comment",
               "owner_name", "location", "summary", "contact_phone", "tag"),
    "integer": ("quantity", "priority", "rank", "count", "capacity", "level", "stock", "duration_minutes",
                "attempts", "points", "sequence", "age_years"),
    "float": ("price", "weight_kg", "rating", "score", "balance", "cost", "discount", "height_cm", "ratio",
              "budget", "total_amount", "temperature"),
    "boolean": ("active", "verified", "archived", "public", "featured", "paid", "approved", "locked"),
    "datetime": ("created_at", "updated_at", "due_date", "start_time", "end_time", "scheduled_at",
                 "completed_at", "expires_at"),
}

# Words for the programmatic mode (paper E.5 style: random combinations, no domain).
_PROG_NOUNS = ("Dog", "Page", "Comment", "Order", "User", "Task", "Note", "Item", "Group", "Event", "Ticket",
               "Shelf", "Report", "Badge", "Folder", "Invoice", "Channel", "Device", "Route", "Member")
_PROG_WORDS = ("active", "first", "secondary", "deleted", "shared", "unique", "enabled", "local", "raw", "level",
               "last", "rank", "root", "private", "public", "name", "external", "priority", "height", "legacy",
               "credits", "previous", "username", "backup", "verified", "end", "start", "total", "main", "next",
               "count", "score", "flag", "value", "limit")
_PROG_ENUM_VALUES = ("in_progress", "review", "planning", "beginner", "advanced", "intermediate", "open",
                     "closed", "pending", "done", "draft", "archived", "low", "medium", "high", "blocked",
                     "active", "inactive", "new", "expired")
_ACTION_VERBS = ("approve", "archive", "reopen", "submit", "cancel", "complete", "activate", "suspend",
                 "publish", "close", "start", "finish", "confirm", "reject", "escalate", "resolve", "schedule",
                 "retire", "restock", "assign", "release", "verify", "pause", "resume", "promote", "flag")


class Domain(msgspec.Struct, frozen=True):
    """A product vocabulary for themed scenarios."""

    key: str
    nouns: tuple[str, ...]
    fields: dict[str, tuple[str, ...]]
    enums: tuple[tuple[str, tuple[str, ...]], ...]  # (field name, values)


def _d(key: str, nouns: str, strings: str, integers: str, floats: str, enums: dict[str, str]) -> Domain:
    return Domain(
        key,
        tuple(nouns.split()),
        {"string": tuple(strings.split()), "integer": tuple(integers.split()), "float": tuple(floats.split())},
        tuple((k, tuple(v.split())) for k, v in enums.items()),
    )


DOMAINS: tuple[Domain, ...] = (
    _d("coffee_roastery", "CoffeeBatch Subscription Roaster Supplier GreenBean CuppingSession Blend Shipment Cafe",
       "batch_number origin_country farm_name tasting_notes", "roast_minutes bag_count altitude_m",
       "weight_kg cupping_score moisture_pct price_per_kg",
       {"roast_level": "light medium dark espresso", "grind": "whole_bean coarse medium_grind fine_grind"}),
    _d("veterinary_clinic", "Patient Owner Appointment Veterinarian Vaccination Prescription Kennel Invoice Treatment",
     "species breed microchip_code diagnosis", "age_years visit_count dose_mg",
     "weight_kg temperature_c fee",
     {"triage": "routine urgent emergency", "species_group": "canine feline avian exotic"}),
    _d("climbing_gym", "ClimbingRoute Member Wall Session Instructor Gear Competition Membership Hold",
     "route_name setter_name color grade_label", "height_m attempts_allowed capacity",
     "difficulty_score rental_fee chalk_kg",
     {"grade": "easy moderate hard expert", "wall_type": "bouldering top_rope lead"}),
    _d("bakery", "Recipe Loaf Order Customer Oven Ingredient Batch Pastry Delivery",
     "recipe_name flour_type allergen_notes", "proof_minutes bake_minutes loaves_per_batch",
     "hydration_pct price unit_cost",
     {"crust": "soft crusty extra_crusty", "order_channel": "counter phone online"}),
    _d("library", "Book Patron Loan Branch Author Shelf Reservation Fine Periodical",
     "isbn title_text author_name call_number", "page_count copies renewals",
     "fine_amount replacement_cost",
     {"format": "hardcover paperback ebook audiobook", "loan_state": "requested loaned returned lost"}),
    _d("bike_rental", "Bike Station Rental Rider Repair Dock Pass Trip Technician",
     "frame_serial station_name rider_email", "gear_count dock_slots ride_minutes",
     "battery_pct hourly_rate distance_km",
     {"bike_type": "city mountain electric cargo", "repair_state": "reported diagnosed fixed"}),
    _d("hotel", "Room Guest Booking Housekeeper Amenity Invoice Floor Suite Review",
     "room_number guest_email special_requests", "floor_number beds max_guests",
     "nightly_rate minibar_total rating_score",
     {"room_type": "single double twin suite", "booking_state": "tentative confirmed checked_in checked_out"}),
    _d("brewery", "Brew Tank Recipe Keg Taproom Hop Batch Distributor Tasting",
     "style_name hop_variety tank_label", "ibu fermentation_days keg_count",
     "abv_pct gravity volume_liters",
     {"beer_style": "lager ale stout porter sour", "tank_state": "empty fermenting conditioning"}),
    _d("plant_nursery", "Plant Greenhouse GrowingGuide Supplier Order Seedling Pot Customer Shipment",
     "plant_name latin_name soil_mix", "germination_days pot_size_cm watering_interval",
     "soil_ph height_cm price",
     {"light_need": "full_sun partial_shade shade", "watering_frequency": "daily weekly biweekly"}),
    _d("music_school", "Student Teacher Lesson Instrument Recital Course Room Enrollment Exam",
     "student_name instrument_name repertoire", "lesson_minutes grade_level seats",
     "tuition_fee practice_hours exam_score",
     {"skill": "beginner intermediate advanced", "lesson_state": "booked held missed"}),
    _d("food_bank", "FoodDonor FoodItem Pantry Volunteer Distribution Shift Household Pickup Warehouse",
     "donor_name item_name storage_notes", "units_available household_size shift_hours",
     "weight_kg value_estimate",
     {"category": "packaged fresh frozen canned", "verification_status": "pending verified rejected"}),
    _d("ceramics_studio", "GlazeRecipe CeramicFiringSession Kiln Potter ClayBody Workshop Piece Glaze Order",
     "glaze_name clay_type finish_notes", "cone_number firing_hours pieces_loaded",
     "peak_temperature shrinkage_pct price",
     {"atmosphere": "oxidation reduction neutral", "piece_state": "greenware bisqued glazed fired"}),
    _d("fleet_logistics", "Vehicle Driver Route Delivery Depot Package Maintenance FuelLog Customer",
     "plate_number driver_name depot_code", "stops_planned odometer_km package_count",
     "fuel_liters payload_kg delivery_fee",
     {"vehicle_class": "van truck bike drone", "delivery_state": "queued loaded in_transit delivered"}),
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


class Namer:
    """Draws fresh names for one scenario from its mode (and, if themed, its domain)."""

    def __init__(self, mode: NamingMode, rng: random.Random) -> None:
        self.mode = mode
        self.domain: Domain | None = rng.choice(DOMAINS) if mode == "themed" else None

    def _nouns(self) -> tuple[str, ...]:
        return self.domain.nouns if self.domain else _PROG_NOUNS

    def entity_name(self, rng: random.Random, taken: Collection[str]) -> str:
        """A CamelCase entity name whose endpoint is unused (case-insensitively)."""
        taken_lower = {t.lower() for t in taken}
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

    def field_name(self, rng: random.Random, kind: str, taken: Collection[str]) -> str:
        """A snake_case field name, drawn from words that suit `kind` where the mode has them."""
        taken_set = set(taken) | {"id"}
        pool: list[str] = []
        if self.domain is not None:
            pool += self.domain.fields.get(kind, ())
            pool += _GENERIC_FIELDS.get(kind, ())
        else:
            for _ in range(4):
                n = rng.randint(1, 3)
                pool.append("_".join(rng.sample(_PROG_WORDS, n)))
        fresh = [p for p in pool if p not in taken_set]
        if fresh:
            return rng.choice(fresh)
        base_pool = pool or list(_PROG_WORDS)
        while True:
            name = f"{rng.choice(base_pool)}_{rng.choice(_PROG_WORDS)}"
            if name not in taken_set:
                return name

    def ref_field_name(self, rng: random.Random, target: str, many: bool, taken: Collection[str]) -> str:
        """A name for a reference to `target`, e.g. `supplier` or `items` style plurals."""
        base = "_".join(_split_camel(target))
        candidates = [base + ("s" if many else "")]
        candidates += [f"{w}_{base}{'s' if many else ''}" for w in ("primary", "linked", "main", "related",
                                                                    "assigned", "backup", "preferred")]
        for c in candidates:
            if c not in taken and c != "id":
                return c
        return self.field_name(rng, "string", taken)

    def enum_values(self, rng: random.Random, field: str) -> tuple[str, tuple[str, ...]]:
        """A (field name hint, values) pair for a new enum field."""
        if self.domain is not None and rng.random() < 0.7:
            hint, values = rng.choice(self.domain.enums)
            return hint, values
        n = rng.randint(3, 4)
        return field, tuple(rng.sample(_PROG_ENUM_VALUES, n))

    def enum_field_name(self, rng: random.Random, taken: Collection[str]) -> str:
        options = ["status", "phase", "stage", "state", "tier", "kind", "category", "mode", "level", "priority_band"]
        fresh = [o for o in options if o not in taken]
        return rng.choice(fresh) if fresh else self.field_name(rng, "string", taken)

    def enum_value(self, rng: random.Random, taken: Collection[str]) -> str:
        fresh = [v for v in _PROG_ENUM_VALUES if v not in taken]
        if fresh:
            return rng.choice(fresh)
        while True:
            v = f"{rng.choice(_PROG_ENUM_VALUES)}_{rng.choice(_PROG_WORDS)}"
            if v not in taken:
                return v

    def action_name(self, rng: random.Random, taken: Collection[str]) -> str:
        fresh = [v for v in _ACTION_VERBS if v not in taken]
        if fresh:
            return rng.choice(fresh)
        while True:
            v = f"{rng.choice(_ACTION_VERBS)}_{rng.choice(_PROG_WORDS)}"
            if v not in taken:
                return v
