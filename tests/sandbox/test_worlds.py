from sandbox.domains import get_domain
from sandbox.domains.medical.world import build_world as build_medical
from sandbox.domains.poi.world import CATEGORIES, CITIES, CITY_SPLIT, build_world


def test_poi_world_has_the_promised_size_and_fields():
    world = build_world(0)
    places = list(world.places.values())
    assert len({p.city for p in places}) == len(CITIES) >= 8
    assert len({p.category for p in places}) >= 10
    assert len(places) >= 500
    p = places[0]
    assert p.id and p.name and p.category and p.city and p.phone and p.address
    assert 1 <= p.price <= 4 and 1.0 <= p.rating <= 5.0
    assert set(p.hours) == {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
    assert isinstance(p.lat, float) and isinstance(p.lon, float)
    assert len({(p.name, p.city) for p in places}) == len(places)
    assert len(CATEGORIES) >= 10


def test_same_seed_same_world_different_seed_different_world():
    assert build_world(0).content_hash() == build_world(0).content_hash()
    assert build_world(0).content_hash() != build_world(1).content_hash()
    assert build_medical(3).content_hash() == build_medical(3).content_hash()
    assert build_medical(3).content_hash() != build_medical(4).content_hash()


def test_same_seed_same_tasks_different_seed_different_tasks():
    poi = get_domain("poi")

    def digest(seed):
        return [t.model_dump_json() for t in poi.tasks("test", 200, seed)]

    assert digest(0) == digest(0)
    assert digest(0) != digest(1)


def test_splits_are_disjoint_in_entities():
    for name in ("poi", "medical"):
        domain = get_domain(name)
        cities = {}
        for split, n in (("train", 1500), ("dev", 300), ("test", 880)):
            tasks = domain.tasks(split, n)
            cities[split] = {t.params["city"] for t in tasks}
            assert cities[split] <= set(CITY_SPLIT[split]), (name, split)
            ids = {v for t in tasks for c in t.plan for k, v in c.args.items() if k.endswith("_id") or k == "name"}
            assert ids
        assert not cities["train"] & cities["test"] and not cities["dev"] & cities["test"]


def test_split_sizes_match_the_paper():
    assert len(get_domain("poi").tasks("train")) >= 6000
    assert len(get_domain("poi").tasks("test")) >= 880
    assert len(get_domain("medical").tasks("test")) >= 880
