"""The evidence a check names (conformance/evidence.py): frames, judged fields, decoded trees."""

from __future__ import annotations

from conformance.evidence import Evidence, Judged, Node, decoded


def test_fields_are_judged_in_the_reply_and_what_was_asked_in_the_request() -> None:
    ev = Evidence.of(3, 4).on("offset").asked("timestamp")
    assert ev.frames == (Judged(3, ("timestamp",)), Judged(4, ("offset",)))
    assert Evidence.of(None, 4).asked("timestamp").frames == (Judged(4),)  # no request: as is


def test_two_answers_compared_are_both_named_and_a_frame_named_twice_merges() -> None:
    a = Evidence.of(1, 2).on("x")
    b = Evidence.of(1, 5).on("y")
    assert (a + b).as_list() == [
        {"entry": 1, "fields": []},
        {"entry": 2, "fields": ["x"]},
        {"entry": 5, "fields": ["y"]},
    ]
    assert (Evidence.of(1, 2).on("x") + Evidence.of(1, 2).on("z")).frames[-1].fields == ("x", "z")


def test_a_decoded_answer_names_each_field_by_its_path() -> None:
    body = {"responses": [{"topic": "t", "partitions": [{"error_code": 3}]}]}
    answer: Node = decoded(body, Evidence.of(7, 8, ending=None))
    partition = answer["responses"][0]["partitions"][0]
    assert partition.at("error_code").frames[-1] == Judged(
        8, ("responses[0].partitions[0].error_code",)
    )
    assert answer["responses"][0]["partitions"].at().frames[-1].fields == (
        "responses[0].partitions",
    )
    assert answer.at().frames[-1].fields == ()  # the whole answer: the frame itself
    assert answer == body  # still the plain decoded values
