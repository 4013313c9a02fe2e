"""The points-of-interest world (the training domain), generated from a seed."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass
from functools import cached_property

from sandbox.seeds import rng

CITIES = (
    ("Lisbon", 38.72, -9.14), ("Porto", 41.15, -8.61), ("Madrid", 40.42, -3.70),
    ("Seville", 37.39, -5.98), ("Lyon", 45.76, 4.84), ("Marseille", 43.30, 5.37),
    ("Turin", 45.07, 7.69), ("Naples", 40.85, 14.27), ("Munich", 48.14, 11.58),
    ("Vienna", 48.21, 16.37), ("Krakow", 50.06, 19.94), ("Ghent", 51.05, 3.72),
)  # fmt: skip
CITY_SPLIT = {
    "train": ("Lisbon", "Madrid", "Seville", "Lyon", "Marseille", "Naples", "Munich", "Krakow"),
    "dev": ("Porto", "Vienna"),
    "test": ("Turin", "Ghent"),
}
CATEGORIES = (
    ("restaurant", "Bistro"), ("cafe", "Cafe"), ("museum", "Museum"), ("hotel", "Hotel"),
    ("bar", "Bar"), ("bakery", "Bakery"), ("cinema", "Cinema"), ("gym", "Gym"),
    ("bookstore", "Books"), ("spa", "Spa"), ("pizzeria", "Pizzeria"), ("gallery", "Gallery"),
)  # fmt: skip
BOOKABLE = ("restaurant", "hotel", "spa", "pizzeria", "cinema", "bar")
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
WEATHER = ("sunny", "cloudy", "rain", "windy", "fog", "snow")
_ADJ = (
    "Blue", "Golden", "Quiet", "Red", "Green", "Old", "Silver", "Little", "Happy", "Iron",
    "Velvet", "Amber", "Wild", "Royal", "Hidden", "Bright", "Copper", "Lucky", "Salty", "Jade",
)  # fmt: skip
_NOUN = (
    "Fox", "Oak", "Harbor", "Lantern", "Fig", "Anchor", "Crown", "Olive", "Swan", "Garden",
    "Bridge", "Tower", "River", "Lemon", "Maple", "Comet", "Falcon", "Pearl", "Cedar", "Moon",
)  # fmt: skip
_STREETS = ("Oak St", "Main St", "Rosa Ave", "Port Rd", "Mill Ln", "King St", "Park Ave", "Elm Rd")


@dataclass(frozen=True)
class Place:
    id: str
    name: str
    category: str
    city: str
    rating: float
    price: int
    phone: str
    address: str
    hours: dict[str, str]
    lat: float
    lon: float


@dataclass(frozen=True)
class PoiWorld:
    seed: int
    places: dict[str, Place]
    weather: dict[tuple[str, str], tuple[str, int]]

    def by_name(self, name: str, city: str) -> Place | None:
        return self._name_index.get((name.casefold(), city.casefold()))

    def in_city(self, city: str) -> list[Place]:
        return self._city_index.get(city.casefold(), [])

    def search(self, city: str, category: str) -> list[Place]:
        return self._search_index.get((city.casefold(), category.casefold()), [])

    def content_hash(self) -> str:
        data = {"places": [asdict(p) for p in self.places.values()], "weather": sorted(self.weather.items())}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()

    @cached_property
    def _name_index(self) -> dict[tuple[str, str], Place]:
        return {(p.name.casefold(), p.city.casefold()): p for p in self.places.values()}

    @cached_property
    def _city_index(self) -> dict[str, list[Place]]:
        cities: dict[str, list[Place]] = {}
        for p in self.places.values():
            cities.setdefault(p.city.casefold(), []).append(p)
        return cities

    @cached_property
    def _search_index(self) -> dict[tuple[str, str], list[Place]]:
        search: dict[tuple[str, str], list[Place]] = {}
        for p in self.places.values():
            search.setdefault((p.city.casefold(), p.category.casefold()), []).append(p)
        for found in search.values():
            found.sort(key=lambda p: (-p.rating, p.id))
        return search


def distance_km(a: Place, b: Place) -> float:
    """Great-circle distance, rounded to 0.1 km."""
    la1, lo1, la2, lo2 = map(math.radians, (a.lat, a.lon, b.lat, b.lon))
    h = math.sin((la2 - la1) / 2) ** 2 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    return round(2 * 6371 * math.asin(math.sqrt(h)), 1)


def weekly_hours(r) -> dict[str, str]:
    """Opening (or consulting) hours for each weekday, some days closed."""
    open_, close = r.choice((7, 8, 9, 10, 11, 12)), r.choice((17, 18, 19, 20, 22, 23))
    closed = set(r.sample(DAYS, r.choice((0, 1, 1, 2))))
    return {d: "closed" if d in closed else f"{open_:02d}:00-{close:02d}:00" for d in DAYS}


def build_world(seed: int = 0, places_per_city: int = 50) -> PoiWorld:
    """A POI world: 12 cities x ``places_per_city`` places (600 by default), deterministic in ``seed``."""
    r = rng(seed, "poi-world")
    places: dict[str, Place] = {}
    used_names: set[tuple[str, str]] = set()
    phones = r.sample(range(1000, 10000), len(CITIES) * places_per_city)
    n = 0
    for city, lat, lon in CITIES:
        for i in range(places_per_city):
            category, word = CATEGORIES[(i + r.randrange(3)) % len(CATEGORIES)]
            while True:
                name = f"{r.choice(_ADJ)} {r.choice(_NOUN)} {word}"
                if (name, city) not in used_names:
                    break
            used_names.add((name, city))
            n += 1
            pid = f"P{n:03d}"
            places[pid] = Place(
                id=pid,
                name=name,
                category=category,
                city=city,
                rating=round(r.uniform(2.5, 5.0), 1),
                price=r.randint(1, 4),
                phone=f"555-{phones[n - 1]}",
                address=f"{r.randint(1, 199)} {r.choice(_STREETS)}",
                hours=weekly_hours(r),
                lat=round(lat + r.uniform(-0.05, 0.05), 4),
                lon=round(lon + r.uniform(-0.05, 0.05), 4),
            )
    weather = {(city, day): (r.choice(WEATHER), r.randint(-2, 34)) for city, _, _ in CITIES for day in DAYS}
    return PoiWorld(seed=seed, places=places, weather=weather)
