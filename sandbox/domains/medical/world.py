"""The medical world (the held-out domain): patients, doctors, drugs, lab results."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from functools import cached_property

from sandbox.domains.poi.world import CITIES, DAYS, weekly_hours
from sandbox.seeds import rng

SPECIALTIES = ("cardiology", "dermatology", "neurology", "pediatrics", "oncology", "orthopedics", "psychiatry")
DRUGS = (
    "warfarin", "aspirin", "ibuprofen", "metformin", "lisinopril", "simvastatin", "omeprazole",
    "amoxicillin", "sertraline", "tramadol", "digoxin", "prednisone", "insulin", "clopidogrel",
)  # fmt: skip
SEVERITIES = ("none", "minor", "moderate", "major")
LAB_TESTS = {"glucose": "mg/dL", "cholesterol": "mg/dL", "hemoglobin": "g/dL", "creatinine": "mg/dL", "tsh": "mIU/L"}
BLOOD_TYPES = ("A+", "A-", "B+", "B-", "AB+", "AB-", "O+", "O-")
_FIRST = (
    "Ana", "Ben", "Clara", "David", "Elena", "Felix", "Greta", "Hugo", "Ines", "Jonas",
    "Karla", "Leon", "Mia", "Nico", "Olga", "Pablo", "Rosa", "Sven", "Tara", "Uwe",
)  # fmt: skip
_LAST = (
    "Alves", "Berger", "Costa", "Dumont", "Eder", "Fischer", "Garcia", "Horvat", "Ivanova", "Jansen",
    "Keller", "Lopez", "Moreau", "Novak", "Olsen", "Petit", "Quinn", "Rossi", "Silva", "Weber",
)  # fmt: skip


@dataclass(frozen=True)
class Patient:
    id: str
    name: str
    birth_year: int
    city: str
    blood_type: str
    allergies: tuple[str, ...]
    medications: tuple[str, ...]
    labs: dict[str, float]


@dataclass(frozen=True)
class Doctor:
    id: str
    name: str
    specialty: str
    city: str
    rating: float
    hours: dict[str, str]


@dataclass(frozen=True)
class MedicalWorld:
    seed: int
    patients: dict[str, Patient]
    doctors: dict[str, Doctor]
    interactions: dict[tuple[str, str], str]

    @cached_property
    def _patient_index(self) -> dict[tuple[str, str], Patient]:
        return {(p.name.casefold(), p.city.casefold()): p for p in self.patients.values()}

    def patient_by_name(self, name: str, city: str) -> Patient | None:
        return self._patient_index.get((name.casefold(), city.casefold()))

    def patients_in(self, city: str) -> list[Patient]:
        return [p for p in self.patients.values() if p.city == city]

    def doctors_in(self, specialty: str, city: str) -> list[Doctor]:
        found = [
            d for d in self.doctors.values()
            if d.specialty == specialty.casefold() and d.city.casefold() == city.casefold()
        ]  # fmt: skip
        return sorted(found, key=lambda d: (-d.rating, d.id))

    def interaction(self, a: str, b: str) -> str | None:
        a, b = a.casefold(), b.casefold()
        if a not in DRUGS or b not in DRUGS:
            return None
        first, second = sorted((a, b))
        return self.interactions[first, second]

    def content_hash(self) -> str:
        data = {
            "patients": [asdict(p) for p in self.patients.values()],
            "doctors": [asdict(d) for d in self.doctors.values()],
            "interactions": sorted(self.interactions.items()),
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def build_world(seed: int = 0, patients_per_city: int = 30, doctors_per_city: int = 14) -> MedicalWorld:
    r = rng(seed, "medical-world")
    patients: dict[str, Patient] = {}
    doctors: dict[str, Doctor] = {}
    used: set[str] = set()
    for city, _, _ in CITIES:
        for _ in range(patients_per_city):
            while (name := f"{r.choice(_FIRST)} {r.choice(_LAST)}") in used:
                pass
            used.add(name)
            pid = f"PT{len(patients) + 1:03d}"
            patients[pid] = Patient(
                id=pid, name=name, birth_year=r.randint(1940, 2015), city=city,
                blood_type=r.choice(BLOOD_TYPES), allergies=tuple(r.sample(DRUGS, r.randint(0, 2))),
                medications=tuple(r.sample(DRUGS, r.randint(1, 3))),
                labs={t: round(r.uniform(0.5, 2.0) * base, 1)
                      for t, base in zip(LAB_TESTS, (95, 180, 14, 1.0, 2.0), strict=True)},
            )  # fmt: skip
        for i in range(doctors_per_city):
            did = f"D{len(doctors) + 1:03d}"
            doctors[did] = Doctor(
                id=did, name=f"Dr. {r.choice(_FIRST)} {r.choice(_LAST)}", specialty=SPECIALTIES[i % len(SPECIALTIES)],
                city=city, rating=round(r.uniform(2.5, 5.0), 1), hours=weekly_hours(r),
            )  # fmt: skip
    interactions = {(a, b): r.choice(SEVERITIES) for i, a in enumerate(sorted(DRUGS)) for b in sorted(DRUGS)[i:]}
    return MedicalWorld(seed=seed, patients=patients, doctors=doctors, interactions=interactions)


__all__ = ["DAYS", "MedicalWorld", "build_world"]
