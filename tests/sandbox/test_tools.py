import json

import pytest

import sandbox
from sandbox.domains import DOMAINS, get_domain, make_env


def poi_env():
    return make_env("poi", sandbox.tasks("poi", "test", 5)[0])


@pytest.mark.parametrize("name", list(DOMAINS))
def test_tool_specs_are_in_the_chat_template_format(name):
    specs = get_domain(name).toolbox.specs()
    assert len(specs) >= (8 if name == "poi" else 6)
    for spec in specs:
        assert spec["type"] == "function"
        fn = spec["function"]
        assert fn["name"] and fn["description"]
        assert fn["parameters"]["type"] == "object"
        assert set(fn["parameters"]["required"]) <= set(fn["parameters"]["properties"])
        json.dumps(spec)


def test_poi_tools_cover_search_details_hours_distance_weather_and_bookings():
    names = {s["function"]["name"] for s in get_domain("poi").toolbox.specs()}
    expected = {"search_places", "get_place_details", "get_opening_hours", "get_distance", "get_weather"}
    assert expected | {"book_place", "get_booking", "cancel_booking"} <= names


@pytest.mark.parametrize(
    ("name", "arguments", "kind", "says"),
    [
        ("teleport", {}, "unknown_tool", "no tool named 'teleport'"),
        ("get_place_details", {}, "invalid_arguments", "missing argument 'place_id'"),
        ("get_place_details", {"place_id": "P001", "x": 1}, "invalid_arguments", "unexpected argument 'x'"),
        ("get_place_details", {"place_id": ["P001"]}, "invalid_arguments", "'place_id'"),
        ("get_place_details", "P001", "invalid_arguments", "must be a JSON object"),
        ("get_place_details", {"place_id": "P9999"}, "not_found", "no place with id 'P9999'"),
        ("book_place", {"place_id": "P001", "day": "someday", "time": "19:00"}, "invalid_arguments", "'day'"),
        ("get_booking", {"booking_id": "B001"}, "not_found", "no booking"),
    ],
)
def test_a_bad_call_is_an_error_observation_not_an_exception(name, arguments, kind, says):
    result = poi_env().call(name, arguments)
    assert result.error == kind
    assert says in result.message
    assert json.loads(result.render())["error"] == kind


def test_a_booking_returns_a_code_that_lookup_and_cancel_know():
    env = poi_env()
    world = env.world
    bookable = next(p for p in world.places.values() if p.category == "restaurant")
    booked = env.call("book_place", {"place_id": bookable.id, "day": "friday", "time": "19:30", "people": 3})
    assert booked.ok and booked.content["code"].startswith("BK-")
    again = make_env("poi", env.task).call(
        "book_place", {"place_id": bookable.id, "day": "friday", "time": "19:30", "people": 3}
    )
    assert again.content["code"] == booked.content["code"]
    shown = env.call("get_booking", {"booking_id": booked.content["booking_id"]})
    assert shown.content["status"] == "confirmed" and shown.content["people"] == 3
    cancelled = env.call("cancel_booking", {"booking_id": booked.content["booking_id"]})
    assert cancelled.content["status"] == "cancelled" and cancelled.content["code"].startswith("CX-")
    assert [w.tool for w in env.state.writes] == ["book_place", "cancel_booking"]


def test_a_place_that_takes_no_bookings_says_so():
    env = poi_env()
    museum = next(p for p in env.world.places.values() if p.category == "museum")
    result = env.call("book_place", {"place_id": museum.id, "day": "monday", "time": "10:00"})
    assert result.error == "invalid_arguments" and "takes no bookings" in result.message


def test_medical_tools_answer_and_book():
    task = sandbox.tasks("medical", "test", 3)[0]
    env = make_env("medical", task)
    patient = next(iter(env.world.patients.values()))
    doctor = next(iter(env.world.doctors.values()))
    assert env.call("find_patient", {"name": patient.name, "city": patient.city}).content["id"] == patient.id
    assert env.call("get_lab_results", {"patient_id": patient.id, "test": "glucose"}).content["unit"] == "mg/dL"
    assert env.call("check_interaction", {"drug_a": "aspirin", "drug_b": "warfarin"}).ok
    assert env.call("check_interaction", {"drug_a": "aspirin", "drug_b": "unobtainium"}).error == "not_found"
    booked = env.call(
        "book_appointment", {"patient_id": patient.id, "doctor_id": doctor.id, "day": "monday", "time": "09:00"}
    )
    assert booked.content["code"].startswith("AP-")
