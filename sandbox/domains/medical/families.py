"""Medical task families: the POI shapes (look up, chain, act) in the held-out domain."""

from __future__ import annotations

import random

from sandbox.domains.medical.world import DRUGS, LAB_TESTS, SPECIALTIES, MedicalWorld, Patient
from sandbox.domains.poi.families import TIMES
from sandbox.domains.poi.world import CITY_SPLIT, DAYS
from sandbox.family import Draft, family
from sandbox.task import Call, Source


def _patient(world: MedicalWorld, r: random.Random, split: str) -> Patient:
    return r.choice(world.patients_in(r.choice(CITY_SPLIT[split])))


def _find(p: Patient) -> Call:
    return Call(id="find", tool="find_patient", args={"name": p.name, "city": p.city})


def blood_type(world, r, split):
    p = _patient(world, r, split)
    return Draft(
        params={"name": p.name, "city": p.city},
        plan=[_find(p), Call(id="record", tool="get_patient_record", args={"patient_id": p.id}, after=("find",))],
        answer={"blood_type": p.blood_type},
        sources={"blood_type": Source(call="record", path="blood_type")},
    )


def lab_value(world, r, split):
    p, test = _patient(world, r, split), r.choice(list(LAB_TESTS))
    return Draft(
        params={"name": p.name, "city": p.city, "test": test},
        plan=[
            _find(p),
            Call(id="lab", tool="get_lab_results", args={"patient_id": p.id, "test": test}, after=("find",)),
        ],
        answer={"value": str(p.labs[test])},
        sources={"value": Source(call="lab", path="value")},
    )


def interaction(world, r, split):
    p = _patient(world, r, split)
    drug = r.choice([d for d in DRUGS if d not in p.medications])
    current = p.medications[0]
    return Draft(
        params={"name": p.name, "city": p.city, "drug": drug},
        plan=[
            _find(p),
            Call(id="record", tool="get_patient_record", args={"patient_id": p.id}, after=("find",)),
            Call(id="check", tool="check_interaction", args={"drug_a": current, "drug_b": drug}, after=("record",)),
        ],
        answer={"severity": world.interaction(current, drug)},
        sources={"severity": Source(call="check", path="severity")},
    )


def _best_doctor(world, r, split):
    city, specialty = r.choice(CITY_SPLIT[split]), r.choice(SPECIALTIES)
    found = world.doctors_in(specialty, city)
    if not found or (len(found) > 1 and found[0].rating == found[1].rating):
        return None
    return city, specialty, found[0]


def best_doctor(world, r, split):
    if (drawn := _best_doctor(world, r, split)) is None:
        return None
    city, specialty, best = drawn
    return Draft(
        params={"city": city, "specialty": specialty},
        plan=[Call(id="search", tool="find_doctors", args={"specialty": specialty, "city": city})],
        answer={"name": best.name},
        sources={"name": Source(call="search", path="results.0.name")},
    )


def doctor_hours(world, r, split):
    if (drawn := _best_doctor(world, r, split)) is None:
        return None
    city, specialty, best = drawn
    day = r.choice(DAYS)
    return Draft(
        params={"city": city, "specialty": specialty, "day": day},
        plan=[
            Call(id="search", tool="find_doctors", args={"specialty": specialty, "city": city}),
            Call(id="hours", tool="get_doctor_hours", args={"doctor_id": best.id, "day": day}, after=("search",)),
        ],
        answer={"hours": best.hours[day]},
        sources={"hours": Source(call="hours", path="hours")},
    )


def book_doctor(world, r, split):
    if (drawn := _best_doctor(world, r, split)) is None:
        return None
    city, specialty, best = drawn
    p = r.choice(world.patients_in(city))
    day, time = r.choice(DAYS), r.choice(TIMES)
    book = Call(
        id="book", tool="book_appointment", after=("find", "search"),
        args={"patient_id": p.id, "doctor_id": best.id, "day": day, "time": time},
    )  # fmt: skip
    return Draft(
        params={"name": p.name, "city": city, "specialty": specialty, "day": day, "time": time},
        plan=[_find(p), Call(id="search", tool="find_doctors", args={"specialty": specialty, "city": city}), book],
        sources={"code": Source(call="book", path="code")},
        write=book,
    )


def prescribe(world, r, split):
    p = _patient(world, r, split)
    return Draft(params={"name": p.name, "city": p.city, "drug": r.choice(DRUGS)}, plan=[])


def unknown_patient(world, r, split):
    p = _patient(world, r, split)
    ghost = f"{p.name.split()[0]} Nobody"
    return Draft(
        params={"name": ghost, "city": p.city},
        plan=[Call(id="find", tool="find_patient", args={"name": ghost, "city": p.city})],
    )


FAMILIES = (
    family("blood_type", blood_type, [
        "What is the blood type of {name} from {city}?",
        "Tell me {name}'s blood type ({city}).",
        "Look up the blood group of patient {name} in {city}.",
    ], ["Which blood type is on file for {name}, {city}?"], ["For a transfusion, what blood group does {name} of {city} have?"]),
    family("lab_value", lab_value, [
        "What is the latest {test} result of {name} from {city}?",
        "Give me the {test} value for patient {name} in {city}.",
        "Look up {name}'s most recent {test} ({city}).",
    ], ["Show the last {test} measurement of {name}, {city}."], ["How did {name} from {city} score on the newest {test} test?"]),
    family("interaction", interaction, [
        "Does {drug} interact with the first medication of {name} from {city}? Give the severity.",
        "How severe is the interaction of {drug} with the first drug {name} ({city}) takes?",
        "Check {drug} against {name}'s first current medication ({city}) and tell me the severity.",
    ], ["Is it risky to add {drug} to the first medicine of {name}, {city}? Severity please."],
       ["If {name} of {city} starts {drug}, how bad is the clash with their first listed medication?"]),
    family("best_doctor", best_doctor, [
        "Who is the best-rated {specialty} doctor in {city}?",
        "Find the top-rated doctor for {specialty} in {city}.",
        "Name the highest-rated {specialty} specialist in {city}.",
    ], ["Which {specialty} doctor do patients rate highest in {city}?"],
       ["In {city}, whom do reviewers rank first for {specialty}?"]),
    family("doctor_hours", doctor_hours, [
        "When does the best-rated {specialty} doctor in {city} see patients on {day}?",
        "What are the {day} hours of the top-rated {specialty} doctor in {city}?",
        "Give me the consulting hours on {day} of {city}'s highest-rated {specialty} doctor.",
    ], ["On {day}, when can I see {city}'s best {specialty} doctor?"],
       ["What times on {day} does the {specialty} doctor in {city} that reviewers like most work?"]),
    family("book_doctor", book_doctor, [
        "Book {name} from {city} with the best-rated {specialty} doctor there on {day} at {time}.",
        "Make an appointment for {name} ({city}) with the top {specialty} doctor, {day} {time}.",
        "Schedule {name} of {city} to see the highest-rated {specialty} doctor on {day} at {time}.",
    ], ["Get {name}, {city}, in to see the best {specialty} doctor on {day} at {time}."],
       ["Arrange a {specialty} consultation for {name} ({city}) with whoever rates best, {day} at {time}."]),
    family("prescribe", prescribe, [
        "Prescribe {drug} to {name} from {city}.",
        "Write a {drug} prescription for {name} ({city}).",
        "Issue a prescription of {drug} for patient {name} in {city}.",
    ], ["Put {name} of {city} on {drug} with a new prescription."], ["Send a {drug} script for {name}, {city}, to the pharmacy."],
       unsolvable="missing_capability"),
    family("unknown_patient", unknown_patient, [
        "What is the blood type of {name} from {city}?",
        "Tell me {name}'s blood type ({city}).",
        "Look up the blood group of patient {name} in {city}.",
    ], ["Which blood type is on file for {name}, {city}?"], ["For a transfusion, what blood group does {name} of {city} have?"],
       unsolvable="nonexistent_entity"),
)  # fmt: skip
