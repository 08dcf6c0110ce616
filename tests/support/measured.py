"""What a real kube-apiserver 1.32 was measured to answer where no transcript was recorded, and
the rule short-watch BOOKMARKs are held to on any server.

The cases live in ``tests/testdata/kube-apiserver/measured`` (its ``README.md`` says how they were
written: from measurements, in the transcript format of ``INDEX.md``, plus the ``writes`` the
measurement made). :func:`bookmark_problems` states the measured rule once; the tests apply it to
these cases (so the rule provably admits what the real server did) and to the live answers of the
server under test (so a test passes on either server).

The rule (kube-apiserver's watch cache, ``k8s.io/apiserver/pkg/storage/cacher``; measured on 1.32
with short watches of ConfigMaps, 2026-11-28): without a write of the resource type since the
watch began, or with ``timeoutSeconds`` of 2 or less, no BOOKMARK at all; otherwise one or two,
the first between 3.2 and 0.8 s before the timeout (due at deadline - 2 s, popped on a timer of
about a second), each carrying the newest resourceVersion of the type; the stream ends at the
timeout with no final event.
"""

from __future__ import annotations

import json

from runtime.jsoncodec import JSON
from tests.support.reference import REFERENCE_DIR

MEASURED_DIR = REFERENCE_DIR / "measured"
"""The measured cases (``<case>.json``)."""

FIRST_BOOKMARK_WINDOW = (3.2, 0.8)
"""The first BOOKMARK of a watch with progress arrives within this many seconds before its
timeout: (earliest, latest)."""
MOST_BOOKMARKS = 2
"""A short watch never gets more BOOKMARKs than this (the pre-deadline one, and a second one when
the first was popped early)."""
NO_BOOKMARK_AT_OR_BELOW = 2
"""A watch whose timeoutSeconds is at most this gets no BOOKMARK (deadline - 2 s has passed)."""
ENDS_AT_TIMEOUT = (0.25, 2.0)
"""The stream ends within (this much before, this much after) its timeout, seen from the client:
exactly at it on the server; the slack is the client's clock and a busy machine."""

TimedEvents = list[tuple[float, JSON]]
"""Watch events with the seconds after the request at which each arrived."""


def measured(case: str) -> JSON:
    """One measured case, as its file holds it."""
    data: JSON = json.loads((MEASURED_DIR / f"{case}.json").read_text())
    return data


def measured_watch_cases() -> list[str]:
    """The names of every measured watch case."""
    return sorted(p.stem for p in MEASURED_DIR.glob("watch-*.json"))


def recorded_watch(case: JSON) -> tuple[TimedEvents, float, int, str | None]:
    """A measured watch case as a test sees a live one: its events with their arrival times, how
    long the stream lasted, its timeoutSeconds and the resourceVersion of the newest write made
    while it was open (None: no write after it began)."""
    response = case["response"]
    events = list(zip(response["event_arrival_seconds"], response["events"], strict=True))
    during = [w for w in case.get("writes", []) if w["at_seconds"] is not None]
    newest = during[-1]["resourceVersion"] if during else None
    timeout = int(case["request"]["query"]["timeoutSeconds"])
    return events, float(response["stream_ended_by_server_after_seconds"]), timeout, newest


def bookmark_problems(events: TimedEvents, lasted: float, timeout: int, newest_rv: str | None) -> list[str]:
    """Where a short watch that matches no object breaks the measured rule (empty: it keeps it).

    ``events`` are the watch's events with their arrival times, ``lasted`` when the stream ended,
    ``newest_rv`` the resourceVersion of the newest write of the resource type made while the
    watch was open (None when there was none).
    """
    problems: list[str] = []
    others = [e.get("type") for _, e in events if e.get("type") != "BOOKMARK"]
    if others:
        problems.append(f"only BOOKMARKs can arrive on a watch that matches nothing, got {others}")
    marks = [(at, e) for at, e in events if e.get("type") == "BOOKMARK"]
    arrivals = [round(at, 2) for at, _ in marks]
    if newest_rv is None or timeout <= NO_BOOKMARK_AT_OR_BELOW:
        if marks:
            why = "nothing was written during it" if newest_rv is None else f"its timeout is {timeout} s"
            problems.append(f"no BOOKMARK may arrive ({why}), got them at {arrivals} s")
    else:
        if not 1 <= len(marks) <= MOST_BOOKMARKS:
            problems.append(
                f"1-{MOST_BOOKMARKS} BOOKMARKs expected after a write, got {len(marks)} at {arrivals} s"
            )
        earliest, latest = (timeout - before for before in FIRST_BOOKMARK_WINDOW)
        if marks and not earliest <= marks[0][0] <= latest:
            problems.append(
                f"the first BOOKMARK must arrive within [{earliest:.1f}, {latest:.1f}] s "
                f"({timeout} s timeout), arrived at {marks[0][0]:.2f} s"
            )
        carried = [(e.get("object") or {}).get("metadata", {}).get("resourceVersion") for _, e in marks]
        if any(rv != newest_rv for rv in carried):
            problems.append(
                f"every BOOKMARK must carry the newest write's resourceVersion {newest_rv}, got {carried}"
            )
    if any(at > lasted for at in arrivals):
        problems.append(f"events at {arrivals} s after the stream ended ({lasted:.2f} s)")
    early, late = ENDS_AT_TIMEOUT
    if not timeout - early <= lasted <= timeout + late:
        problems.append(f"the stream must end at its {timeout} s timeout, ended at {lasted:.2f} s")
    return problems


def bookmark_shape(event: JSON) -> str:
    """A BOOKMARK's object as JSON text (key order included) with its resourceVersion blanked:
    what must match between servers."""
    obj = json.loads(json.dumps(event["object"]))
    obj["metadata"]["resourceVersion"] = "<rv>"
    return json.dumps(obj)
