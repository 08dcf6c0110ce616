"""The ``maxSurge: 0`` mark: :data:`~api.controlplane.REMOVE_MEMBER_FIRST_ANNOTATION` on a Machine the
ControlPlane is about to delete (so the etcd-quorum hook may remove its healthy voter before the
replacement votes), and taking it off every Machine that is not being deleted."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from api.controlplane import REMOVE_MEMBER_FIRST_ANNOTATION
from api.machine import API_VERSION as MACHINE_API_VERSION
from runtime.client import JSON, Client
from runtime.errors import NotFound


async def mark_remove_member_first(
    client: Client, cp: JSON, owned: Sequence[JSON], name: str, reason: str
) -> None:
    """Mark Machine ``name`` right before a maxSurge-0 delete, under its resourceVersion: a Machine
    changed since ``owned`` was read is not marked (the 409 makes the pass run again, and nothing
    is deleted)."""
    machine = next(m for m in owned if m["metadata"]["name"] == name)
    await client.patch(
        MACHINE_API_VERSION,
        "Machine",
        name,
        {
            "metadata": {
                "resourceVersion": machine["metadata"].get("resourceVersion"),
                "annotations": {REMOVE_MEMBER_FIRST_ANNOTATION: reason},
            }
        },
        cp["metadata"]["namespace"],
    )


async def unmark_remove_member_first(client: Client, cp: JSON, owned: Sequence[JSON]) -> None:
    """Take the mark off every owned Machine that is not being deleted: the mark is for one delete,
    and a crash between the mark and the delete must not leave it for a user's later delete of
    that Machine."""
    for machine in owned:
        metadata = machine["metadata"]
        if metadata.get("deletionTimestamp") or REMOVE_MEMBER_FIRST_ANNOTATION not in (
            metadata.get("annotations") or {}
        ):
            continue
        with contextlib.suppress(NotFound):
            await client.patch(
                MACHINE_API_VERSION,
                "Machine",
                metadata["name"],
                {
                    "metadata": {
                        "resourceVersion": metadata.get("resourceVersion"),
                        "annotations": {REMOVE_MEMBER_FIRST_ANNOTATION: None},
                    }
                },
                cp["metadata"]["namespace"],
            )
