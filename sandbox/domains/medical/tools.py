"""The medical tools: the POI patterns (find, details, act) in clinical words."""

from __future__ import annotations

from pydantic import Field

from sandbox.domains.medical.world import LAB_TESTS, Doctor, MedicalWorld, Patient
from sandbox.domains.poi.tools import Day
from sandbox.state import State, Write, verification_code
from sandbox.tools import Args, Tool, ToolFailure


def _patient(world: MedicalWorld, patient_id: str) -> Patient:
    patient = world.patients.get(patient_id)
    if patient is None:
        raise ToolFailure("not_found", f"no patient with id {patient_id!r}")
    return patient


def _doctor(world: MedicalWorld, doctor_id: str) -> Doctor:
    doctor = world.doctors.get(doctor_id)
    if doctor is None:
        raise ToolFailure("not_found", f"no doctor with id {doctor_id!r}")
    return doctor


class FindPatientArgs(Args):
    name: str = Field(description="full name")
    city: str = Field(description="city of residence")


def find_patient(world: MedicalWorld, state: State, a: FindPatientArgs) -> dict:
    p = world.patient_by_name(a.name, a.city)
    if p is None:
        raise ToolFailure("not_found", f"no patient named {a.name!r} in {a.city!r}")
    return {"id": p.id, "name": p.name, "birth_year": p.birth_year}


class PatientArgs(Args):
    patient_id: str = Field(description="patient id, e.g. PT042")


def get_patient_record(world: MedicalWorld, state: State, a: PatientArgs) -> dict:
    p = _patient(world, a.patient_id)
    return {
        "id": p.id, "name": p.name, "birth_year": p.birth_year, "blood_type": p.blood_type,
        "allergies": list(p.allergies), "medications": list(p.medications),
    }  # fmt: skip


class LabArgs(Args):
    patient_id: str = Field(description="patient id")
    test: str = Field(description=f"one of {', '.join(LAB_TESTS)}")


def get_lab_results(world: MedicalWorld, state: State, a: LabArgs) -> dict:
    p = _patient(world, a.patient_id)
    if a.test not in LAB_TESTS:
        raise ToolFailure("invalid_arguments", f"unknown test {a.test!r}; tests: {', '.join(LAB_TESTS)}")
    return {"id": p.id, "test": a.test, "value": p.labs[a.test], "unit": LAB_TESTS[a.test]}


class InteractionArgs(Args):
    drug_a: str = Field(description="drug name")
    drug_b: str = Field(description="drug name")


def check_interaction(world: MedicalWorld, state: State, a: InteractionArgs) -> dict:
    severity = world.interaction(a.drug_a, a.drug_b)
    if severity is None:
        raise ToolFailure("not_found", f"unknown drug in ({a.drug_a!r}, {a.drug_b!r})")
    return {"drug_a": a.drug_a, "drug_b": a.drug_b, "severity": severity}


class FindDoctorArgs(Args):
    specialty: str = Field(description="e.g. cardiology, neurology")
    city: str = Field(description="city name")


def find_doctors(world: MedicalWorld, state: State, a: FindDoctorArgs) -> dict:
    found = world.doctors_in(a.specialty, a.city)
    if not found:
        raise ToolFailure("not_found", f"no {a.specialty} doctor in {a.city!r}")
    return {"results": [{"id": d.id, "name": d.name, "rating": d.rating} for d in found[:5]]}


class ScheduleArgs(Args):
    doctor_id: str = Field(description="doctor id, e.g. D012")
    day: Day = Field(description="weekday")


def get_doctor_hours(world: MedicalWorld, state: State, a: ScheduleArgs) -> dict:
    return {"id": a.doctor_id, "day": a.day, "hours": _doctor(world, a.doctor_id).hours[a.day]}


class AppointmentArgs(Args):
    patient_id: str = Field(description="patient id")
    doctor_id: str = Field(description="doctor id")
    day: Day = Field(description="weekday")
    time: str = Field(description="HH:MM", pattern=r"^\d{2}:\d{2}$")


def book_appointment(world: MedicalWorld, state: State, a: AppointmentArgs) -> dict:
    _patient(world, a.patient_id), _doctor(world, a.doctor_id)
    args = a.model_dump()
    code = verification_code("AP", world.seed, "appointment", *args.values())
    appointment_id = state.next_id("A")
    state.records[appointment_id] = {"appointment_id": appointment_id, **args, "code": code}
    state.writes.append(Write("book_appointment", args, code))
    return {"appointment_id": appointment_id, "code": code}


TOOLS = (
    Tool("find_patient", "Look up a patient by full name and city; returns the patient id.", FindPatientArgs,
         find_patient),
    Tool("get_patient_record", "Blood type, allergies and current medications of a patient.", PatientArgs,
         get_patient_record),
    Tool("get_lab_results", "Latest value of a lab test for a patient.", LabArgs, get_lab_results),
    Tool("check_interaction", "Interaction severity between two drugs.", InteractionArgs, check_interaction),
    Tool("find_doctors", "Find doctors of a specialty in a city, best rated first.", FindDoctorArgs, find_doctors),
    Tool("get_doctor_hours", "Consulting hours of a doctor on a weekday.", ScheduleArgs, get_doctor_hours),
    Tool("book_appointment", "Book an appointment; returns an appointment id and code.", AppointmentArgs,
         book_appointment, writes=True),
)  # fmt: skip
