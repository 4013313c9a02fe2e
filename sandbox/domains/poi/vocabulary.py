"""What the POI domain tells the perturbations and the oracle about its own words (its ``vocabulary``).

Each table has a ``train`` pool (for PAFT data) and an ``eval`` pool that share nothing. Rewritten descriptions
keep one capability word of their tool (``CAPABILITIES``), as real API docs do, so that a reader of
descriptions can tell what each tool does whatever its name.
"""

from __future__ import annotations

from sandbox.vocabulary import DomainVocabulary, Pools, pools

TOOL_SYNONYMS: dict[str, Pools] = {
    "search_places": pools(("list_venues", "lookup_spots"), ("browse_locations", "query_establishments")),
    "find_place": pools(("resolve_venue", "locate_spot"), ("identify_location", "match_establishment")),
    "get_place_details": pools(("venue_info", "fetch_spot_profile"), ("location_facts", "establishment_card")),
    "get_opening_hours": pools(("venue_schedule", "spot_timetable"), ("location_open_times", "business_hours")),
    "get_distance": pools(("measure_gap", "route_length"), ("span_between", "separation_km")),
    "get_weather": pools(("forecast_lookup", "sky_report"), ("climate_outlook", "meteo_check")),
    "book_place": pools(("reserve_venue", "make_reservation"), ("secure_table", "hold_spot")),
    "get_booking": pools(("show_reservation", "reservation_info"), ("view_hold", "booking_record")),
    "cancel_booking": pools(("drop_reservation", "void_reservation"), ("release_hold", "annul_booking")),
}
DESCRIPTION_REWRITES: dict[str, Pools] = {
    "search_places": pools(
        ("Lists the places of one category in a city, highest rated first.",),
        ("Returns a city's venues of a given category, sorted by rating, best first.",),
    ),
    "find_place": pools(
        ("Resolves a place name in a city to the place's id.",),
        ("Gives the id of a place, given its name and city.",),
    ),
    "get_place_details": pools(
        ("Phone number, address, rating and price level for a place.",),
        ("Contact card of a place: phone, street address, rating, price.",),
    ),
    "get_opening_hours": pools(
        ("When a place is open on a given weekday (opening times).",),
        ("A place's opening times for one day of the week.",),
    ),
    "get_distance": pools(
        ("How far apart two places are, with walking minutes.",),
        ("Kilometres and minutes on foot separating two places.",),
    ),
    "get_weather": pools(
        ("Forecast and temperature for a city on a weekday.",),
        ("Expected weather conditions in a city on a given day.",),
    ),
    "book_place": pools(
        ("Reserves a table or room at a place; gives a booking id and code.",),
        ("Makes a reservation at a place and returns its id and confirmation code.",),
    ),
    "get_booking": pools(("Shows the details of an existing booking.",), ("Displays a booking made earlier.",)),
    "cancel_booking": pools(
        ("Cancels a booking and gives a cancellation code.",),
        ("Calls off a booking; returns a cancel code.",),
    ),
}
CAPABILITIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cancel_booking", ("cancel",)),
    ("book_place", ("table or room", "reserv")),
    ("get_booking", ("show a booking", "shows the details", "displays a booking")),
    ("get_place_details", ("phone",)),
    ("get_opening_hours", ("opening",)),
    ("get_distance", ("distance", "how far", "kilometres")),
    ("get_weather", ("weather", "forecast")),
    ("search_places", ("category",)),
    ("find_place", ("its id", "place's id", "id of a place")),
)
"""Tool → the capability words its descriptions keep, most specific first."""
PARAM_SYNONYMS: dict[str, Pools] = {
    "name": pools(("entity_name", "named_as"), ("designation", "called")),
    "city": pools(("town", "municipality"), ("locality", "metro")),
    "category": pools(("kind", "type_of_place"), ("genre", "sort")),
    "place_id": pools(("venue_ref", "spot_id"), ("location_key", "site_code")),
    "day": pools(("weekday", "on_day"), ("dow", "day_name")),
    "from_id": pools(("origin", "start_ref"), ("source_key", "departure")),
    "to_id": pools(("target", "end_ref"), ("dest_key", "arrival")),
    "time": pools(("at", "clock"), ("hhmm", "slot_time")),
    "people": pools(("party", "guests"), ("covers", "headcount")),
    "booking_id": pools(("reservation_ref", "res_id"), ("hold_key", "booking_code")),
}
FIELD_SYNONYMS: dict[str, Pools] = {
    "results": pools(("items",), ("matches",)),
    "id": pools(("ref",), ("uid",)),
    "name": pools(("title",), ("label",)),
    "phone": pools(("telephone",), ("phone_number",)),
    "hours": pools(("opening_times",), ("open_hours",)),
    "forecast": pools(("conditions",), ("outlook",)),
    "temp_c": pools(("temperature_c",), ("celsius",)),
    "km": pools(("distance_km",), ("kilometres",)),
    "code": pools(("confirmation",), ("verification",)),
    "rating": pools(("score",), ("stars",)),
    "booking_id": pools(("reservation_id",), ("booking_ref",)),
    "walk_min": pools(("walking_minutes",), ("minutes_on_foot",)),
}

VOCABULARY = DomainVocabulary(
    TOOL_SYNONYMS, DESCRIPTION_REWRITES, CAPABILITIES, PARAM_SYNONYMS, FIELD_SYNONYMS,
    consumers={tool: ("find_place", "place_id") for tool in ("get_place_details", "get_opening_hours", "book_place")},
    finder="find_place", entity="place", unit_tools=("get_distance", "get_weather"), searches=("search_places",),
    rank_by="rating", entities=lambda w: w.places.values(), resolve=lambda w, n, c: w.by_name(n, c),
    compound=("day", "time"), transfer="medical",
)  # fmt: skip
