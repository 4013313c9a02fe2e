"""The POI tools: search, details, hours, distance, weather, and bookings."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sandbox.domains.poi.world import BOOKABLE, DAYS, Place, PoiWorld, distance_km
from sandbox.state import State, Write, verification_code
from sandbox.tools import Args, Tool, ToolFailure

Day = Literal[DAYS]  # type: ignore[valid-type]  # a Literal built from the tuple of days at runtime


def _place(world: PoiWorld, place_id: str) -> Place:
    place = world.places.get(place_id)
    if place is None:
        raise ToolFailure("not_found", f"no place with id {place_id!r}")
    return place


class SearchArgs(Args):
    city: str = Field(description="city name")
    category: str = Field(description="e.g. restaurant, cafe, museum, hotel")


def search_places(world: PoiWorld, state: State, a: SearchArgs) -> dict:
    found = world.search(a.city, a.category)
    if not found:
        raise ToolFailure("not_found", f"no {a.category} in {a.city!r}")
    return {"results": [{"id": p.id, "name": p.name, "rating": p.rating} for p in found[:5]]}


class FindArgs(Args):
    name: str = Field(description="place name")
    city: str = Field(description="city name")


def find_place(world: PoiWorld, state: State, a: FindArgs) -> dict:
    place = world.by_name(a.name, a.city)
    if place is None:
        raise ToolFailure("not_found", f"no place named {a.name!r} in {a.city!r}")
    return {"id": place.id, "name": place.name, "city": place.city}


class PlaceArgs(Args):
    place_id: str = Field(description="place id, e.g. P042")


def get_place_details(world: PoiWorld, state: State, a: PlaceArgs) -> dict:
    p = _place(world, a.place_id)
    return {
        "id": p.id, "name": p.name, "category": p.category, "city": p.city,
        "address": p.address, "phone": p.phone, "rating": p.rating, "price": p.price,
    }  # fmt: skip


class HoursArgs(Args):
    place_id: str = Field(description="place id")
    day: Day = Field(description="weekday")


def get_opening_hours(world: PoiWorld, state: State, a: HoursArgs) -> dict:
    return {"id": a.place_id, "day": a.day, "hours": _place(world, a.place_id).hours[a.day]}


class DistanceArgs(Args):
    from_id: str = Field(description="place id")
    to_id: str = Field(description="place id")


def get_distance(world: PoiWorld, state: State, a: DistanceArgs) -> dict:
    km = distance_km(_place(world, a.from_id), _place(world, a.to_id))
    return {"km": km, "walk_min": round(km * 12)}


class WeatherArgs(Args):
    city: str = Field(description="city name")
    day: Day = Field(description="weekday")


def get_weather(world: PoiWorld, state: State, a: WeatherArgs) -> dict:
    key = next((k for k in world.weather if k[0].casefold() == a.city.casefold() and k[1] == a.day), None)
    if key is None:
        raise ToolFailure("not_found", f"no forecast for {a.city!r}")
    forecast, temp = world.weather[key]
    return {"city": key[0], "day": a.day, "forecast": forecast, "temp_c": temp}


class BookArgs(Args):
    place_id: str = Field(description="place id")
    day: Day = Field(description="weekday")
    time: str = Field(description="HH:MM", pattern=r"^\d{2}:\d{2}$")
    people: int = Field(2, ge=1, le=20, description="party size (default 2)")


def book_place(world: PoiWorld, state: State, a: BookArgs) -> dict:
    place = _place(world, a.place_id)
    if place.category not in BOOKABLE:
        raise ToolFailure("invalid_arguments", f"{place.id} is a {place.category}; it takes no bookings")
    args = a.model_dump()
    code = verification_code("BK", world.seed, "book", *args.values())
    booking_id = state.next_id("B")
    state.records[booking_id] = {"booking_id": booking_id, **args, "status": "confirmed", "code": code}
    state.writes.append(Write("book_place", args, code))
    return {"booking_id": booking_id, "code": code}


class BookingArgs(Args):
    booking_id: str = Field(description="booking id, e.g. B001")


def _booking(state: State, booking_id: str) -> dict:
    record = state.records.get(booking_id)
    if record is None or not booking_id.startswith("B"):
        raise ToolFailure("not_found", f"no booking {booking_id!r}")
    return record


def get_booking(world: PoiWorld, state: State, a: BookingArgs) -> dict:
    return dict(_booking(state, a.booking_id))


def cancel_booking(world: PoiWorld, state: State, a: BookingArgs) -> dict:
    record = _booking(state, a.booking_id)
    record["status"] = "cancelled"
    code = verification_code("CX", world.seed, "cancel", record["code"])
    state.writes.append(Write("cancel_booking", a.model_dump(), code))
    return {"booking_id": a.booking_id, "status": "cancelled", "code": code}


TOOLS = (
    Tool("search_places", "Find places of a category in a city, best rated first.", SearchArgs, search_places),
    Tool("find_place", "Look up a place by its name and city; returns its id.", FindArgs, find_place),
    Tool("get_place_details", "Address, phone, rating and price of a place.", PlaceArgs, get_place_details),
    Tool("get_opening_hours", "Opening hours of a place on a weekday.", HoursArgs, get_opening_hours),
    Tool("get_distance", "Distance in km and walking minutes between two places.", DistanceArgs, get_distance),
    Tool("get_weather", "Weather forecast for a city on a weekday.", WeatherArgs, get_weather),
    Tool("book_place", "Book a table or room; returns a booking id and code.", BookArgs, book_place, writes=True),
    Tool("get_booking", "Show a booking.", BookingArgs, get_booking),
    Tool("cancel_booking", "Cancel a booking; returns a cancellation code.", BookingArgs, cancel_booking, writes=True),
)
