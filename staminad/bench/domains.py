"""The product domains themed scenarios are named from: each one's nouns, field words per kind and enum value sets."""

from __future__ import annotations

import msgspec


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


def _domain(
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
    _domain(
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
    _domain(
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
    _domain(
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
    _domain(
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
    _domain(
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
    _domain(
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
    _domain(
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
    _domain(
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
    _domain(
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
    _domain(
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
    _domain(
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
    _domain(
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
    _domain(
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
