"""The resources kube-apiserver serves natively, described well enough to behave like the real ones.

:func:`builtin_types` lists them as :class:`~.registry.ResourceType` entries (scope, verbs, short
names, validation, defaulting); :func:`initial_objects` is what a fresh server already holds.

Each type is described by its Go struct layout in a small description language (``struct``,
``F``, ``ListOf`` ...) because kube-apiserver decodes a built-in object into a Go struct and
encodes it back, which has visible
effects this module reproduces from a description of each struct:

* keys come out in struct order (``kind, apiVersion, metadata, spec, ...``);
* unknown fields are dropped (``Warning: unknown field "spec.bogus"``, or 400 when strict);
* zero values of non-omitempty fields appear (``eventTime: null``, ``reportingComponent: ""``),
  zero values of omitempty ones vanish, pointers keep whatever was set;
* ``metav1.Time`` is RFC 3339 in UTC with whole seconds, ``metav1.MicroTime`` needs exactly six
  fractional digits, with Go's own parse errors;
* list semantics (atomic, set, keyed map) drive field ownership and strategic merge patch.

Only the fields the embedded server's users touch are described in full; a struct marked
``open`` keeps fields it does not describe untouched.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from .objectmeta import METADATA_RULES, FieldRules

JSON = dict[str, Any]

OMITEMPTY = "omitempty"  # dropped when zero (Go's omitempty on a scalar, slice or map)
ALWAYS = "always"  # always written, zero value included (no omitempty, or a struct/Time)
POINTER = "pointer"  # written whenever set, even to a zero value; null means unset


class DecodeError(Exception):
    """The body cannot become the Go struct (HTTP 400 ``... cannot be handled as a Kind: <message>``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Scalar:
    go_type: str  # string | int32 | int64 | bool | float64

    @property
    def zero(self) -> Any:
        return {"string": "", "bool": False, "float64": 0.0}.get(self.go_type, 0)


@dataclass(frozen=True)
class Time:
    micro: bool = False


@dataclass(frozen=True)
class Anything:
    """Free-form JSON (RawExtension, apiextensions JSON, schemas)."""


@dataclass(frozen=True)
class IntOrString:
    pass


@dataclass(frozen=True)
class Quantity:
    pass


@dataclass(frozen=True)
class ListOf:
    item: TypeSpec
    list_type: str = "atomic"  # atomic | set | map
    keys: tuple[str, ...] = ()
    # strategic merge patch key when the list merges by key (patchStrategy=merge)
    merge_key: str | None = None


@dataclass(frozen=True)
class MapOf:
    value: TypeSpec


@dataclass(frozen=True)
class F:
    """One struct field: JSON name, type, presence rule."""

    name: str
    type: TypeSpec
    presence: str = OMITEMPTY


@dataclass(frozen=True)
class Struct:
    go_name: str
    fields: tuple[F, ...]
    open: bool = False
    atomic: bool = False

    def get(self, name: str) -> F | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None


TypeSpec = Scalar | Time | Anything | IntOrString | Quantity | ListOf | MapOf | Struct


def struct(go_name: str, *fields: F, open: bool = False, atomic: bool = False) -> Struct:
    return Struct(go_name, tuple(fields), open, atomic)


STR = Scalar("string")
I32 = Scalar("int32")
I64 = Scalar("int64")
BOOL = Scalar("bool")
TIME = Time()
MICRO = Time(micro=True)
ANY = Anything()
STR_MAP = MapOf(STR)
STR_LIST = ListOf(STR)

# ------------------------------------------------------------------------- Go time parsing

RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"


class _TimeParseError(Exception):
    pass


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _parse_error(value: str, layout: str, value_elem: str, layout_elem: str) -> _TimeParseError:
    return _TimeParseError(
        f"parsing time {_go_quote(value)} as {_go_quote(layout)}: "
        f"cannot parse {_go_quote(value_elem)} as {_go_quote(layout_elem)}"
    )


def _range_error(value: str, what: str) -> _TimeParseError:
    return _TimeParseError(f"parsing time {_go_quote(value)}: {what} out of range")


def parse_go_time(value: str, *, micro: bool) -> datetime:
    """Parse as Go's ``time.Parse`` does with RFC3339 / RFC3339Micro, raising its error text."""
    layout = RFC3339_MICRO if micro else RFC3339
    rest = value

    def digits(n: int, elem: str, *, flexible: bool = False) -> int:
        nonlocal rest
        hold = rest
        if flexible and len(rest) >= 1 and rest[0].isdigit() and (len(rest) < 2 or not rest[1].isdigit()):
            rest = rest[1:]
            return int(hold[0])
        if len(rest) < n or not rest[:n].isdigit():
            raise _parse_error(value, layout, hold, elem)
        rest = rest[n:]
        return int(hold[:n])

    def literal(text: str) -> None:
        nonlocal rest
        if not rest.startswith(text):
            raise _parse_error(value, layout, rest, text)
        rest = rest[len(text) :]

    year = digits(4, "2006")
    literal("-")
    month = digits(2, "01")
    if not 1 <= month <= 12:
        raise _range_error(value, "month")
    literal("-")
    day = digits(2, "02")
    literal("T")
    hour = digits(2, "15", flexible=True)
    if hour > 23:
        raise _range_error(value, "hour")
    literal(":")
    minute = digits(2, "04")
    if minute > 59:
        raise _range_error(value, "minute")
    literal(":")
    second = digits(2, "05")
    if second > 59:
        raise _range_error(value, "second")
    micros = 0
    if micro:
        hold = rest
        if len(rest) < 7 or rest[0] not in ".," or not rest[1:7].isdigit():
            raise _parse_error(value, layout, hold, ".000000")
        micros = int(rest[1:7])
        rest = rest[7:]
    elif len(rest) >= 2 and rest[0] in ".," and rest[1].isdigit():
        n = 1
        while n < len(rest) and rest[n].isdigit():
            n += 1
        micros = int((rest[1:n] + "000000")[:6])
        rest = rest[n:]
    offset = timedelta(0)
    hold = rest
    if rest.startswith("Z"):
        rest = rest[1:]
    else:
        if len(rest) < 6 or rest[3] != ":" or rest[0] not in "+-" or not (rest[1:3] + rest[4:6]).isdigit():
            raise _parse_error(value, layout, hold, "Z07:00")
        sign = 1 if rest[0] == "+" else -1
        offset = sign * timedelta(hours=int(rest[1:3]), minutes=int(rest[4:6]))
        rest = rest[6:]
    if rest:
        raise _TimeParseError(f"parsing time {_go_quote(value)}: extra text: {_go_quote(rest)}")
    try:
        local = datetime(year, month, day, hour, minute, second, micros, tzinfo=UTC)
    except ValueError as exc:
        raise _range_error(value, "day") from exc
    return local - offset


def format_time(moment: datetime, *, micro: bool = False) -> str:
    """metav1.Time / MicroTime as the server writes them: UTC, Z, seconds or microseconds."""
    moment = moment.astimezone(UTC)
    if micro:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------------------- decoding

_JSON_KIND = {str: "string", bool: "bool", int: "number", float: "number", list: "array", dict: "object"}


@dataclass
class _Decoder:
    strict: bool
    unknown: list[str] = field(default_factory=list)

    def type_error(self, value: Any, owner: str, path: str, go_type: str) -> DecodeError:
        got = _JSON_KIND.get(type(value), "value")
        return DecodeError(
            f"json: cannot unmarshal {got} into Go struct field {owner}.{path} of type {go_type}"
        )

    def decode(self, spec: TypeSpec, value: Any, path: str, owner: str) -> Any:
        if value is None:
            return None
        if isinstance(spec, Struct):
            if not isinstance(value, dict):
                raise self.type_error(value, owner, path, spec.go_name)
            return self.decode_struct(spec, value, path)
        if isinstance(spec, Scalar):
            return self.decode_scalar(spec, value, path, owner)
        if isinstance(spec, Time):
            if not isinstance(value, str):
                raise self.type_error(value, owner, path, "MicroTime" if spec.micro else "Time")
            try:
                moment = parse_go_time(value, micro=spec.micro)
            except _TimeParseError as exc:
                raise DecodeError(str(exc)) from exc
            return format_time(moment, micro=spec.micro)
        if isinstance(spec, ListOf):
            if not isinstance(value, list):
                raise self.type_error(value, owner, path, "[]" + _go_type_name(spec.item))
            return [self.decode(spec.item, item, f"{path}[{i}]", owner) for i, item in enumerate(value)]
        if isinstance(spec, MapOf):
            if not isinstance(value, dict):
                raise self.type_error(value, owner, path, "map[string]" + _go_type_name(spec.value))
            return {k: self.decode(spec.value, v, f"{path}.{k}", owner) for k, v in value.items()}
        if isinstance(spec, IntOrString):
            if isinstance(value, bool) or not isinstance(value, int | str):
                if isinstance(value, float) and value == int(value):
                    return int(value)
                raise self.type_error(value, owner, path, "intstr.IntOrString")
            return value
        if isinstance(spec, Quantity):
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise DecodeError(
                    "quantities must match the regular expression "
                    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
                )
            return str(value) if not isinstance(value, str) else value
        return value

    def decode_scalar(self, spec: Scalar, value: Any, path: str, owner: str) -> Any:
        go = spec.go_type
        if go == "string":
            if not isinstance(value, str):
                raise self.type_error(value, owner, path, go)
            return value
        if go == "bool":
            if not isinstance(value, bool):
                raise self.type_error(value, owner, path, go)
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.type_error(value, owner, path, go)
        if go == "float64":
            return value
        if isinstance(value, float):
            if value != int(value):
                raise DecodeError(
                    f"json: cannot unmarshal number {value!r} into Go struct field "
                    f"{owner}.{path} of type {go}"
                )
            return int(value)
        return value

    def decode_struct(self, spec: Struct, value: JSON, path: str) -> JSON:
        out: JSON = {}
        known = {f.name for f in spec.fields}
        for key in value:
            if key not in known and not spec.open:
                self.unknown.append(f"{path}.{key}" if path else key)
        for f in spec.fields:
            child_path = f"{path}.{f.name}" if path else f.name
            if f.name in value:
                decoded = self.decode(f.type, value[f.name], child_path, spec.go_name)
                if decoded is None or (f.presence == OMITEMPTY and _is_empty(decoded)):
                    if f.presence == ALWAYS:
                        out[f.name] = zero_value(f.type)
                    continue
                out[f.name] = decoded
            elif f.presence == ALWAYS:
                out[f.name] = zero_value(f.type)
        if spec.open:
            for key, item in value.items():
                if key not in known:
                    out[key] = item
        return out


def _is_empty(value: Any) -> bool:
    if isinstance(value, bool):
        return value is False
    if isinstance(value, int | float):
        return value == 0
    return value in ("", [], {}) or value is None


def _go_type_name(spec: TypeSpec) -> str:
    if isinstance(spec, Scalar):
        return spec.go_type
    if isinstance(spec, Struct):
        return spec.go_name
    if isinstance(spec, Time):
        return "v1.MicroTime" if spec.micro else "v1.Time"
    return "interface {}"


def zero_value(spec: TypeSpec) -> Any:
    """What Go writes for a field left at its zero value when it is not omitempty."""
    if isinstance(spec, Struct):
        return _Decoder(strict=False).decode_struct(spec, {}, "")
    if isinstance(spec, Scalar):
        return spec.zero
    return None


def decode_struct(spec: Struct, body: JSON, *, strict: bool) -> tuple[JSON, list[str]]:
    """Decode a body into ``spec``'s shape; returns (object, unknown field paths).

    Raises :class:`DecodeError` for type errors, bad times, or unknown fields when strict.
    """
    decoder = _Decoder(strict)
    out = decoder.decode_struct(spec, body, "")
    if strict and decoder.unknown:
        raise DecodeError(
            "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in decoder.unknown)
        )
    return out, decoder.unknown


def reorder(spec: TypeSpec, value: Any) -> Any:
    """Put keys into struct order without dropping or adding anything."""
    if isinstance(spec, Struct) and isinstance(value, dict):
        out: JSON = {}
        for f in spec.fields:
            if f.name in value:
                out[f.name] = reorder(f.type, value[f.name])
        for key, item in value.items():
            if key not in out:
                out[key] = item
        return out
    if isinstance(spec, ListOf) and isinstance(value, list):
        return [reorder(spec.item, v) for v in value]
    if isinstance(spec, MapOf) and isinstance(value, dict):
        return {k: reorder(spec.value, v) for k, v in value.items()}
    return value


def rules_for(spec: Struct) -> FieldRules:
    """Field-ownership rules (list kinds, atomic structs, zero object) read off a struct description."""
    list_keys: dict[str, tuple[str, ...]] = {}
    set_lists: set[str] = set()
    atomic: set[str] = set()

    def walk(t: TypeSpec, path: str, depth: int) -> None:
        if depth > 12:
            return
        if isinstance(t, Struct):
            if t.atomic:
                atomic.add(path)
                return
            for f in t.fields:
                if f.name == "metadata" and not path:
                    continue
                walk(f.type, f"{path}.{f.name}" if path else f.name, depth + 1)
        elif isinstance(t, ListOf):
            if t.list_type == "set":
                set_lists.add(path)
            elif t.list_type == "map":
                list_keys[path] = t.keys
            walk(t.item, path + "[]", depth + 1)

    walk(spec, "", 0)
    own = FieldRules(list_keys, frozenset(set_lists), frozenset(atomic), zero_value(spec))
    return METADATA_RULES.merged_with(own)


def merge_keys_for(spec: Struct) -> dict[str, str]:
    """Strategic-merge-patch list keys (``{"spec.containers": "name"}``) read off a description."""
    out: dict[str, str] = {}

    def walk(t: TypeSpec, path: str, depth: int) -> None:
        if depth > 12:
            return
        if isinstance(t, Struct):
            for f in t.fields:
                walk(f.type, f"{path}.{f.name}" if path else f.name, depth + 1)
        elif isinstance(t, ListOf):
            if t.merge_key:
                out[path] = t.merge_key
            walk(t.item, path + "[]", depth + 1)

    walk(spec, "", 0)
    return out


# --------------------------------------------------------------------- struct descriptions

META_TOP = (F("kind", STR), F("apiVersion", STR))

OWNER_REFERENCE = struct(
    "OwnerReference",
    F("apiVersion", STR, ALWAYS),
    F("kind", STR, ALWAYS),
    F("name", STR, ALWAYS),
    F("uid", STR, ALWAYS),
    F("controller", BOOL, POINTER),
    F("blockOwnerDeletion", BOOL, POINTER),
    atomic=True,
)
MANAGED_FIELDS_ENTRY = struct(
    "ManagedFieldsEntry",
    F("manager", STR),
    F("operation", STR),
    F("apiVersion", STR),
    F("time", TIME, POINTER),
    F("fieldsType", STR),
    F("fieldsV1", ANY, POINTER),
    F("subresource", STR),
)
OBJECT_META = struct(
    "ObjectMeta",
    F("name", STR),
    F("generateName", STR),
    F("namespace", STR),
    F("selfLink", STR),
    F("uid", STR),
    F("resourceVersion", STR),
    F("generation", I64),
    F("creationTimestamp", TIME, ALWAYS),
    F("deletionTimestamp", TIME, POINTER),
    F("deletionGracePeriodSeconds", I64, POINTER),
    F("labels", STR_MAP),
    F("annotations", STR_MAP),
    F("ownerReferences", ListOf(OWNER_REFERENCE, "map", ("uid",), merge_key="uid")),
    F("finalizers", ListOf(STR, "set")),
    F("managedFields", ListOf(MANAGED_FIELDS_ENTRY)),
)
METADATA = F("metadata", OBJECT_META, ALWAYS)

LABEL_SELECTOR = struct(
    "LabelSelector",
    F("matchLabels", STR_MAP),
    F(
        "matchExpressions",
        ListOf(
            struct(
                "LabelSelectorRequirement",
                F("key", STR, ALWAYS),
                F("operator", STR, ALWAYS),
                F("values", STR_LIST),
            )
        ),
    ),
    atomic=True,
)
OBJECT_REFERENCE = struct(
    "ObjectReference",
    F("kind", STR),
    F("namespace", STR),
    F("name", STR),
    F("uid", STR),
    F("apiVersion", STR),
    F("resourceVersion", STR),
    F("fieldPath", STR),
    atomic=True,
)
LOCAL_OBJECT_REFERENCE = struct("LocalObjectReference", F("name", STR), atomic=True)
CONDITION = struct(
    "Condition",
    F("type", STR, ALWAYS),
    F("status", STR, ALWAYS),
    F("observedGeneration", I64),
    F("lastTransitionTime", TIME, ALWAYS),
    F("reason", STR, ALWAYS),
    F("message", STR, ALWAYS),
)


def _conditions(go_name: str, *, heartbeat: bool = False) -> ListOf:
    fields = [F("type", STR, ALWAYS), F("status", STR, ALWAYS)]
    if heartbeat:
        fields.append(F("lastHeartbeatTime", TIME, ALWAYS))
    fields += [F("lastTransitionTime", TIME, ALWAYS), F("reason", STR), F("message", STR)]
    return ListOf(struct(go_name, *fields), "map", ("type",), merge_key="type")


NAMESPACE = struct(
    "Namespace",
    *META_TOP,
    METADATA,
    F("spec", struct("NamespaceSpec", F("finalizers", STR_LIST)), ALWAYS),
    F(
        "status",
        struct("NamespaceStatus", F("phase", STR), F("conditions", _conditions("NamespaceCondition"))),
        ALWAYS,
    ),
)
CONFIG_MAP = struct(
    "ConfigMap",
    *META_TOP,
    METADATA,
    F("immutable", BOOL, POINTER),
    F("data", STR_MAP),
    F("binaryData", STR_MAP),
)
SECRET = struct(
    "Secret",
    *META_TOP,
    METADATA,
    F("immutable", BOOL, POINTER),
    F("data", STR_MAP),
    F("stringData", STR_MAP),
    F("type", STR),
)
SERVICE_ACCOUNT = struct(
    "ServiceAccount",
    *META_TOP,
    METADATA,
    F("secrets", ListOf(OBJECT_REFERENCE, merge_key="name")),
    F("imagePullSecrets", ListOf(LOCAL_OBJECT_REFERENCE)),
    F("automountServiceAccountToken", BOOL, POINTER),
)
EVENT_SOURCE = struct("EventSource", F("component", STR), F("host", STR))
CORE_EVENT = struct(
    "Event",
    *META_TOP,
    METADATA,
    F("involvedObject", OBJECT_REFERENCE, ALWAYS),
    F("reason", STR),
    F("message", STR),
    F("source", EVENT_SOURCE, ALWAYS),
    F("firstTimestamp", TIME, ALWAYS),
    F("lastTimestamp", TIME, ALWAYS),
    F("count", I32),
    F("type", STR),
    F("eventTime", MICRO, ALWAYS),
    F("series", struct("EventSeries", F("count", I32), F("lastObservedTime", MICRO, ALWAYS)), POINTER),
    F("action", STR),
    F("related", OBJECT_REFERENCE, POINTER),
    F("reportingComponent", STR, ALWAYS),
    F("reportingInstance", STR, ALWAYS),
)
EVENTS_V1_EVENT = struct(
    "Event",
    *META_TOP,
    METADATA,
    F("eventTime", MICRO, ALWAYS),
    F(
        "series",
        struct("EventSeries", F("count", I32, ALWAYS), F("lastObservedTime", MICRO, ALWAYS)),
        POINTER,
    ),
    F("reportingController", STR),
    F("reportingInstance", STR),
    F("action", STR),
    F("reason", STR),
    F("regarding", OBJECT_REFERENCE, ALWAYS),
    F("related", OBJECT_REFERENCE, POINTER),
    F("note", STR),
    F("type", STR),
    F("deprecatedSource", EVENT_SOURCE, ALWAYS),
    F("deprecatedFirstTimestamp", TIME, ALWAYS),
    F("deprecatedLastTimestamp", TIME, ALWAYS),
    F("deprecatedCount", I32),
)
LEASE = struct(
    "Lease",
    *META_TOP,
    METADATA,
    F(
        "spec",
        struct(
            "LeaseSpec",
            F("holderIdentity", STR, POINTER),
            F("leaseDurationSeconds", I32, POINTER),
            F("acquireTime", MICRO, POINTER),
            F("renewTime", MICRO, POINTER),
            F("leaseTransitions", I32, POINTER),
            F("strategy", STR, POINTER),
            F("preferredHolder", STR, POINTER),
        ),
        ALWAYS,
    ),
)
TAINT = struct(
    "Taint", F("key", STR, ALWAYS), F("value", STR), F("effect", STR, ALWAYS), F("timeAdded", TIME, POINTER)
)
NODE = struct(
    "Node",
    *META_TOP,
    METADATA,
    F(
        "spec",
        struct(
            "NodeSpec",
            F("podCIDR", STR),
            F("podCIDRs", ListOf(STR, "set")),
            F("providerID", STR),
            F("unschedulable", BOOL),
            F("taints", ListOf(TAINT)),
            F("configSource", ANY, POINTER),
            F("externalID", STR),
        ),
        ALWAYS,
    ),
    F(
        "status",
        struct(
            "NodeStatus",
            F("capacity", MapOf(Quantity())),
            F("allocatable", MapOf(Quantity())),
            F("phase", STR),
            F("conditions", _conditions("NodeCondition", heartbeat=True)),
            F(
                "addresses",
                ListOf(
                    struct("NodeAddress", F("type", STR, ALWAYS), F("address", STR, ALWAYS)), merge_key="type"
                ),
            ),
            F(
                "daemonEndpoints",
                struct(
                    "NodeDaemonEndpoints",
                    F("kubeletEndpoint", struct("DaemonEndpoint", F("Port", I32, ALWAYS)), ALWAYS),
                ),
                ALWAYS,
            ),
            F(
                "nodeInfo",
                struct(
                    "NodeSystemInfo",
                    *(
                        F(name, STR, ALWAYS)
                        for name in (
                            "machineID",
                            "systemUUID",
                            "bootID",
                            "kernelVersion",
                            "osImage",
                            "containerRuntimeVersion",
                            "kubeletVersion",
                            "kubeProxyVersion",
                            "operatingSystem",
                            "architecture",
                        )
                    ),
                    F("swap", ANY, POINTER),
                ),
                ALWAYS,
            ),
            F("images", ListOf(struct("ContainerImage", F("names", STR_LIST), F("sizeBytes", I64)))),
            F("volumesInUse", STR_LIST),
            F("volumesAttached", ListOf(ANY)),
            F("config", ANY, POINTER),
            F("runtimeHandlers", ListOf(ANY)),
            F("features", ANY, POINTER),
        ),
        ALWAYS,
    ),
)
CONTAINER = struct(
    "Container",
    F("name", STR, ALWAYS),
    F("image", STR),
    F("command", STR_LIST),
    F("args", STR_LIST),
    F("workingDir", STR),
    F(
        "ports",
        ListOf(
            struct(
                "ContainerPort",
                F("name", STR),
                F("hostPort", I32),
                F("containerPort", I32, ALWAYS),
                F("protocol", STR),
                F("hostIP", STR),
            ),
            "map",
            ("containerPort", "protocol"),
            merge_key="containerPort",
        ),
    ),
    F("envFrom", ListOf(ANY)),
    F(
        "env",
        ListOf(
            struct("EnvVar", F("name", STR, ALWAYS), F("value", STR), F("valueFrom", ANY, POINTER)),
            "map",
            ("name",),
            merge_key="name",
        ),
    ),
    F(
        "resources",
        struct(
            "ResourceRequirements",
            F("limits", MapOf(Quantity())),
            F("requests", MapOf(Quantity())),
            F("claims", ListOf(ANY)),
        ),
        ALWAYS,
    ),
    F("resizePolicy", ListOf(ANY)),
    F("restartPolicy", STR, POINTER),
    F("volumeMounts", ListOf(ANY, merge_key="mountPath")),
    F("volumeDevices", ListOf(ANY, merge_key="devicePath")),
    F("livenessProbe", ANY, POINTER),
    F("readinessProbe", ANY, POINTER),
    F("startupProbe", ANY, POINTER),
    F("lifecycle", ANY, POINTER),
    F("terminationMessagePath", STR),
    F("terminationMessagePolicy", STR),
    F("imagePullPolicy", STR),
    F("securityContext", ANY, POINTER),
    F("stdin", BOOL),
    F("stdinOnce", BOOL),
    F("tty", BOOL),
    open=True,
)
TOLERATION = struct(
    "Toleration",
    F("key", STR),
    F("operator", STR),
    F("value", STR),
    F("effect", STR),
    F("tolerationSeconds", I64, POINTER),
)
_CONTAINERS = ListOf(CONTAINER, "map", ("name",), merge_key="name")
POD = struct(
    "Pod",
    *META_TOP,
    METADATA,
    F(
        "spec",
        struct(
            "PodSpec",
            F("volumes", ListOf(ANY, "map", ("name",), merge_key="name")),
            F("initContainers", _CONTAINERS),
            F("containers", _CONTAINERS),
            F("ephemeralContainers", ListOf(ANY, "map", ("name",), merge_key="name")),
            F("restartPolicy", STR),
            F("terminationGracePeriodSeconds", I64, POINTER),
            F("activeDeadlineSeconds", I64, POINTER),
            F("dnsPolicy", STR),
            F("nodeSelector", STR_MAP),
            F("serviceAccountName", STR),
            F("serviceAccount", STR),
            F("automountServiceAccountToken", BOOL, POINTER),
            F("nodeName", STR),
            F("hostNetwork", BOOL),
            F("hostPID", BOOL),
            F("hostIPC", BOOL),
            F("shareProcessNamespace", BOOL, POINTER),
            F("securityContext", ANY, POINTER),
            F("imagePullSecrets", ListOf(LOCAL_OBJECT_REFERENCE, merge_key="name")),
            F("hostname", STR),
            F("subdomain", STR),
            F("affinity", ANY, POINTER),
            F("schedulerName", STR),
            F("tolerations", ListOf(TOLERATION)),
            F("hostAliases", ListOf(ANY, merge_key="ip")),
            F("priorityClassName", STR),
            F("priority", I32, POINTER),
            F("dnsConfig", ANY, POINTER),
            F("readinessGates", ListOf(ANY)),
            F("runtimeClassName", STR, POINTER),
            F("enableServiceLinks", BOOL, POINTER),
            F("preemptionPolicy", STR, POINTER),
            F("overhead", MapOf(Quantity())),
            F("topologySpreadConstraints", ListOf(ANY)),
            F("setHostnameAsFQDN", BOOL, POINTER),
            F("os", ANY, POINTER),
            F("hostUsers", BOOL, POINTER),
            F("schedulingGates", ListOf(ANY)),
            F("resourceClaims", ListOf(ANY)),
            F("resources", ANY, POINTER),
            open=True,
        ),
        ALWAYS,
    ),
    F(
        "status",
        struct(
            "PodStatus",
            F("phase", STR),
            F("conditions", ListOf(ANY, "map", ("type",), merge_key="type")),
            F("message", STR),
            F("reason", STR),
            F("nominatedNodeName", STR),
            F("hostIP", STR),
            F("hostIPs", ListOf(ANY)),
            F("podIP", STR),
            F("podIPs", ListOf(ANY, merge_key="ip")),
            F("startTime", TIME, POINTER),
            F("initContainerStatuses", ListOf(ANY)),
            F("containerStatuses", ListOf(ANY)),
            F("qosClass", STR),
            F("ephemeralContainerStatuses", ListOf(ANY)),
            F("resize", STR),
            F("resourceClaimStatuses", ListOf(ANY)),
            open=True,
        ),
        ALWAYS,
    ),
)
SERVICE_PORT = struct(
    "ServicePort",
    F("name", STR),
    F("protocol", STR),
    F("appProtocol", STR, POINTER),
    F("port", I32, ALWAYS),
    F("targetPort", IntOrString()),
    F("nodePort", I32),
)
SERVICE = struct(
    "Service",
    *META_TOP,
    METADATA,
    F(
        "spec",
        struct(
            "ServiceSpec",
            F("ports", ListOf(SERVICE_PORT, "map", ("port", "protocol"), merge_key="port")),
            F("selector", STR_MAP),
            F("clusterIP", STR),
            F("clusterIPs", STR_LIST),
            F("type", STR),
            F("externalIPs", STR_LIST),
            F("sessionAffinity", STR),
            F("loadBalancerIP", STR),
            F("loadBalancerSourceRanges", STR_LIST),
            F("externalName", STR),
            F("externalTrafficPolicy", STR),
            F("healthCheckNodePort", I32),
            F("publishNotReadyAddresses", BOOL),
            F("sessionAffinityConfig", ANY, POINTER),
            F("ipFamilies", STR_LIST),
            F("ipFamilyPolicy", STR, POINTER),
            F("allocateLoadBalancerNodePorts", BOOL, POINTER),
            F("loadBalancerClass", STR, POINTER),
            F("internalTrafficPolicy", STR, POINTER),
            F("trafficDistribution", STR, POINTER),
        ),
        ALWAYS,
    ),
    F(
        "status",
        struct(
            "ServiceStatus",
            F("loadBalancer", struct("LoadBalancerStatus", F("ingress", ListOf(ANY))), ALWAYS),
            F("conditions", ListOf(CONDITION, "map", ("type",), merge_key="type")),
        ),
        ALWAYS,
    ),
)
POD_DISRUPTION_BUDGET = struct(
    "PodDisruptionBudget",
    *META_TOP,
    METADATA,
    F(
        "spec",
        struct(
            "PodDisruptionBudgetSpec",
            F("minAvailable", IntOrString(), POINTER),
            F("selector", LABEL_SELECTOR, POINTER),
            F("maxUnavailable", IntOrString(), POINTER),
            F("unhealthyPodEvictionPolicy", STR, POINTER),
        ),
        ALWAYS,
    ),
    F(
        "status",
        struct(
            "PodDisruptionBudgetStatus",
            F("observedGeneration", I64),
            F("disruptedPods", MapOf(TIME)),
            F("disruptionsAllowed", I32, ALWAYS),
            F("currentHealthy", I32, ALWAYS),
            F("desiredHealthy", I32, ALWAYS),
            F("expectedPods", I32, ALWAYS),
            F("conditions", ListOf(CONDITION, "map", ("type",), merge_key="type")),
        ),
        ALWAYS,
    ),
)
CLIENT_CONFIG = struct(
    "WebhookClientConfig",
    F("url", STR, POINTER),
    F(
        "service",
        struct(
            "ServiceReference",
            F("namespace", STR, ALWAYS),
            F("name", STR, ALWAYS),
            F("path", STR, POINTER),
            F("port", I32, POINTER),
        ),
        POINTER,
    ),
    F("caBundle", STR),
)
RULE_WITH_OPERATIONS = struct(
    "RuleWithOperations",
    F("operations", STR_LIST),
    F("apiGroups", STR_LIST),
    F("apiVersions", STR_LIST),
    F("resources", STR_LIST),
    F("scope", STR, POINTER),
)
MATCH_CONDITIONS = ListOf(
    struct("MatchCondition", F("name", STR, ALWAYS), F("expression", STR, ALWAYS)),
    "map",
    ("name",),
    merge_key="name",
)


def _webhook(go_name: str, *, mutating: bool) -> Struct:
    fields = [
        F("name", STR, ALWAYS),
        F("clientConfig", CLIENT_CONFIG, ALWAYS),
        F("rules", ListOf(RULE_WITH_OPERATIONS)),
        F("failurePolicy", STR, POINTER),
        F("matchPolicy", STR, POINTER),
        F("namespaceSelector", LABEL_SELECTOR, POINTER),
        F("objectSelector", LABEL_SELECTOR, POINTER),
        F("sideEffects", STR, POINTER),
        F("timeoutSeconds", I32, POINTER),
        F("admissionReviewVersions", STR_LIST),
    ]
    if mutating:
        fields.append(F("reinvocationPolicy", STR, POINTER))
    fields.append(F("matchConditions", MATCH_CONDITIONS))
    return struct(go_name, *fields)


VALIDATING_WEBHOOK_CONFIGURATION = struct(
    "ValidatingWebhookConfiguration",
    *META_TOP,
    METADATA,
    F("webhooks", ListOf(_webhook("ValidatingWebhook", mutating=False), "map", ("name",), merge_key="name")),
)
MUTATING_WEBHOOK_CONFIGURATION = struct(
    "MutatingWebhookConfiguration",
    *META_TOP,
    METADATA,
    F("webhooks", ListOf(_webhook("MutatingWebhook", mutating=True), "map", ("name",), merge_key="name")),
)
CRD_NAMES = struct(
    "CustomResourceDefinitionNames",
    F("plural", STR, ALWAYS),
    F("singular", STR),
    F("shortNames", STR_LIST),
    F("kind", STR, ALWAYS),
    F("listKind", STR),
    F("categories", STR_LIST),
)
CUSTOM_RESOURCE_DEFINITION = struct(
    "CustomResourceDefinition",
    *META_TOP,
    METADATA,
    F(
        "spec",
        struct(
            "CustomResourceDefinitionSpec",
            F("group", STR, ALWAYS),
            F("names", CRD_NAMES, ALWAYS),
            F("scope", STR, ALWAYS),
            F(
                "versions",
                ListOf(
                    struct(
                        "CustomResourceDefinitionVersion",
                        F("name", STR, ALWAYS),
                        F("served", BOOL, ALWAYS),
                        F("storage", BOOL, ALWAYS),
                        F("deprecated", BOOL),
                        F("deprecationWarning", STR, POINTER),
                        F(
                            "schema",
                            struct("CustomResourceValidation", F("openAPIV3Schema", ANY, POINTER)),
                            POINTER,
                        ),
                        F(
                            "subresources",
                            struct(
                                "CustomResourceSubresources",
                                F("status", ANY, POINTER),
                                F(
                                    "scale",
                                    struct(
                                        "CustomResourceSubresourceScale",
                                        F("specReplicasPath", STR, ALWAYS),
                                        F("statusReplicasPath", STR, ALWAYS),
                                        F("labelSelectorPath", STR, POINTER),
                                    ),
                                    POINTER,
                                ),
                            ),
                            POINTER,
                        ),
                        F(
                            "additionalPrinterColumns",
                            ListOf(
                                struct(
                                    "CustomResourceColumnDefinition",
                                    F("name", STR, ALWAYS),
                                    F("type", STR, ALWAYS),
                                    F("format", STR),
                                    F("description", STR),
                                    F("priority", I32),
                                    F("jsonPath", STR, ALWAYS),
                                )
                            ),
                        ),
                        F("selectableFields", ListOf(struct("SelectableField", F("jsonPath", STR, ALWAYS)))),
                    )
                ),
            ),
            F(
                "conversion",
                struct("CustomResourceConversion", F("strategy", STR, ALWAYS), F("webhook", ANY, POINTER)),
                POINTER,
            ),
            F("preserveUnknownFields", BOOL),
        ),
        ALWAYS,
    ),
    F(
        "status",
        struct(
            "CustomResourceDefinitionStatus",
            F("conditions", _conditions("CustomResourceDefinitionCondition"), ALWAYS),
            F("acceptedNames", CRD_NAMES, ALWAYS),
            F("storedVersions", STR_LIST, ALWAYS),
        ),
        ALWAYS,
    ),
)
SELF_SUBJECT_REVIEW = struct(
    "SelfSubjectReview",
    *META_TOP,
    METADATA,
    F(
        "status",
        struct(
            "SelfSubjectReviewStatus",
            F(
                "userInfo",
                struct(
                    "UserInfo",
                    F("username", STR),
                    F("uid", STR),
                    F("groups", STR_LIST),
                    F("extra", MapOf(STR_LIST)),
                ),
                ALWAYS,
            ),
        ),
        ALWAYS,
    ),
)
SCALE = struct(
    "Scale",
    *META_TOP,
    METADATA,
    F("spec", struct("ScaleSpec", F("replicas", I32)), ALWAYS),
    F("status", struct("ScaleStatus", F("replicas", I32, ALWAYS), F("selector", STR)), ALWAYS),
)

# The key order of a JSONSchemaProps (CRD schemas are written back in this order).
JSON_SCHEMA_KEY_ORDER = (
    "id",
    "$schema",
    "$ref",
    "description",
    "type",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
    "externalDocs",
    "example",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
)


def order_json_schema(schema: Any) -> Any:
    """A CRD schema with its keys in JSONSchemaProps order and property maps sorted by name."""
    if not isinstance(schema, dict):
        return schema
    out: JSON = {}
    for key in [k for k in JSON_SCHEMA_KEY_ORDER if k in schema] + [
        k for k in schema if k not in JSON_SCHEMA_KEY_ORDER
    ]:
        value = schema[key]
        if key in ("properties", "patternProperties", "definitions", "dependencies") and isinstance(
            value, dict
        ):
            value = {k: order_json_schema(value[k]) for k in sorted(value)}
        elif key in ("items", "not", "additionalProperties", "additionalItems"):
            value = (
                [order_json_schema(v) for v in value] if isinstance(value, list) else order_json_schema(value)
            )
        elif key in ("allOf", "oneOf", "anyOf") and isinstance(value, list):
            value = [order_json_schema(v) for v in value]
        out[key] = value
    return out


# ------------------------------------------------------------------------------ validation

from .errors import (  # noqa: E402
    FieldError,
    Qualified,
    StatusError,
    aggregate_message,
    forbidden,
    invalid,
    not_supported,
    required,
)
from .objectmeta import (  # noqa: E402
    dns1035_label_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    qualified_name_errors,
    regex_error,
)
from .registry import ResourceType  # noqa: E402


def _meta(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _spec(obj: JSON, key: str = "spec") -> JSON:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _immutable(new: Any, old: Any, path: str) -> list[FieldError]:
    return [] if new == old else [invalid(path, new, "field is immutable")]


_STANDARD_FINALIZERS = {"kubernetes", "orphan", "foregroundDeletion"}


def _validate_namespace(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    for finalizer in _spec(new).get("finalizers") or []:
        errs.extend(invalid("spec.finalizers", finalizer, m) for m in qualified_name_errors(str(finalizer)))
        if "/" not in str(finalizer) and finalizer not in _STANDARD_FINALIZERS:
            errs.append(
                invalid(
                    "spec.finalizers",
                    finalizer,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )
    return errs


_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"


def _config_key_errors(key: str) -> list[str]:
    errs: list[str] = []
    if len(key) > DNS1123_SUBDOMAIN_MAX_LEN:
        errs.append(f"must be no more than {DNS1123_SUBDOMAIN_MAX_LEN} characters")
    if not re.fullmatch(_CONFIG_KEY_FMT, key):
        errs.append(
            regex_error(
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                _CONFIG_KEY_FMT,
                "key.name",
                "KEY_NAME",
                "key-name",
            )
        )
    if key in (".", ".."):
        errs.append(f"must not be '{key}'")
    elif key.startswith(".."):
        errs.append("must not start with '..'")
    return errs


DNS1123_SUBDOMAIN_MAX_LEN = 253


def _validate_data_keys(obj: JSON, fields: Sequence[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for name in fields:
        for key in obj.get(name) or {}:
            problems = _config_key_errors(key)
            if problems:
                errs.append(invalid(f"{name}[{key}]", key, ";".join(problems)))
            if key in seen:
                errs.append(invalid(f"{name}[{key}]", key, "duplicate of key present in data"))
            seen.add(key)
    return errs


def _validate_immutable_data(new: JSON, old: JSON | None, fields: Sequence[str]) -> list[FieldError]:
    if old is None or old.get("immutable") is not True:
        return []
    errs: list[FieldError] = []
    if new.get("immutable") is not True:
        errs.append(forbidden("immutable", "field is immutable when `immutable` is set"))
    for name in fields:
        if (new.get(name) or {}) != (old.get(name) or {}):
            errs.append(forbidden(name, "field is immutable when `immutable` is set"))
    return errs


def _validate_config_map(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    errs.extend(_validate_data_keys(new, ("data", "binaryData")))
    errs.extend(_validate_immutable_data(new, old, ("data", "binaryData")))
    return errs


def _validate_secret(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    errs.extend(_validate_data_keys(new, ("data",)))
    if old is not None:
        errs.extend(_immutable(new.get("type"), old.get("type"), "type"))
    errs.extend(_validate_immutable_data(new, old, ("data",)))
    return errs


def _validate_lease(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _spec(new)
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        errs.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        errs.append(invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    return errs


# Limits of the events.k8s.io rules (characters).
_REPORTING_INSTANCE_LIMIT = 128
_ACTION_LIMIT = 128
_REASON_LIMIT = 128
_NOTE_LIMIT = 1024


def _legacy_event_errors(event: JSON, *, core_request: bool) -> list[FieldError]:
    """Rules every Event passes, phrased with core/v1 field names whatever the request's group."""
    errs: list[FieldError] = []
    namespace = _meta(event).get("namespace") or ""
    involved = _spec(event, "involvedObject")
    involved_ns = involved.get("namespace") or ""
    controller_field = "reportingComponent" if core_request else "reportingController"
    if not event.get("eventTime"):
        if not involved_ns:
            if namespace not in ("", "default"):
                errs.append(
                    invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
                )
        elif namespace != involved_ns:
            errs.append(invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            errs.append(invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
        controller = event.get("reportingComponent") or ""
        if not controller:
            errs.append(required(controller_field))
        errs.extend(invalid(controller_field, controller, m) for m in qualified_name_errors(controller))
        instance = event.get("reportingInstance") or ""
        if not instance:
            errs.append(required("reportingInstance"))
        if len(instance) > _REPORTING_INSTANCE_LIMIT:
            errs.append(
                invalid("reportingInstance", "", f"can have at most {_REPORTING_INSTANCE_LIMIT} characters")
            )
        action = event.get("action") or ""
        if not action:
            errs.append(required("action"))
        if len(action) > _ACTION_LIMIT:
            errs.append(invalid("action", "", f"can have at most {_ACTION_LIMIT} characters"))
        reason = event.get("reason") or ""
        if not reason:
            errs.append(required("reason"))
        if len(reason) > _REASON_LIMIT:
            errs.append(invalid("reason", "", f"can have at most {_REASON_LIMIT} characters"))
        if len(event.get("message") or "") > _NOTE_LIMIT:
            errs.append(invalid("message", "", f"can have at most {_NOTE_LIMIT} characters"))
    errs.extend(invalid("namespace", namespace, m) for m in dns1123_subdomain_errors(namespace))
    return errs


def _event_series_errors(event: JSON) -> list[FieldError]:
    series = event.get("series")
    if not isinstance(series, dict):
        return []
    errs: list[FieldError] = []
    if (series.get("count") or 0) < 2:
        errs.append(invalid("series.count", "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        errs.append(required("series.lastObservedTime"))
    return errs


def _validate_core_event(new: JSON, old: JSON | None) -> list[FieldError]:
    # core/v1 keeps the old lax rules for compatibility: no metadata or immutability checks
    return _legacy_event_errors(new, core_request=True)


def _validate_events_v1_event(new: JSON, old: JSON | None) -> list[FieldError]:
    event = _core_event_shape(new)
    errs = _legacy_event_errors(event, core_request=False)
    if old is None:
        errs.extend(_event_series_errors(event))
        if not event.get("eventTime"):
            errs.append(required("eventTime"))
        event_type = event.get("type") or ""
        if event_type not in ("Normal", "Warning"):
            errs.append(invalid("type", "", f"has invalid value: {event_type}"))
        if event.get("firstTimestamp"):
            errs.append(invalid("deprecatedFirstTimestamp", "", "needs to be unset"))
        if event.get("lastTimestamp"):
            errs.append(invalid("deprecatedLastTimestamp", "", "needs to be unset"))
        if event.get("count"):
            errs.append(invalid("deprecatedCount", "", "needs to be unset"))
        source = _spec(event, "source")
        if source.get("component") or source.get("host"):
            errs.append(invalid("deprecatedSource", "", "needs to be unset"))
        return errs
    before = _core_event_shape(old)
    if event.get("series") != before.get("series"):
        errs.extend(_event_series_errors(event))
    # the real server checks reason twice, so its cause appears twice
    for name in (
        "involvedObject",
        "reason",
        "message",
        "source",
        "firstTimestamp",
        "lastTimestamp",
        "count",
        "reason",
        "type",
        "eventTime",
        "action",
        "related",
        "reportingComponent",
        "reportingInstance",
    ):
        label = "reportingController" if name == "reportingComponent" else name
        errs.extend(_immutable(event.get(name), before.get(name), label))
    return errs


_TAINT_EFFECTS = ["NoExecute", "NoSchedule", "PreferNoSchedule"]


def _validate_node(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, taint in enumerate(_spec(new).get("taints") or []):
        path = f"spec.taints[{i}]"
        errs.extend(
            invalid(f"{path}.key", taint.get("key", ""), m)
            for m in qualified_name_errors(taint.get("key", ""))
        )
        effect = taint.get("effect", "")
        if not effect:
            errs.append(required(f"{path}.effect"))
        elif effect not in _TAINT_EFFECTS:
            errs.append(not_supported(f"{path}.effect", effect, list(_TAINT_EFFECTS)))
    if old is not None:
        old_cidr = _spec(old).get("podCIDR") or ""
        new_cidr = _spec(new).get("podCIDR") or ""
        if old_cidr and new_cidr != old_cidr:
            errs.append(
                forbidden("spec.podCIDR", 'node updates may not change podCIDR except from "" to valid')
            )
        old_provider = _spec(old).get("providerID") or ""
        if old_provider and (_spec(new).get("providerID") or "") != old_provider:
            errs.append(
                forbidden("spec.providerID", 'node updates may not change providerID except from "" to valid')
            )
    return errs


def _validate_pod(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _spec(new)
    containers = spec.get("containers") or []
    if not containers:
        errs.append(required("spec.containers"))
    names: set[str] = set()
    for group in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(group) or []):
            path = f"spec.{group}[{i}]"
            name = container.get("name") or ""
            if not name:
                errs.append(required(f"{path}.name"))
            else:
                errs.extend(invalid(f"{path}.name", name, m) for m in dns1123_label_errors(name))
                if name in names:
                    errs.append(FieldError("Duplicate", f"{path}.name", name))
                names.add(name)
            if not container.get("image") and old is None:
                errs.append(required(f"{path}.image"))
    if old is not None:
        errs.extend(_pod_update_errors(spec, _spec(old)))
    return errs


_POD_MUTABLE_MESSAGE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)


def _pod_update_errors(new_spec: JSON, old_spec: JSON) -> list[FieldError]:
    def comparable(spec: JSON) -> JSON:
        out = {
            k: v
            for k, v in spec.items()
            if k not in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds")
        }
        for group in ("containers", "initContainers"):
            if isinstance(out.get(group), list):
                out[group] = [{k: v for k, v in c.items() if k != "image"} for c in out[group]]
        return out

    if comparable(new_spec) != comparable(old_spec):
        return [forbidden("spec", _POD_MUTABLE_MESSAGE)]
    return []


_SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]


def _validate_service(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _spec(new)
    service_type = spec.get("type") or "ClusterIP"
    if service_type not in _SERVICE_TYPES:
        errs.append(not_supported("spec.type", service_type, list(_SERVICE_TYPES)))
    ports = spec.get("ports") or []
    if not ports and service_type != "ExternalName" and spec.get("clusterIP") != "None":
        errs.append(required("spec.ports"))
    for i, port in enumerate(ports):
        number = port.get("port", 0)
        if not isinstance(number, int) or not 1 <= number <= 65535:
            errs.append(invalid(f"spec.ports[{i}].port", number, "must be between 1 and 65535, inclusive"))
        if len(ports) > 1 and not port.get("name"):
            errs.append(required(f"spec.ports[{i}].name"))
    if old is not None:
        old_ip = _spec(old).get("clusterIP") or ""
        if old_ip and spec.get("clusterIP", old_ip) != old_ip:
            errs.append(invalid("spec.clusterIPs[0]", spec.get("clusterIP"), "may not change once set"))
    return errs


def _validate_pdb(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _spec(new)
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        errs.append(invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set"))
    for name in ("minAvailable", "maxUnavailable"):
        value = spec.get(name)
        if isinstance(value, int) and value < 0:
            errs.append(invalid(f"spec.{name}", value, "must be greater than or equal to 0"))
        if isinstance(value, str):
            match = re.fullmatch(r"(\d+)%", value)
            if not match:
                errs.append(
                    invalid(
                        f"spec.{name}",
                        value,
                        "a valid percent string must be a numeric string followed by an ending '%' "
                        "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                    )
                )
            elif int(match.group(1)) > 100:
                errs.append(invalid(f"spec.{name}", value, "must not be greater than 100%"))
    return errs


_OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]
_FAILURE_POLICIES = ["Fail", "Ignore"]
_MATCH_POLICIES = ["Equivalent", "Exact"]
_SIDE_EFFECTS = ["None", "NoneOnDryRun"]
_SCOPES = ["*", "Cluster", "Namespaced"]
_REINVOCATION = ["IfNeeded", "Never"]


def _webhook_url_errors(path: str, url: str) -> list[FieldError]:
    from urllib.parse import urlsplit

    form = "; desired format: https://host[/path]"
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return [required(path, f"url must be a valid URL: {exc}{form}")]
    errs: list[FieldError] = []
    if parts.scheme != "https":
        errs.append(invalid(path, parts.scheme, "'https' is the only allowed URL scheme" + form))
    if not parts.netloc:
        errs.append(invalid(path, parts.netloc, "host must be specified" + form))
    if "@" in parts.netloc:
        errs.append(invalid(path, parts.netloc.split("@")[0], "user information is not permitted in the URL"))
    if parts.fragment:
        errs.append(invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        errs.append(invalid(path, parts.query, "query parameters are not permitted in the URL"))
    return errs


def _rule_errors(rule: JSON, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    operations = rule.get("operations") or []
    if not operations:
        errs.append(required(f"{path}.operations"))
    if len(operations) > 1 and "*" in operations:
        errs.append(
            invalid(f"{path}.operations", operations, "if '*' is present, must not specify other operations")
        )
    for i, op in enumerate(operations):
        if op not in _OPERATIONS:
            errs.append(not_supported(f"{path}.operations[{i}]", op, _OPERATIONS))
    for name, what in (("apiGroups", "API groups"), ("apiVersions", "API versions")):
        values = rule.get(name) or []
        if not values:
            errs.append(required(f"{path}.{name}"))
        if len(values) > 1 and "*" in values:
            errs.append(
                invalid(f"{path}.{name}", values, f"if '*' is present, must not specify other {what}")
            )
    resources = rule.get("resources") or []
    if not resources:
        errs.append(required(f"{path}.resources"))
    for i, resource in enumerate(resources):
        if resource == "":
            errs.append(required(f"{path}.resources[{i}]"))
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errs.append(not_supported(f"{path}.scope", scope, _SCOPES))
    return errs


def _webhook_errors(hook: JSON, path: str, *, mutating: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    name = hook.get("name") or ""
    if not name:
        errs.append(required(f"{path}.name"))
    else:
        problems = dns1123_subdomain_errors(name)
        if problems:
            errs.append(invalid(f"{path}.name", name, ",".join(problems)))
        elif len(name.split(".")) < 3:
            errs.append(
                invalid(
                    f"{path}.name", name, "should be a domain with at least three segments separated by dots"
                )
            )
    for i, rule in enumerate(hook.get("rules") or []):
        errs.extend(_rule_errors(rule, f"{path}.rules[{i}]"))
    for key, allowed in (("failurePolicy", _FAILURE_POLICIES), ("matchPolicy", _MATCH_POLICIES)):
        if hook.get(key) is not None and hook[key] not in allowed:
            errs.append(not_supported(f"{path}.{key}", hook[key], allowed))
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        errs.append(required(f"{path}.sideEffects", "must specify one of None, NoneOnDryRun"))
    elif side_effects not in _SIDE_EFFECTS:
        errs.append(not_supported(f"{path}.sideEffects", side_effects, _SIDE_EFFECTS))
    timeout = hook.get("timeoutSeconds")
    if isinstance(timeout, int) and not 1 <= timeout <= 30:
        errs.append(
            invalid(f"{path}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 seconds")
        )
    if (
        mutating
        and hook.get("reinvocationPolicy") is not None
        and hook["reinvocationPolicy"] not in _REINVOCATION
    ):
        errs.append(not_supported(f"{path}.reinvocationPolicy", hook["reinvocationPolicy"], _REINVOCATION))
    config: JSON = hook["clientConfig"] if isinstance(hook.get("clientConfig"), dict) else {}
    url = config.get("url")
    service: JSON = config["service"] if isinstance(config.get("service"), dict) else {}
    if config.get("service") is None:
        service = {}
    if (url is None) == (config.get("service") is None):
        errs.append(required(f"{path}.clientConfig", "exactly one of url or service is required"))
    elif url is not None:
        errs.extend(_webhook_url_errors(f"{path}.clientConfig.url", url))
    else:
        if not service.get("name"):
            errs.append(required(f"{path}.clientConfig.service.name", "service name is required"))
        if not service.get("namespace"):
            errs.append(required(f"{path}.clientConfig.service.namespace", "service namespace is required"))
    return errs


def _review_version_errors(versions: Sequence[str], path: str) -> list[FieldError]:
    if not versions:
        return [required(path, "must specify one of v1, v1beta1")]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        if version in seen:
            errs.append(invalid(f"{path}[{i}]", version, "duplicate version"))
            continue
        seen.add(version)
        errs.extend(invalid(f"{path}[{i}]", version, m) for m in dns1035_label_errors(version))
    if not any(v in ("v1", "v1beta1") for v in versions):
        errs.append(invalid(path, list(versions), "must include at least one of v1, v1beta1"))
    return errs


def _webhook_configuration_validator(*, mutating: bool):  # type: ignore[no-untyped-def]
    def check(new: JSON, old: JSON | None) -> list[FieldError]:
        errs = []
        names: set[str] = set()
        for i, hook in enumerate(new.get("webhooks") or []):
            path = f"webhooks[{i}]"
            errs.extend(_webhook_errors(hook, path, mutating=mutating))
            errs.extend(
                _review_version_errors(
                    hook.get("admissionReviewVersions") or [], f"{path}.admissionReviewVersions"
                )
            )
            name = hook.get("name") or ""
            if name:
                if name in names:
                    errs.append(FieldError("Duplicate", f"{path}.name", name))
                names.add(name)
        return errs

    return check


def _validate_crd(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _spec(new)
    names = _spec(spec, "names")
    group = spec.get("group") or ""
    plural = names.get("plural") or ""
    name = _meta(new).get("name") or ""
    if name != f"{plural}.{group}":
        errs.append(invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not group:
        errs.append(required("spec.group"))
    elif len(group.split(".")) < 2:
        errs.append(invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = spec.get("scope") or ""
    if scope not in ("Cluster", "Namespaced"):
        errs.append(not_supported("spec.scope", scope, ["Cluster", "Namespaced"]))
    if not plural:
        errs.append(required("spec.names.plural"))
    if not names.get("kind"):
        errs.append(required("spec.names.kind"))
    versions = spec.get("versions") or []
    if not versions or sum(1 for v in versions if v.get("storage")) != 1:
        errs.append(
            invalid("spec.versions", versions, "must have exactly one version marked as storage version")
        )
    if old is not None:
        errs.extend(_immutable(spec.get("group"), _spec(old).get("group"), "spec.group"))
        old_scope = _spec(old).get("scope")
        if scope != old_scope:
            errs.append(invalid("spec.scope", scope, "field is immutable"))
    return errs


# ----------------------------------------------------------------------------- defaulting
# ``ResourceType.default`` holds what the real server does while decoding (scheme defaults):
# those fields are attributed to the writer in managedFields. What a type's strategy or an
# admission plugin sets later (namespace phase, pod QoS class, service cluster IP) lives in
# :func:`prepare_for_create` / :func:`prepare_for_update`, which the handler runs after the
# managedFields bookkeeping.


def _default_namespace(obj: JSON) -> None:
    name = _meta(obj).get("name")
    if name:
        obj.setdefault("metadata", {}).setdefault("labels", {})["kubernetes.io/metadata.name"] = name


def _default_secret(obj: JSON) -> None:
    if not obj.get("type"):
        obj["type"] = "Opaque"
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


def _image_pull_policy(image: str) -> str:
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    tag = last.split(":", 1)[1] if ":" in last else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _default_pod(obj: JSON) -> None:
    spec = obj.setdefault("spec", {})
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            container.setdefault("resources", {})
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            if container.get("image"):
                container.setdefault("imagePullPolicy", _image_pull_policy(container["image"]))
            for port in container.get("ports") or []:
                port.setdefault("protocol", "TCP")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)


def _default_service(obj: JSON) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] in ("ClusterIP", "NodePort", "LoadBalancer"):
        spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        port.setdefault("targetPort", port.get("port"))


def _default_node(obj: JSON) -> None:
    status = obj.get("status")
    if isinstance(status, dict) and status.get("capacity") and not status.get("allocatable"):
        status["allocatable"] = dict(status["capacity"])


def _default_webhooks(mutating: bool) -> Callable[[JSON], None]:
    def default(obj: JSON) -> None:
        for hook in obj.get("webhooks") or []:
            for rule in hook.get("rules") or []:
                rule.setdefault("scope", "*")
            hook.setdefault("failurePolicy", "Fail")
            hook.setdefault("matchPolicy", "Equivalent")
            hook.setdefault("namespaceSelector", {})
            hook.setdefault("objectSelector", {})
            hook.setdefault("timeoutSeconds", 10)
            if mutating:
                hook.setdefault("reinvocationPolicy", "Never")
            service = (hook.get("clientConfig") or {}).get("service")
            if isinstance(service, dict):
                service.setdefault("port", 443)

    return default


def _default_crd(obj: JSON) -> None:
    spec = obj.setdefault("spec", {})
    names = spec.setdefault("names", {})
    kind = names.get("kind") or ""
    if not names.get("singular") and kind:
        names["singular"] = kind.lower()
    if not names.get("listKind") and kind:
        names["listKind"] = kind + "List"
    conversion = spec.get("conversion")
    if not isinstance(conversion, dict):
        spec["conversion"] = {"strategy": "None"}
    elif not conversion.get("strategy"):
        conversion["strategy"] = "None"
    for version in spec.get("versions") or []:
        scale = ((version.get("subresources") or {}).get("scale")) if isinstance(version, dict) else None
        del scale  # nothing to default in v1


_NEXT_CLUSTER_IP = [1]


def _allocate_cluster_ip() -> str:
    # 10.0.0.1 is the kubernetes service; allocate sequentially after it
    _NEXT_CLUSTER_IP[0] += 1
    n = _NEXT_CLUSTER_IP[0]
    return f"10.0.{n // 254}.{n % 254 + 1}" if n >= 254 else f"10.0.0.{n}"


def _qos_class(spec: JSON) -> str:
    requests_any = limits_any = False
    guaranteed = True
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        resources = container.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        requests_any = requests_any or bool(requests) or bool(limits)
        limits_any = limits_any or bool(limits)
        if not limits or any(limits.get(k) is None for k in ("cpu", "memory")):
            guaranteed = False
        for key, value in requests.items():
            if limits.get(key) != value:
                guaranteed = False
    if not requests_any:
        return "BestEffort"
    return "Guaranteed" if guaranteed and limits_any else "Burstable"


_DEFAULT_TOLERATIONS = (
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
)


def prepare_for_create(rt: ResourceType, obj: JSON) -> None:
    """What the type's strategy and the default admission plugins set on a new object (in place)."""
    key = (rt.group, rt.resource)
    if key == ("", "namespaces"):
        spec = obj.setdefault("spec", {})
        finalizers = spec.get("finalizers") or []
        if "kubernetes" not in finalizers:
            spec["finalizers"] = [*finalizers, "kubernetes"]
        obj["status"] = {"phase": "Active"}
    elif key == ("", "pods"):
        spec = obj.setdefault("spec", {})
        tolerations = spec.get("tolerations") or []
        for default in _DEFAULT_TOLERATIONS:
            if not any(t.get("key") == default["key"] for t in tolerations):
                tolerations = [*tolerations, dict(default)]
        spec["tolerations"] = tolerations
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}
    elif key == ("", "services"):
        spec = obj.setdefault("spec", {})
        if spec.get("type") != "ExternalName":
            if not spec.get("clusterIP"):
                spec["clusterIP"] = _allocate_cluster_ip()
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
            spec.setdefault("ipFamilies", ["IPv4"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
        obj["status"] = {"loadBalancer": {}}
    elif key == ("policy", "poddisruptionbudgets"):
        obj.pop("status", None)
    elif key == ("apiextensions.k8s.io", "customresourcedefinitions"):
        from .schema import crd_initial_status

        # As the create response shows it: no conditions yet, empty accepted names.
        obj["status"] = crd_initial_status(obj)
    elif key == ("", "nodes"):
        _spec(obj).pop("configSource", None)


def prepare_for_update(rt: ResourceType, new: JSON, old: JSON, subresource: str = "") -> None:
    """Reset what an endpoint may not change (in place): status on the main resource, spec on /status.

    ``subresource="finalize"`` (namespaces) keeps only the new ``spec.finalizers``.
    """
    if subresource == "finalize":
        finalizers = _spec(new).get("finalizers")
        for key in list(new):
            if key != "metadata":
                del new[key]
        new.update({k: v for k, v in old.items() if k != "metadata"})
        spec = dict(_spec(old))
        if finalizers:
            spec["finalizers"] = finalizers
        else:
            spec.pop("finalizers", None)
        new["spec"] = spec
        return
    if not rt.has_status:
        return
    if subresource == "":
        if "status" in old:
            new["status"] = old["status"]
        else:
            new.pop("status", None)
        if (rt.group, rt.resource) == ("", "namespaces"):
            new.setdefault("spec", {})
            if "finalizers" in _spec(old):
                new["spec"]["finalizers"] = _spec(old)["finalizers"]
            else:
                new["spec"].pop("finalizers", None)
    elif subresource == "status":
        if "spec" in old:
            new["spec"] = old["spec"]
        else:
            new.pop("spec", None)


# ------------------------------------------------------------------ events: two API versions


def convert_event(obj: JSON, api_version: str) -> JSON:
    """One Event in the shape of ``v1`` (core) or ``events.k8s.io/v1``; both are the same object."""
    source_is_core = "involvedObject" in obj or obj.get("apiVersion") == "v1"
    if "regarding" in obj or obj.get("apiVersion") == "events.k8s.io/v1":
        source_is_core = False
    pairs = (
        ("involvedObject", "regarding"),
        ("message", "note"),
        ("source", "deprecatedSource"),
        ("firstTimestamp", "deprecatedFirstTimestamp"),
        ("lastTimestamp", "deprecatedLastTimestamp"),
        ("count", "deprecatedCount"),
        ("reportingComponent", "reportingController"),
    )
    renames = dict(pairs) if source_is_core else {new: old for old, new in pairs}
    out: JSON = {}
    for key, value in obj.items():
        out[renames.get(key, key)] = value
    target = "v1" if api_version == "v1" else "events.k8s.io/v1"
    out["kind"] = "Event"
    out["apiVersion"] = target
    spec = CORE_EVENT if target == "v1" else EVENTS_V1_EVENT
    if target == "v1" and isinstance(out.get("series"), dict):
        out["series"] = {k: v for k, v in out["series"].items() if v not in (0, None)}
        out["series"].setdefault("lastObservedTime", None)
    decoded, _ = decode_struct(spec, out, strict=False)
    if "managedFields" in _meta(obj):
        decoded["metadata"]["managedFields"] = _meta(obj)["managedFields"]
    return decoded


# ------------------------------------------------------------------------- resource types


@dataclass
class CohabitingResourceType(ResourceType):
    """A built-in served from a second group whose objects live in another type's store.

    events.k8s.io/v1 Events are core/v1 Events: one store (so both APIs list, watch and
    admission-match the same objects), and errors name the core type (``Event "x" is invalid``,
    ``events "x" not found``) because the core registry does the work. Objects in the shared
    store may have been written through either API; :func:`served_form` and
    :func:`order_builtin` give a reader the shape of the version it asked for.
    """

    storage_group_resource: tuple[str, str] = ("", "")
    storage_kind: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return self.storage_group_resource

    @property
    def qualified(self) -> Qualified:
        group, resource = self.storage_group_resource
        return Qualified(group, resource, self.storage_kind or self.kind)


def _is_event_type(rt: ResourceType) -> bool:
    return rt.builtin and rt.resource == "events" and rt.group in ("", "events.k8s.io")


def _is_core_event_shape(obj: JSON) -> bool:
    if "involvedObject" in obj or "regarding" in obj:
        return "regarding" not in obj
    return bool(obj.get("apiVersion", "v1") == "v1")


def _core_event_shape(obj: JSON) -> JSON:
    return obj if _is_core_event_shape(obj) else convert_event(obj, "v1")


def served_form(rt: ResourceType, obj: JSON) -> JSON:
    """A stored object in the shape of the API version ``rt`` serves (the object itself when the
    shapes already agree, which is every type except Events written through the other API)."""
    if not _is_event_type(rt):
        return obj
    if _is_core_event_shape(obj) == (rt.group == ""):
        return obj
    return convert_event(obj, rt.group_version)


def storage_form(rt: ResourceType, obj: JSON) -> JSON:
    """An object in the shape its store keeps (core/v1 for Events of either API)."""
    if not _is_event_type(rt) or rt.group == "":
        return obj
    return _core_event_shape(obj)


ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
SUBRESOURCE_VERBS = ["get", "patch", "update"]


@dataclass(frozen=True)
class Subresource:
    """A subresource as discovery advertises it; group/version empty means the parent's."""

    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str = ""
    version: str = ""


@dataclass(frozen=True)
class _Builtin:
    spec: Struct
    name_rule: str
    subresources: tuple[Subresource, ...]


_STATUS = Subresource("status", "", tuple(SUBRESOURCE_VERBS))
_BUILTINS: dict[tuple[str, str], _Builtin] = {}


def _register(
    rt: ResourceType, spec: Struct, *, name_rule: str = "subdomain", subresources: Sequence[Subresource] = ()
) -> ResourceType:
    rt.builtin = True
    rt.key_order = [f.name for f in spec.fields]
    rt.merge_keys = merge_keys_for(spec)
    rt.storage_version_hash = rt.storage_version_hash or storage_version_hash(rt.group, rt.version, rt.kind)
    rt.has_status = rt.has_status or any(s.name == "status" for s in subresources)
    _BUILTINS[(rt.group, rt.resource)] = _Builtin(spec, name_rule, tuple(subresources))
    return rt


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """Discovery's storageVersionHash: the first 8 bytes of sha256("group/version/kind"), base64."""
    import hashlib

    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def builtin_types() -> list[ResourceType]:
    """Everything the server serves natively, in discovery order within each group."""
    _BUILTINS.clear()
    sr = Subresource
    return [
        _register(
            ResourceType(
                "",
                "v1",
                "configmaps",
                "ConfigMap",
                "configmap",
                True,
                short_names=["cm"],
                verbs=list(ALL_VERBS),
                validate=_validate_config_map,
                tracks_generation=False,
            ),
            CONFIG_MAP,
        ),
        _register(
            ResourceType(
                "",
                "v1",
                "events",
                "Event",
                "event",
                True,
                short_names=["ev"],
                verbs=list(ALL_VERBS),
                validate=_validate_core_event,
                tracks_generation=False,
            ),
            CORE_EVENT,
        ),
        _register(
            ResourceType(
                "",
                "v1",
                "namespaces",
                "Namespace",
                "namespace",
                False,
                short_names=["ns"],
                verbs=["create", "delete", "get", "list", "patch", "update", "watch"],
                validate=_validate_namespace,
                default=_default_namespace,
                tracks_generation=False,
            ),
            NAMESPACE,
            name_rule="label",
            subresources=[sr("finalize", "", ("update",)), _STATUS],
        ),
        _register(
            ResourceType(
                "",
                "v1",
                "nodes",
                "Node",
                "node",
                False,
                short_names=["no"],
                verbs=list(ALL_VERBS),
                validate=_validate_node,
                default=_default_node,
                tracks_generation=False,
            ),
            NODE,
            subresources=[
                sr("proxy", "NodeProxyOptions", ("create", "delete", "get", "patch", "update")),
                _STATUS,
            ],
        ),
        _register(
            ResourceType(
                "",
                "v1",
                "pods",
                "Pod",
                "pod",
                True,
                short_names=["po"],
                categories=["all"],
                verbs=list(ALL_VERBS),
                validate=_validate_pod,
                default=_default_pod,
                tracks_generation=False,
            ),
            POD,
            subresources=[
                sr("attach", "PodAttachOptions", ("create", "get")),
                sr("binding", "Binding", ("create",)),
                sr("ephemeralcontainers", "", tuple(SUBRESOURCE_VERBS)),
                sr("eviction", "Eviction", ("create",), "policy", "v1"),
                sr("exec", "PodExecOptions", ("create", "get")),
                sr("log", "", ("get",)),
                sr("portforward", "PodPortForwardOptions", ("create", "get")),
                sr("proxy", "PodProxyOptions", ("create", "delete", "get", "patch", "update")),
                sr("resize", "", tuple(SUBRESOURCE_VERBS)),
                _STATUS,
            ],
        ),
        _register(
            ResourceType(
                "",
                "v1",
                "secrets",
                "Secret",
                "secret",
                True,
                verbs=list(ALL_VERBS),
                validate=_validate_secret,
                default=_default_secret,
                tracks_generation=False,
            ),
            SECRET,
        ),
        _register(
            ResourceType(
                "",
                "v1",
                "serviceaccounts",
                "ServiceAccount",
                "serviceaccount",
                True,
                short_names=["sa"],
                verbs=list(ALL_VERBS),
                tracks_generation=False,
            ),
            SERVICE_ACCOUNT,
            subresources=[sr("token", "TokenRequest", ("create",), "authentication.k8s.io", "v1")],
        ),
        _register(
            ResourceType(
                "",
                "v1",
                "services",
                "Service",
                "service",
                True,
                short_names=["svc"],
                categories=["all"],
                verbs=list(ALL_VERBS),
                validate=_validate_service,
                default=_default_service,
                tracks_generation=False,
            ),
            SERVICE,
            name_rule="dns1035",
            subresources=[
                sr("proxy", "ServiceProxyOptions", ("create", "delete", "get", "patch", "update")),
                _STATUS,
            ],
        ),
        _register(
            CohabitingResourceType(
                "events.k8s.io",
                "v1",
                "events",
                "Event",
                "event",
                True,
                short_names=["ev"],
                verbs=list(ALL_VERBS),
                validate=_validate_events_v1_event,
                tracks_generation=False,
                storage_version_hash=storage_version_hash("", "v1", "Event"),
                storage_group_resource=("", "events"),
                storage_kind="Event",
            ),
            EVENTS_V1_EVENT,
        ),
        _register(
            ResourceType(
                "authentication.k8s.io",
                "v1",
                "selfsubjectreviews",
                "SelfSubjectReview",
                "selfsubjectreview",
                False,
                verbs=["create"],
                tracks_generation=False,
            ),
            SELF_SUBJECT_REVIEW,
        ),
        _register(
            ResourceType(
                "policy",
                "v1",
                "poddisruptionbudgets",
                "PodDisruptionBudget",
                "poddisruptionbudget",
                True,
                short_names=["pdb"],
                verbs=list(ALL_VERBS),
                validate=_validate_pdb,
            ),
            POD_DISRUPTION_BUDGET,
            subresources=[_STATUS],
        ),
        _register(
            ResourceType(
                "admissionregistration.k8s.io",
                "v1",
                "mutatingwebhookconfigurations",
                "MutatingWebhookConfiguration",
                "mutatingwebhookconfiguration",
                False,
                categories=["api-extensions"],
                verbs=list(ALL_VERBS),
                validate=_webhook_configuration_validator(mutating=True),
                default=_default_webhooks(True),
            ),
            MUTATING_WEBHOOK_CONFIGURATION,
        ),
        _register(
            ResourceType(
                "admissionregistration.k8s.io",
                "v1",
                "validatingwebhookconfigurations",
                "ValidatingWebhookConfiguration",
                "validatingwebhookconfiguration",
                False,
                categories=["api-extensions"],
                verbs=list(ALL_VERBS),
                validate=_webhook_configuration_validator(mutating=False),
                default=_default_webhooks(False),
            ),
            VALIDATING_WEBHOOK_CONFIGURATION,
        ),
        _register(
            ResourceType(
                "apiextensions.k8s.io",
                "v1",
                "customresourcedefinitions",
                "CustomResourceDefinition",
                "customresourcedefinition",
                False,
                short_names=["crd", "crds"],
                categories=["api-extensions"],
                verbs=list(ALL_VERBS),
                validate=_validate_crd,
                default=_default_crd,
            ),
            CUSTOM_RESOURCE_DEFINITION,
            subresources=[_STATUS],
        ),
        _register(
            ResourceType(
                "coordination.k8s.io",
                "v1",
                "leases",
                "Lease",
                "lease",
                True,
                verbs=list(ALL_VERBS),
                validate=_validate_lease,
                tracks_generation=False,
            ),
            LEASE,
        ),
    ]


def _builtin(rt: ResourceType) -> _Builtin | None:
    if not _BUILTINS:
        builtin_types()
    return _BUILTINS.get((rt.group, rt.resource)) if rt.builtin else None


def struct_of(rt: ResourceType) -> Struct | None:
    """The struct description behind a built-in type (None for custom resources)."""
    entry = _builtin(rt)
    return entry.spec if entry else None


def name_rule(rt: ResourceType) -> str:
    """Which naming rule the type's names follow (see :data:`~.objectmeta.NAME_RULES`)."""
    entry = _builtin(rt)
    return entry.name_rule if entry else "subdomain"


def builtin_subresources(rt: ResourceType) -> list[Subresource]:
    """The subresources discovery lists for a built-in type (kind "" means the parent's kind)."""
    entry = _builtin(rt)
    return list(entry.subresources) if entry else []


def field_rules(rt: ResourceType) -> FieldRules:
    """Field-ownership rules for managedFields bookkeeping, for built-ins and custom resources.

    Worked out once per resource type (every write asks; a CRD's rules come from walking its
    whole schema): remembered by identity of the type and of its schema.
    """
    from .objectmeta import rules_from_schema

    hit = _FIELD_RULES.get(id(rt))
    if hit is not None and hit[0] is rt and hit[1] is rt.schema:
        return hit[2]
    spec = struct_of(rt)
    rules = rules_for(spec) if spec is not None else rules_from_schema(rt.schema)
    if len(_FIELD_RULES) >= 1024:
        _FIELD_RULES.clear()
    _FIELD_RULES[id(rt)] = (rt, rt.schema, rules)
    return rules


# id(type) -> (the type, its schema, its rules); entries hold the type, so ids stay unique.
_FIELD_RULES: dict[int, tuple[ResourceType, JSON | None, FieldRules]] = {}


def decode_builtin(rt: ResourceType, body: JSON, *, strict: bool = False) -> tuple[JSON, list[str]]:
    """A request body as the Go struct would hold it: (object in struct order, warnings).

    Unknown fields are dropped and reported as ``unknown field "spec.bogus"`` warnings, or
    raise :class:`DecodeError` with ``strict``; time fields are parsed and normalised. The
    handler turns a DecodeError into 400 ``<Kind> in version "<v>" cannot be handled as a
    <Kind>: <message>`` (see :func:`decode_error_message`).
    """
    spec = struct_of(rt)
    if spec is None:
        return body, []
    obj, unknown = decode_struct(spec, body, strict=strict)
    if (rt.group, rt.resource) == ("", "secrets"):
        for key, value in (obj.get("data") or {}).items():
            try:
                base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise DecodeError(f"illegal base64 data at input byte {_bad_base64_offset(value)}") from exc
            del key
    if (rt.group, rt.resource) == ("apiextensions.k8s.io", "customresourcedefinitions"):
        for version in _spec(obj).get("versions") or []:
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            if isinstance(schema, dict):
                version["schema"]["openAPIV3Schema"] = order_json_schema(schema)
    return obj, [f'unknown field "{path}"' for path in unknown]


def _bad_base64_offset(value: str) -> int:
    allowed = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
    for i, ch in enumerate(value):
        if ch not in allowed:
            return i
    return len(value)


def decode_error_message(rt: ResourceType, message: str) -> str:
    """The 400 message for a body that cannot be decoded into the type."""
    return f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {message}'


def _sorted_deep(value: Any) -> Any:
    # a value json-patch parsed into a Go map comes back out with sorted keys, all the way down
    if isinstance(value, dict):
        return {k: _sorted_deep(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_deep(v) for v in value]
    return value


def _go_merge_patched(doc: JSON, patch_doc: JSON) -> JSON:
    """What evanphx/json-patch's MergePatch writes: every object the patch reached is re-encoded
    from a Go map (sorted keys), everything it did not reach keeps its original bytes (order)."""
    result = dict(doc)
    for key, value in patch_doc.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _go_merge_patched(result[key], value)
        else:
            result[key] = _sorted_deep(_without_nulls(value))
    return {k: result[k] for k in sorted(result)}


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _go_json_patched(patched: JSON, ops: Any) -> JSON:
    """The JSON-patch counterpart: containers on an operation's path were parsed (sorted keys)."""
    touched: set[tuple[str, ...]] = {()}
    for op in ops if isinstance(ops, list) else []:
        for pointer in (op.get("path"), op.get("from")) if isinstance(op, dict) else ():
            if not isinstance(pointer, str):
                continue
            tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
            for depth in range(len(tokens)):
                touched.add(tuple(tokens[:depth]))

    def walk(node: Any, at: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            keys = sorted(node) if at in touched else list(node)
            return {k: walk(node[k], (*at, k)) for k in keys}
        if isinstance(node, list):
            return [walk(v, (*at, str(i))) for i, v in enumerate(node)]
        return node

    out: JSON = walk(patched, ())
    return out


def _go_marshal(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    # Go's encoder escapes HTML-significant characters; they only ever occur inside strings
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def patch_decode_error(
    rt: ResourceType, current: JSON, patch_kind: str, patch_doc: Any, patched: JSON, message: str
) -> StatusError:
    """422 for a merge or JSON patch whose result cannot be decoded into a built-in's struct.

    kube-apiserver reports it with an empty kind and name and the whole patched document (as
    the patch library encoded it) as the invalid value of a field called ``patch``:
    `` "" is invalid: patch: Invalid value: "{...}": parsing time ...``. ``message`` is the
    decode error without the "cannot be handled as" prefix (:class:`DecodeError`'s message).
    """
    if patch_kind == "merge" and isinstance(patch_doc, dict):
        document = _go_merge_patched(order_builtin(rt, current), patch_doc)
    else:
        document = _go_json_patched(patched, patch_doc)
    problem = invalid("patch", _go_marshal(document), message)
    return StatusError(
        422, "Invalid", f' "" is invalid: {aggregate_message([problem])}', {"causes": [problem.cause()]}
    )


def strategic_patch_decode_error(patch_doc: Any, message: str) -> StatusError:
    """422 for a strategic merge patch whose result cannot be decoded into a built-in's struct.

    Like :func:`patch_decode_error`, but kube-apiserver quotes the *patch* here, as Go's ``%+v``
    prints the decoded map: `` "" is invalid: patch: Invalid value: "map[spec:map[renewTime:x]]": ...``.
    No recording shows this case; the wording follows kube-apiserver's strategic patcher.
    """
    from .schema import go_v

    problem = invalid("patch", go_v(patch_doc), message)
    return StatusError(
        422, "Invalid", f' "" is invalid: {aggregate_message([problem])}', {"causes": [problem.cause()]}
    )


def order_builtin(rt: ResourceType, obj: JSON, *, with_type: bool = True) -> JSON:
    """``obj`` with keys in Go struct order (top level, metadata and nested structs) for output.

    ``with_type=False`` drops kind/apiVersion, as items of a built-in list are written.
    """
    spec = struct_of(rt)
    obj = served_form(rt, obj)
    out = reorder(spec, obj) if spec is not None else dict(obj)
    if not with_type:
        out.pop("kind", None)
        out.pop("apiVersion", None)
    return out


def supported_field_selectors(rt: ResourceType) -> list[str]:
    """The field names a fieldSelector may use on this type."""
    return list(field_selector_fields(rt, {}))


def order_scale(obj: JSON) -> JSON:
    """An autoscaling/v1 Scale in struct order."""
    out: JSON = reorder(SCALE, obj)
    return out


# ------------------------------------------------------------------------- field selectors


def _bool_text(value: Any) -> str:
    return "true" if value is True else "false"


def field_selector_fields(rt: ResourceType, obj: JSON) -> dict[str, str]:
    """The fields a fieldSelector may name for this type, with this object's values."""
    meta = _meta(obj)
    fields = {"metadata.name": str(meta.get("name") or "")}
    if rt.namespaced:
        fields["metadata.namespace"] = str(meta.get("namespace") or "")
    key = (rt.group, rt.resource)
    spec, status = _spec(obj), _spec(obj, "status")
    if key == ("", "namespaces"):
        fields["status.phase"] = str(status.get("phase") or "")
    elif key == ("", "nodes"):
        fields["spec.unschedulable"] = _bool_text(spec.get("unschedulable"))
    elif key == ("", "pods"):
        fields.update(
            {
                "spec.nodeName": str(spec.get("nodeName") or ""),
                "spec.restartPolicy": str(spec.get("restartPolicy") or ""),
                "spec.schedulerName": str(spec.get("schedulerName") or ""),
                "spec.serviceAccountName": str(spec.get("serviceAccountName") or ""),
                "spec.hostNetwork": _bool_text(spec.get("hostNetwork")),
                "status.phase": str(status.get("phase") or ""),
                "status.podIP": str(status.get("podIP") or ""),
                "status.nominatedNodeName": str(status.get("nominatedNodeName") or ""),
            }
        )
    elif key == ("", "secrets"):
        fields["type"] = str(obj.get("type") or "")
    elif key == ("", "services"):
        fields["spec.clusterIP"] = str(spec.get("clusterIP") or "")
        fields["spec.type"] = str(spec.get("type") or "")
    elif rt.resource == "events" and rt.group in ("", "events.k8s.io"):
        core = _core_event_shape(obj)
        involved = _spec(core, "involvedObject")
        prefix = "involvedObject" if not rt.group else "regarding"
        for name in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"):
            fields[f"{prefix}.{name}"] = str(involved.get(name) or "")
        fields["reason"] = str(core.get("reason") or "")
        fields["reportingComponent" if not rt.group else "reportingController"] = str(
            core.get("reportingComponent") or ""
        )
        fields["source" if not rt.group else "deprecatedSource"] = str(
            _spec(core, "source").get("component") or ""
        )
        fields["type"] = str(core.get("type") or "")
    return fields


# --------------------------------------------------------------------------- initial state


def initial_objects(now: str | None = None) -> list[tuple[ResourceType, JSON]]:
    """What a fresh kube-apiserver holds before anyone writes: the four system namespaces and
    the ``kubernetes`` Service in ``default``. Stores fill in resourceVersions."""
    from datetime import datetime as _dt

    created = now or format_time(_dt.now(UTC))
    types = {(rt.group, rt.resource): rt for rt in builtin_types()}
    namespaces = types[("", "namespaces")]
    out: list[tuple[ResourceType, JSON]] = []
    for name in ("default", "kube-node-lease", "kube-public", "kube-system"):
        ns: JSON = {
            "kind": "Namespace",
            "apiVersion": "v1",
            "metadata": {
                "name": name,
                "uid": str(uuid.uuid4()),
                "creationTimestamp": created,
                "labels": {"kubernetes.io/metadata.name": name},
                "managedFields": [
                    {
                        "manager": "kube-apiserver",
                        "operation": "Update",
                        "apiVersion": "v1",
                        "time": created,
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {
                            "f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}
                        },
                    }
                ],
            },
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }
        out.append((namespaces, ns))
    services = types[("", "services")]
    kubernetes: JSON = {
        "kind": "Service",
        "apiVersion": "v1",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "uid": str(uuid.uuid4()),
            "creationTimestamp": created,
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "ports": [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": 6443}],
            "clusterIP": "10.0.0.1",
            "clusterIPs": ["10.0.0.1"],
            "type": "ClusterIP",
            "sessionAffinity": "None",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "internalTrafficPolicy": "Cluster",
        },
        "status": {"loadBalancer": {}},
    }
    out.append((services, kubernetes))
    out.append((types[("coordination.k8s.io", "leases")], apiserver_identity_lease(created)))
    return out


def apiserver_identity_lease(now: str, *, hostname: str | None = None) -> JSON:
    """The Lease by which a kube-apiserver announces itself in kube-system.

    Its name is derived from the host name (so it is stable across restarts on one host), the
    holder adds a per-process uuid, and the apiserver renews it itself (hence its managedFields).
    """
    import hashlib
    import socket

    host = hostname or socket.gethostname()
    digest = hashlib.sha256(f"{host}_kube-apiserver".encode()).digest()
    name = "apiserver-" + base64.b32encode(digest[:16]).decode().rstrip("=").lower()
    renewed = now.replace("Z", ".000000Z") if now.endswith("Z") and "." not in now else now
    return {
        "kind": "Lease",
        "apiVersion": "coordination.k8s.io/v1",
        "metadata": {
            "name": name,
            "namespace": "kube-system",
            "uid": str(uuid.uuid4()),
            "creationTimestamp": now,
            "labels": {"apiserver.kubernetes.io/identity": "kube-apiserver", "kubernetes.io/hostname": host},
            "managedFields": [
                {
                    "manager": "kube-apiserver",
                    "operation": "Update",
                    "apiVersion": "coordination.k8s.io/v1",
                    "time": now,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {
                            "f:labels": {
                                ".": {},
                                "f:apiserver.kubernetes.io/identity": {},
                                "f:kubernetes.io/hostname": {},
                            }
                        },
                        "f:spec": {"f:holderIdentity": {}, "f:leaseDurationSeconds": {}, "f:renewTime": {}},
                    },
                }
            ],
        },
        "spec": {
            "holderIdentity": f"{name}_{uuid.uuid4()}",
            "leaseDurationSeconds": 3600,
            "renewTime": renewed,
        },
    }


# ------------------------------------------------------------------------ SelfSubjectReview


def self_subject_review(
    username: str,
    groups: Sequence[str],
    uid: str = "",
    extra: dict[str, list[str]] | None = None,
    *,
    now: str,
) -> JSON:
    """The answer to POST selfsubjectreviews: the caller's own user info, nothing is stored.

    ``uid`` and ``extra`` are omitted when empty, as the Go struct's omitempty tags do.
    """
    user_info: JSON = {"username": username}
    if uid:
        user_info["uid"] = uid
    if groups:
        user_info["groups"] = list(groups)
    if extra:
        user_info["extra"] = {key: list(values) for key, values in extra.items()}
    return {
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": now},
        "status": {"userInfo": user_info},
    }
