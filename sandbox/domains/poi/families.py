"""POI task families: 1 to 5 dependent calls, two of them unsolvable by design."""

from __future__ import annotations

import random

from sandbox.domains.poi.world import BOOKABLE, CITY_SPLIT, DAYS, Place, PoiWorld, distance_km
from sandbox.family import Draft, family
from sandbox.task import Call, Source

TIMES = ("12:00", "12:30", "13:00", "19:00", "19:30", "20:00", "20:30", "21:00")
CATEGORY_NAMES = ("restaurant", "cafe", "museum", "hotel", "bar", "bakery", "cinema", "pizzeria")


def _place(world: PoiWorld, r: random.Random, split: str, categories=None) -> Place:
    here = world.in_city(r.choice(CITY_SPLIT[split]))
    return r.choice([p for p in here if categories is None or p.category in categories])


def _best(world: PoiWorld, r: random.Random, split: str, categories) -> tuple[str, str, Place] | None:
    city, category = r.choice(CITY_SPLIT[split]), r.choice(categories)
    found = world.search(city, category)
    if not found or (len(found) > 1 and found[0].rating == found[1].rating):
        return None  # "best rated" must be unambiguous
    return city, category, found[0]


def _find(cid: str, p: Place) -> Call:
    return Call(id=cid, tool="find_place", args={"name": p.name, "city": p.city})


def phone(world, r, split):
    p = _place(world, r, split)
    return Draft(
        params={"name": p.name, "city": p.city},
        plan=[_find("find", p), Call(id="details", tool="get_place_details", args={"place_id": p.id}, after=("find",))],
        answer={"phone": p.phone},
        sources={"phone": Source(call="details", path="phone")},
    )


def best_rated(world, r, split):
    drawn = _best(world, r, split, CATEGORY_NAMES)
    if drawn is None:
        return None
    city, category, best = drawn
    return Draft(
        params={"city": city, "category": category},
        plan=[Call(id="search", tool="search_places", args={"city": city, "category": category})],
        answer={"name": best.name},
        sources={"name": Source(call="search", path="results.0.name")},
    )


def hours(world, r, split):
    p, day = _place(world, r, split), r.choice(DAYS)
    return Draft(
        params={"name": p.name, "city": p.city, "day": day},
        plan=[
            _find("find", p),
            Call(id="hours", tool="get_opening_hours", args={"place_id": p.id, "day": day}, after=("find",)),
        ],
        answer={"hours": p.hours[day]},
        sources={"hours": Source(call="hours", path="hours")},
    )


def weather(world, r, split):
    city, day = r.choice(CITY_SPLIT[split]), r.choice(DAYS)
    forecast, temp = world.weather[(city, day)]
    return Draft(
        params={"city": city, "day": day},
        plan=[Call(id="weather", tool="get_weather", args={"city": city, "day": day})],
        answer={"forecast": forecast, "temp_c": str(temp)},
        sources={"forecast": Source(call="weather", path="forecast"), "temp_c": Source(call="weather", path="temp_c")},
    )


def distance(world, r, split):
    a = _place(world, r, split)
    b = r.choice([p for p in world.in_city(a.city) if p.id != a.id])
    return Draft(
        params={"name": a.name, "other": b.name, "city": a.city},
        plan=[
            _find("find_a", a),
            _find("find_b", b),
            Call(id="distance", tool="get_distance", args={"from_id": a.id, "to_id": b.id}, after=("find_a", "find_b")),
        ],
        answer={"km": str(distance_km(a, b))},
        sources={"km": Source(call="distance", path="km")},
    )


def _booking_params(r: random.Random) -> dict:
    return {"day": r.choice(DAYS), "time": r.choice(TIMES), "people": r.randint(1, 8)}


def book_best(world, r, split):
    drawn = _best(world, r, split, BOOKABLE)
    if drawn is None:
        return None
    city, category, best = drawn
    b = _booking_params(r)
    book = Call(id="book", tool="book_place", args={"place_id": best.id, **b}, after=("search",))
    return Draft(
        params={"city": city, "category": category, **{k: str(v) for k, v in b.items()}},
        plan=[Call(id="search", tool="search_places", args={"city": city, "category": category}), book],
        sources={"code": Source(call="book", path="code")},
        write=book,
    )


def book_named(world, r, split):
    p, b = _place(world, r, split, BOOKABLE), _booking_params(r)
    book = Call(id="book", tool="book_place", args={"place_id": p.id, **b}, after=("find",))
    return Draft(
        params={"name": p.name, "city": p.city, **{k: str(v) for k, v in b.items()}},
        plan=[_find("find", p), book],
        sources={"code": Source(call="book", path="code")},
        write=book,
    )


def best_phone_hours(world, r, split):
    drawn = _best(world, r, split, CATEGORY_NAMES)
    if drawn is None:
        return None
    city, category, best = drawn
    day = r.choice(DAYS)
    return Draft(
        params={"city": city, "category": category, "day": day},
        plan=[
            Call(id="search", tool="search_places", args={"city": city, "category": category}),
            Call(id="details", tool="get_place_details", args={"place_id": best.id}, after=("search",)),
            Call(id="hours", tool="get_opening_hours", args={"place_id": best.id, "day": day}, after=("search",)),
        ],
        answer={"phone": best.phone, "hours": best.hours[day]},
        sources={"phone": Source(call="details", path="phone"), "hours": Source(call="hours", path="hours")},
    )


def outing(world, r, split):
    drawn = _best(world, r, split, BOOKABLE)
    if drawn is None:
        return None
    city, category, best = drawn
    hotel = r.choice([p for p in world.in_city(city) if p.id != best.id])
    b = _booking_params(r)
    book = Call(id="book", tool="book_place", args={"place_id": best.id, **b}, after=("search",))
    return Draft(
        params={"city": city, "category": category, "name": hotel.name, **{k: str(v) for k, v in b.items()}},
        plan=[
            Call(id="search", tool="search_places", args={"city": city, "category": category}),
            _find("find", hotel),
            Call(id="weather", tool="get_weather", args={"city": city, "day": b["day"]}),
            book,
            Call(
                id="distance",
                tool="get_distance",
                args={"from_id": hotel.id, "to_id": best.id},
                after=("search", "find"),
            ),
        ],
        answer={"forecast": world.weather[(city, b["day"])][0], "km": str(distance_km(hotel, best))},
        sources={
            "code": Source(call="book", path="code"),
            "forecast": Source(call="weather", path="forecast"),
            "km": Source(call="distance", path="km"),
        },
        write=book,
    )


def taxi(world, r, split):
    p = _place(world, r, split)
    return Draft(params={"name": p.name, "city": p.city, "time": r.choice(TIMES)}, plan=[])


def unknown_place(world, r, split):
    p = _place(world, r, split)
    ghost = f"{p.name.split()[0]} Unicorn {p.name.split()[-1]}"
    return Draft(
        params={"name": ghost, "city": p.city},
        plan=[Call(id="find", tool="find_place", args={"name": ghost, "city": p.city})],
    )


FAMILIES = (
    family("phone", phone, [
        "What is the phone number of {name} in {city}?",
        "Give me the phone number for {name} in {city}.",
        "I need to call {name} ({city}). What's their number?",
    ], ["How can I reach {name} in {city} by phone?"], ["Could you find a number to ring {name}, the one in {city}?"]),
    family("best_rated", best_rated, [
        "Which {category} in {city} has the best rating?",
        "What is the top-rated {category} in {city}?",
        "Name the best-rated {category} in {city}.",
    ], ["Which {category} do people rate highest in {city}?"], ["In {city}, which {category} scores best with reviewers?"]),
    family("hours", hours, [
        "When is {name} in {city} open on {day}?",
        "What are the opening hours of {name} in {city} on {day}?",
        "Is {name} in {city} open on {day}, and when?",
    ], ["At what times can I visit {name} in {city} on {day}?"], ["On {day}, from when to when does {name} ({city}) welcome visitors?"]),
    family("weather", weather, [
        "What's the weather in {city} on {day}?",
        "Give me the forecast for {city} on {day}.",
        "How will the weather be in {city} on {day}?",
    ], ["Will I need an umbrella in {city} on {day}? Tell me the forecast."],
       ["What conditions and temperature should I expect in {city} this {day}?"]),
    family("distance", distance, [
        "How far is {name} from {other} in {city}?",
        "What is the distance between {name} and {other} in {city}?",
        "In {city}, how many km are there from {name} to {other}?",
    ], ["How long a trip is it from {name} to {other}, both in {city}?"],
       ["I am at {name} in {city}; how far away is {other}?"]),
    family("book_best", book_best, [
        "Book the best-rated {category} in {city} for {people} people on {day} at {time}.",
        "Reserve the top-rated {category} in {city} on {day} at {time} for {people}.",
        "Make a booking for {people} at the highest-rated {category} in {city}, {day} {time}.",
    ], ["Get {people} of us into {city}'s best {category} on {day} at {time}, please."],
       ["Secure a spot for {people} at whichever {category} in {city} rates best, {day} at {time}."]),
    family("book_named", book_named, [
        "Book {name} in {city} for {people} people on {day} at {time}.",
        "Reserve {name} ({city}) on {day} at {time} for {people}.",
        "Make a reservation at {name} in {city}: {people} people, {day}, {time}.",
    ], ["Please hold a booking at {name} in {city} for {people} on {day}, {time}."],
       ["Could you arrange for {people} guests at {name}, {city}, {day} at {time}?"]),
    family("best_phone_hours", best_phone_hours, [
        "Find the best-rated {category} in {city}: what is its phone number and its hours on {day}?",
        "For the top-rated {category} in {city}, give me the phone number and the {day} opening hours.",
        "I want the highest-rated {category} in {city}. Its phone and hours on {day}, please.",
    ], ["Which number do I call for {city}'s best {category}, and when is it open on {day}?"],
       ["Tell me how to phone the {category} in {city} that reviewers like most, and its {day} hours."]),
    family("outing", outing, [
        "Book the best-rated {category} in {city} for {people} on {day} at {time}, and tell me the weather "
        "that day and how far it is from {name}.",
        "Reserve the top-rated {category} in {city} ({day}, {time}, {people} people); also give me the "
        "forecast and the distance from {name}.",
        "Plan my {day} in {city}: book the highest-rated {category} at {time} for {people}, check the "
        "weather, and tell me how far it is from {name}.",
    ], ["Set up {day} in {city}: a booking for {people} at the best {category} at {time}, the forecast, "
        "and the km from {name}."],
       ["Arrange {city}'s best-rated {category} for {people} on {day} at {time}; what will the weather be, "
        "and what distance separates it from {name}?"]),
    family("taxi", taxi, [
        "Order a taxi to {name} in {city} at {time}.",
        "Call me a cab to {name} in {city} for {time}.",
        "Book a taxi that takes me to {name} ({city}) at {time}.",
    ], ["Arrange a ride to {name} in {city} at {time}."], ["Get a car to pick me up for {name}, {city}, at {time}."],
       unsolvable="missing_capability"),
    family("unknown_place", unknown_place, [
        "What is the phone number of {name} in {city}?",
        "Give me the phone number for {name} in {city}.",
        "I need to call {name} ({city}). What's their number?",
    ], ["How can I reach {name} in {city} by phone?"], ["Could you find a number to ring {name}, the one in {city}?"],
       unsolvable="nonexistent_entity"),
)  # fmt: skip
