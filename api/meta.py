"""Shared building blocks of the API models: the base class, wire types, object metadata.

Every model derives from :class:`KubeModel`: snake_case attributes in Python, camelCase keys on
the wire (``spec.provider_id`` ↔ ``spec.providerID``), construction by either name, and each
field's docstring kept as its description (:mod:`api.crdgen` turns it into the CRD's). Objects
travel as JSON dicts; convert at the edges:

>>> from api import Machine
>>> raw = {"apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
...        "metadata": {"name": "m", "uid": "1b7c"}, "spec": {"providerID": "local:///m"}}
>>> machine = Machine.from_dict(raw)         # what the API server sent
>>> machine.spec.provider_id                 # typed access
'local:///m'
>>> machine.to_dict() == raw                 # nothing lost, nothing added
True

Round trips are exact because :meth:`KubeModel.to_dict` dumps only the fields that were *set*
(read from the input or assigned): defaults you never wrote stay off the wire, and keys this
project does not model are kept where the model allows extras (everything a real cluster writes:
object metadata, Machine spec and status, opaque ``providerSpec.value``). A default is an object
you can read, not one to mutate in place: assign a new value (``spec.selector = LabelSelector(...)``)
so the field counts as set and is written out.

Wire types: :data:`Time` (RFC 3339, seconds, ``Z``), :data:`IntOrString`, :data:`Duration`
(Go duration strings, :func:`parse_duration`). :class:`CRDInfo` describes how a root kind is
served (names, scope, subresources, printer columns); :mod:`api.crdgen` reads it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainSerializer
from pydantic.alias_generators import to_camel

from runtime.jsoncodec import JSON


class KubeModel(BaseModel):
    """Base of every API model: camelCase aliases, docstrings as descriptions, exact round trips."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        use_attribute_docstrings=True,
        extra="allow",
    )

    def to_dict(self) -> JSON:
        """The wire form: camelCase keys, only the fields that were set, unknown keys kept."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Parse the wire form; raises :class:`pydantic.ValidationError` naming the bad field."""
        return cls.model_validate(data)


class StrictKubeModel(KubeModel):
    """A model of this project's own API: keys it does not know are dropped when parsing.

    The API server prunes unknown fields of our CRDs before they are stored, so there is nothing
    to keep; ignoring rather than refusing lets an older operator read a newer object.
    """

    model_config = ConfigDict(extra="ignore")


class KubeObject(KubeModel):
    """A root object: ``apiVersion`` and ``kind`` are always written, even when left at default."""

    def model_post_init(self, context: Any, /) -> None:
        # A freshly built object must still say what it is when dumped with exclude_unset.
        self.__pydantic_fields_set__.update({"api_version", "kind"})


# ---------------------------------------------------------------------------------- wire types


def _as_utc(value: datetime) -> datetime:
    # Kubernetes times are UTC; a naive datetime built in Python is taken to mean UTC.
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def format_time(value: datetime) -> str:
    """A ``metav1.Time`` string: RFC 3339 in UTC, seconds (microseconds only when present)."""
    value = _as_utc(value)
    if value.microsecond:
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


Time = Annotated[
    datetime,
    AfterValidator(_as_utc),
    PlainSerializer(format_time, return_type=str, when_used="json"),
]
"""A timestamp (``metav1.Time``): an aware UTC datetime in Python, ``2026-01-02T03:04:05Z`` on the wire."""

IntOrString = int | str
"""``intstr.IntOrString``: a count (``1``) or a percentage / name (``"50%"``); the CRD marks it
``x-kubernetes-int-or-string``."""

DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"
Duration = Annotated[str, Field(pattern=DURATION_PATTERN)]
"""A Go duration string (``metav1.Duration``) such as ``"300ms"``, ``"1.5h"`` or ``"2h45m"``."""

_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> timedelta:
    """Parse a Go duration string (``"1h30m"``, ``"0"`` is allowed too) into a timedelta.

    Raises ``ValueError`` that quotes the text and the accepted form when it is not one.
    """
    if text == "0":
        return timedelta(0)
    pos, seconds = 0, 0.0
    for match in _DURATION_PART.finditer(text):
        if match.start() != pos:
            break
        seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if pos != len(text) or not text:
        raise ValueError(
            f"invalid duration {text!r}: use decimal numbers with a unit (ns, us, ms, s, m, h), "
            "e.g. '90s' or '1h30m'"
        )
    return timedelta(seconds=seconds)


# ------------------------------------------------------------------------------------ metadata


class OwnerReference(KubeModel):
    """Points at an object this one depends on; garbage collection follows these links."""

    api_version: str
    """API version of the owner, e.g. ``controlplane.cpo.dev/v1alpha1``."""
    kind: str
    """Kind of the owner."""
    name: str
    """Name of the owner."""
    uid: str
    """UID of the owner: a re-created owner with the same name is a different owner."""
    controller: bool | None = None
    """True on the one reference that points at the managing controller."""
    block_owner_deletion: bool | None = None
    """With foreground deletion, the owner is not removed until this object is gone."""


class ObjectMeta(KubeModel):
    """Standard object metadata; fields not listed here (managedFields, selfLink, …) are kept as they are."""

    name: str | None = None
    """Name, unique within the namespace for this kind."""
    generate_name: str | None = None
    """Prefix from which the server generates a unique name when ``name`` is empty."""
    namespace: str | None = None
    """Namespace of a namespaced object."""
    uid: str | None = None
    """Server-assigned unique ID of this incarnation of the object."""
    resource_version: str | None = None
    """Opaque version for optimistic concurrency and watches."""
    generation: int | None = None
    """Incremented by the server on every change of the desired state (spec)."""
    creation_timestamp: Time | None = None
    """When the server created the object."""
    deletion_timestamp: Time | None = None
    """Set when deletion was requested; the object goes once its finalizers are removed."""
    deletion_grace_period_seconds: int | None = None
    """Seconds the object was given to terminate gracefully."""
    labels: dict[str, str] | None = None
    """Labels, for selection."""
    annotations: dict[str, str] | None = None
    """Annotations: unselectable key/value metadata for tools and controllers."""
    owner_references: list[OwnerReference] | None = None
    """Objects this one depends on; at most one is the controller."""
    finalizers: list[str] | None = None
    """Keys that must be removed before a deleted object disappears."""


class LabelSelectorRequirement(KubeModel):
    """One set-based requirement of a label selector."""

    key: str
    """Label key the requirement applies to."""
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    """How the key's value is compared with ``values``."""
    values: list[str] | None = None
    """Values for In and NotIn (non-empty); empty for Exists and DoesNotExist."""


class LabelSelector(KubeModel):
    """A label query; all of ``matchLabels`` and all of ``matchExpressions`` must match (AND)."""

    match_labels: dict[str, str] | None = None
    """Exact key=value pairs a matching object must carry."""
    match_expressions: list[LabelSelectorRequirement] | None = None
    """Set-based requirements a matching object must satisfy."""


class ObjectReference(KubeModel):
    """A reference to another object (``corev1.ObjectReference``)."""

    kind: str | None = None
    """Kind of the referent."""
    namespace: str | None = None
    """Namespace of the referent."""
    name: str | None = None
    """Name of the referent."""
    uid: str | None = None
    """UID of the referent."""
    api_version: str | None = None
    """API version of the referent."""
    resource_version: str | None = None
    """The referent's resourceVersion this reference was made for."""
    field_path: str | None = None
    """A part of the referent, e.g. ``spec.containers{name}``, when the reference is to a piece of it."""


class LocalObjectReference(KubeModel):
    """A reference to an object in the same namespace."""

    name: str = Field(min_length=1)
    """Name of the referent."""


# ------------------------------------------------------------------------------- CRD description


@dataclass(frozen=True)
class PrinterColumn:
    """One ``kubectl get`` column (``additionalPrinterColumns``)."""

    name: str
    """Column header."""
    type: Literal["integer", "number", "string", "boolean", "date"]
    """How the value is shown."""
    json_path: str
    """Where the value is read, e.g. ``.status.phase``."""
    description: str = ""
    """What the column shows. Defaults to none."""
    priority: int = 0
    """0 shows it always; higher only with ``-o wide``. Defaults to 0."""


@dataclass(frozen=True)
class ScaleSubresource:
    """The ``scale`` subresource's paths (what ``kubectl scale`` and autoscalers read and write)."""

    spec_replicas_path: str = ".spec.replicas"
    """Desired replicas. Defaults to ``.spec.replicas``."""
    status_replicas_path: str = ".status.replicas"
    """Observed replicas. Defaults to ``.status.replicas``."""
    label_selector_path: str | None = ".status.selector"
    """Serialized label selector of the replicas. Defaults to ``.status.selector``."""


@dataclass(frozen=True)
class CRDInfo:
    """How a root kind is served: what ``cpo manifests`` needs besides the model itself."""

    model: type[KubeModel]
    """The root model (apiVersion, kind, metadata, spec, status)."""
    group: str
    """API group, e.g. ``controlplane.cpo.dev``."""
    version: str
    """The one served and stored version."""
    kind: str
    """Kind, e.g. ``ControlPlane``."""
    plural: str
    """Resource name in URLs, e.g. ``controlplanes``."""
    singular: str = ""
    """Singular name. Defaults to the lower-cased kind."""
    scope: Literal["Namespaced", "Cluster"] = "Namespaced"
    """Defaults to Namespaced."""
    short_names: tuple[str, ...] = ()
    """kubectl short names. Defaults to none."""
    categories: tuple[str, ...] = ()
    """kubectl categories (``kubectl get <category>``). Defaults to none."""
    status_subresource: bool = True
    """Serve ``/status`` (spec and status written separately). Defaults to True."""
    scale: ScaleSubresource | None = None
    """Serve ``/scale``. Defaults to not served."""
    printer_columns: tuple[PrinterColumn, ...] = ()
    """Extra ``kubectl get`` columns. Defaults to none (name and age only)."""
    annotations: Mapping[str, str] = field(default_factory=dict)
    """Annotations on the CRD object. Defaults to none."""

    @property
    def name(self) -> str:
        """The CRD's object name, ``<plural>.<group>``."""
        return f"{self.plural}.{self.group}"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"
