"""What the medical domain tells the perturbations and the oracle about its own words (its ``vocabulary``).

As POI's (``sandbox/domains/poi/vocabulary.py``), whose words for the arguments and result keys both worlds
share (names, cities, weekdays, times, ids) it takes.
"""

from __future__ import annotations

from sandbox.domains.poi import vocabulary as poi
from sandbox.vocabulary import DomainVocabulary, Pools, pools

TOOL_SYNONYMS: dict[str, Pools] = {
    "find_patient": pools(("resolve_patient", "locate_person"), ("identify_client", "match_patient")),
    "get_patient_record": pools(("patient_chart", "fetch_chart"), ("medical_file", "health_summary")),
    "get_lab_results": pools(("lab_readout", "test_values"), ("assay_report", "pathology_result")),
    "check_interaction": pools(("drug_clash", "combo_risk"), ("medicine_conflict", "pairing_check")),
    "find_doctors": pools(("list_physicians", "lookup_clinicians"), ("browse_specialists", "query_practitioners")),
    "get_doctor_hours": pools(("physician_schedule", "clinic_timetable"), ("practitioner_times", "surgery_hours")),
    "book_appointment": pools(("schedule_visit", "reserve_slot"), ("arrange_consult", "set_visit")),
}
DESCRIPTION_REWRITES: dict[str, Pools] = {
    "find_patient": pools(
        ("Resolves a patient's full name and city to the patient id.",),
        ("Gives the id of a patient from their full name and city.",),
    ),
    "get_patient_record": pools(
        ("A patient's blood group, allergies and medications.",),
        ("Medical file of a patient: blood type, allergies, current drugs.",),
    ),
    "get_lab_results": pools(
        ("Most recent result of a laboratory test for a patient.",),
        ("A patient's newest lab measurement for one test.",),
    ),
    "check_interaction": pools(
        ("How severe the interaction between two drugs is.",),
        ("Severity of the interaction when two medicines are combined.",),
    ),
    "find_doctors": pools(
        ("Lists doctors with a given specialty in a city, highest rated first.",),
        ("Returns a city's physicians of one specialty, best rated first.",),
    ),
    "get_doctor_hours": pools(
        ("When a doctor consults on a given weekday.",),
        ("A doctor's consultation times for one day of the week.",),
    ),
    "book_appointment": pools(
        ("Schedules an appointment with a doctor; gives an appointment id and code.",),
        ("Makes a doctor's appointment for a patient and returns its id and confirmation code.",),
    ),
}
CAPABILITIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("get_patient_record", ("blood",)),
    ("get_lab_results", ("lab",)),
    ("check_interaction", ("interaction",)),
    ("find_doctors", ("specialty",)),
    ("get_doctor_hours", ("consult",)),
    ("book_appointment", ("appointment",)),
    ("find_patient", ("patient id", "id of a patient")),
)
"""Tool → the capability words its descriptions keep, most specific first."""
PARAM_SYNONYMS: dict[str, Pools] = {
    **{key: poi.PARAM_SYNONYMS[key] for key in ("name", "city", "day", "time")},
    "patient_id": pools(("patient_ref", "chart_id"), ("client_key", "person_code")),
    "test": pools(("assay", "analyte"), ("panel", "measure")),
    "drug_a": pools(("first_drug", "med_one"), ("medicine_x", "substance_1")),
    "drug_b": pools(("second_drug", "med_two"), ("medicine_y", "substance_2")),
    "specialty": pools(("field", "discipline"), ("branch", "area")),
    "doctor_id": pools(("physician_ref", "doc_id"), ("clinician_key", "practitioner_code")),
}
FIELD_SYNONYMS: dict[str, Pools] = {
    **{key: poi.FIELD_SYNONYMS[key] for key in ("results", "id", "name", "hours", "code", "rating")},
    "blood_type": pools(("blood_group",), ("bloodtype",)),
    "value": pools(("measurement",), ("reading",)),
    "severity": pools(("level",), ("risk",)),
    "appointment_id": pools(("visit_id",), ("appointment_ref",)),
}

VOCABULARY = DomainVocabulary(
    TOOL_SYNONYMS, DESCRIPTION_REWRITES, CAPABILITIES, PARAM_SYNONYMS, FIELD_SYNONYMS,
    consumers={tool: ("find_patient", "patient_id") for tool in ("get_patient_record", "get_lab_results",
                                                               "book_appointment")},
    finder="find_patient", entity="patient", searches=("find_doctors",), rank_by="rating",
    entities=lambda w: w.patients.values(), resolve=lambda w, n, c: w.patient_by_name(n, c), compound=("day", "time"),
)  # fmt: skip
