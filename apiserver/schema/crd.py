"""The CustomResourceDefinition object: its shape, defaults, status and the resource types it defines.

:func:`order_schema` writes a schema back in JSONSchemaProps' Go field order, :func:`default_crd`
fills in what the real server defaults, :func:`crd_initial_status` and
:func:`crd_established_status` are its status before and after its names are accepted, and
:func:`crd_to_resource_types` turns it into the types the server then serves.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from runtime.jsoncodec import JSON

from ..builtin_types.table import storage_version_hash
from ..registry import ResourceType, ScaleSpec
from .common import as_dict, as_list, as_str, is_zero

PRINTER_COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
PRINTER_COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")
OPENAPI_V3_TYPES = ("array", "boolean", "integer", "number", "object", "string")
APPROVAL_ANNOTATION = "api-approved.kubernetes.io"
IMMUTABLE = "field is immutable"

# JSONSchemaProps in Go struct order: (Go field name, JSON key, kind). The kind says how the
# field serialises: "omitempty" drops zero values, "ptr" drops only null, "schema"/"schemas"/
# "schema_map" recurse, "json" is raw JSON (default, example, enum entries).
SCHEMA_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("ID", "id", "omitempty"),
    ("Schema", "$schema", "omitempty"),
    ("Ref", "$ref", "ptr"),
    ("Description", "description", "omitempty"),
    ("Type", "type", "omitempty"),
    ("Format", "format", "omitempty"),
    ("Title", "title", "omitempty"),
    ("Default", "default", "json"),
    ("Maximum", "maximum", "float"),
    ("ExclusiveMaximum", "exclusiveMaximum", "omitempty"),
    ("Minimum", "minimum", "float"),
    ("ExclusiveMinimum", "exclusiveMinimum", "omitempty"),
    ("MaxLength", "maxLength", "ptr"),
    ("MinLength", "minLength", "ptr"),
    ("Pattern", "pattern", "omitempty"),
    ("MaxItems", "maxItems", "ptr"),
    ("MinItems", "minItems", "ptr"),
    ("UniqueItems", "uniqueItems", "omitempty"),
    ("MultipleOf", "multipleOf", "float"),
    ("Enum", "enum", "omitempty"),
    ("MaxProperties", "maxProperties", "ptr"),
    ("MinProperties", "minProperties", "ptr"),
    ("Required", "required", "omitempty"),
    ("Items", "items", "schema_or_array"),
    ("AllOf", "allOf", "schemas"),
    ("OneOf", "oneOf", "schemas"),
    ("AnyOf", "anyOf", "schemas"),
    ("Not", "not", "schema"),
    ("Properties", "properties", "schema_map"),
    ("AdditionalProperties", "additionalProperties", "schema_or_bool"),
    ("PatternProperties", "patternProperties", "schema_map"),
    ("Dependencies", "dependencies", "dependencies"),
    ("AdditionalItems", "additionalItems", "schema_or_bool"),
    ("Definitions", "definitions", "schema_map"),
    ("ExternalDocs", "externalDocs", "external_docs"),
    ("Example", "example", "json"),
    ("Nullable", "nullable", "omitempty"),
    ("XPreserveUnknownFields", "x-kubernetes-preserve-unknown-fields", "ptr"),
    ("XEmbeddedResource", "x-kubernetes-embedded-resource", "omitempty"),
    ("XIntOrString", "x-kubernetes-int-or-string", "omitempty"),
    ("XListMapKeys", "x-kubernetes-list-map-keys", "omitempty"),
    ("XListType", "x-kubernetes-list-type", "ptr"),
    ("XMapType", "x-kubernetes-map-type", "ptr"),
    ("XValidations", "x-kubernetes-validations", "rules"),
)
# Only these may be set at the root of a schema when the status subresource is enabled.
ALLOWED_AT_STATUS_ROOT = [
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
]


def _ordered(source: JSON, fields: tuple[tuple[str, str], ...]) -> JSON:
    """Copy the known keys of ``source`` in Go struct order; ``omitempty`` ones only when non-zero."""
    out: JSON = {}
    for key, mode in fields:
        if key not in source:
            continue
        value = source[key]
        if mode == "omitempty" and is_zero(value):
            continue
        if mode == "ptr" and value is None:
            continue
        out[key] = copy.deepcopy(value)
    return out


def _normalize_float(value: Any) -> Any:
    # Go keeps these as float64 and marshals integral ones without a fraction.
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def order_schema(schema: Any) -> Any:
    """A JSONSchemaProps as kube-apiserver writes it back: Go field order, empty optional fields gone."""
    if not isinstance(schema, dict):
        return copy.deepcopy(schema)
    out: JSON = {}
    for _, key, mode in SCHEMA_FIELDS:
        if key not in schema:
            continue
        value = schema[key]
        if value is None or (
            mode in ("omitempty", "schemas", "schema_map", "dependencies", "rules") and is_zero(value)
        ):
            continue
        if mode == "float":
            out[key] = _normalize_float(value)
        elif mode in ("schema", "schema_or_array", "schema_or_bool"):
            if isinstance(value, list):
                out[key] = [order_schema(v) for v in value]
            else:
                out[key] = value if isinstance(value, bool) else order_schema(value)
        elif mode == "schemas":
            out[key] = [order_schema(v) for v in as_list(value)]
        elif mode == "schema_map":
            out[key] = {k: order_schema(v) for k, v in sorted(as_dict(value).items())}
        elif mode == "dependencies":
            out[key] = {
                k: (copy.deepcopy(v) if isinstance(v, list) else order_schema(v))
                for k, v in sorted(as_dict(value).items())
            }
        elif mode == "external_docs":
            out[key] = _ordered(as_dict(value), (("description", "omitempty"), ("url", "omitempty")))
        elif mode == "rules":
            rule_fields = (
                ("rule", "plain"),
                ("message", "omitempty"),
                ("messageExpression", "omitempty"),
                ("reason", "ptr"),
                ("fieldPath", "omitempty"),
                ("optionalOldSelf", "ptr"),
            )
            out[key] = [_ordered(as_dict(rule), rule_fields) for rule in as_list(value)]
        else:
            out[key] = copy.deepcopy(value)
    return out


_NAMES_FIELDS = (
    ("plural", "plain"),
    ("singular", "omitempty"),
    ("shortNames", "omitempty"),
    ("kind", "plain"),
    ("listKind", "omitempty"),
    ("categories", "omitempty"),
)


def _ordered_names(names: JSON) -> JSON:
    # plural and kind have no omitempty: Go always writes them.
    return _ordered({"plural": "", "kind": "", **names}, _NAMES_FIELDS)


def _ordered_version(version: JSON) -> JSON:
    out: JSON = {"name": version.get("name", ""), "served": version.get("served", False)}
    out["storage"] = version.get("storage", False)
    if version.get("deprecated"):
        out["deprecated"] = True
    if version.get("deprecationWarning") is not None:
        out["deprecationWarning"] = version["deprecationWarning"]
    schema = version.get("schema")
    if isinstance(schema, dict):
        validation: JSON = {}
        if schema.get("openAPIV3Schema") is not None:
            validation["openAPIV3Schema"] = order_schema(schema["openAPIV3Schema"])
        out["schema"] = validation
    subresources = version.get("subresources")
    if isinstance(subresources, dict):
        ordered_sub: JSON = {}
        if subresources.get("status") is not None:
            ordered_sub["status"] = {}
        scale = subresources.get("scale")
        if isinstance(scale, dict):
            ordered_sub["scale"] = _ordered(
                scale,
                (
                    ("specReplicasPath", "plain"),
                    ("statusReplicasPath", "plain"),
                    ("labelSelectorPath", "ptr"),
                ),
            )
        out["subresources"] = ordered_sub
    columns = as_list(version.get("additionalPrinterColumns"))
    if columns:
        column_fields = (
            ("name", "plain"),
            ("type", "plain"),
            ("format", "omitempty"),
            ("description", "omitempty"),
            ("priority", "omitempty"),
            ("jsonPath", "plain"),
        )
        out["additionalPrinterColumns"] = [_ordered(as_dict(c), column_fields) for c in columns]
    selectable = as_list(version.get("selectableFields"))
    if selectable:
        out["selectableFields"] = [_ordered(as_dict(s), (("jsonPath", "plain"),)) for s in selectable]
    return out


def _ordered_conversion(conversion: JSON) -> JSON:
    out: JSON = {"strategy": conversion.get("strategy", "")}
    webhook = conversion.get("webhook")
    if isinstance(webhook, dict):
        ordered_webhook: JSON = {}
        client = webhook.get("clientConfig")
        if isinstance(client, dict):
            ordered_client = _ordered(client, (("url", "ptr"),))
            service = client.get("service")
            if isinstance(service, dict):
                ordered_service = _ordered(
                    service, (("namespace", "plain"), ("name", "plain"), ("path", "ptr"))
                )
                ordered_service["port"] = service["port"] if service.get("port") is not None else 443
                ordered_client["service"] = ordered_service
            if client.get("caBundle"):
                ordered_client["caBundle"] = client["caBundle"]
            ordered_webhook["clientConfig"] = ordered_client
        ordered_webhook["conversionReviewVersions"] = copy.deepcopy(webhook.get("conversionReviewVersions"))
        out["webhook"] = ordered_webhook
    return out


def default_crd(crd: JSON) -> JSON:
    """A copy of a CustomResourceDefinition with the v1 defaults applied and keys in Go struct order.

    Defaults: ``names.singular`` (lower-cased kind), ``names.listKind`` (kind + ``List``),
    ``conversion: {strategy: None}`` and port 443 for a conversion webhook service. Unknown keys
    inside ``spec`` are dropped, as decoding into the typed object does; metadata and status are
    copied as they are.
    """
    out: JSON = {}
    for key in ("kind", "apiVersion", "metadata"):
        if key in crd:
            out[key] = copy.deepcopy(crd[key])
    source = as_dict(crd.get("spec"))
    names = dict(as_dict(source.get("names")))
    kind = as_str(names.get("kind"))
    if not names.get("singular"):
        names["singular"] = kind.lower()
    if not names.get("listKind") and kind:
        names["listKind"] = kind + "List"
    spec: JSON = {
        "group": source.get("group", ""),
        "names": _ordered_names(names),
        "scope": source.get("scope", ""),
    }
    spec["versions"] = [_ordered_version(as_dict(v)) for v in as_list(source.get("versions"))]
    conversion = source.get("conversion")
    spec["conversion"] = (
        _ordered_conversion(conversion) if isinstance(conversion, dict) else {"strategy": "None"}
    )
    if source.get("preserveUnknownFields"):
        spec["preserveUnknownFields"] = True
    out["spec"] = spec
    if "status" in crd:
        out["status"] = copy.deepcopy(crd["status"])
    return out


def storage_version(crd: JSON) -> str:
    for version in as_list(as_dict(crd.get("spec")).get("versions")):
        if isinstance(version, dict) and version.get("storage") is True:
            return as_str(version.get("name"))
    return ""


def crd_initial_status(crd: JSON) -> JSON:
    """``status`` of a CRD as the create response shows it: no conditions, empty accepted names."""
    storage = storage_version(crd)
    return {
        "conditions": None,
        "acceptedNames": {"plural": "", "kind": ""},
        "storedVersions": [storage] if storage else None,
    }


def crd_established_status(crd: JSON, now: str) -> JSON:
    """``status`` once the naming controller accepted the names: NamesAccepted + Established, True.

    Conditions that are already True keep their ``lastTransitionTime``; ``now`` stamps new ones.
    """
    defaulted = default_crd(crd)
    status = as_dict(crd.get("status"))
    previous = {
        as_str(c.get("type")): c
        for c in as_list(status.get("conditions"))
        if isinstance(c, dict) and c.get("status") == "True"
    }

    def condition(kind: str, reason: str, message: str) -> JSON:
        since = as_str(previous.get(kind, {}).get("lastTransitionTime")) or now
        return {
            "type": kind,
            "status": "True",
            "lastTransitionTime": since,
            "reason": reason,
            "message": message,
        }

    stored = as_list(status.get("storedVersions")) or [v for v in [storage_version(crd)] if v] or None
    return {
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": copy.deepcopy(defaulted["spec"]["names"]),
        "storedVersions": copy.deepcopy(stored),
    }


_KUBE_VERSION = re.compile(r"^v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?$")


def version_priority(name: str) -> tuple[int, int, int, str]:
    """Sort key for kube-aware version order: GA before beta before alpha, newer first, others last."""
    match = _KUBE_VERSION.match(name)
    if not match:
        return (3, 0, 0, name)
    major = int(match.group(1))
    if match.group(2) is None:
        return (0, -major, 0, "")
    stage = 1 if match.group(2) == "beta" else 2
    return (stage, -major, -int(match.group(3)), "")


def crd_to_resource_types(crd: JSON) -> list[ResourceType]:
    """One ResourceType per served version, highest-priority version first."""
    defaulted = default_crd(crd)
    spec = defaulted["spec"]
    names = spec["names"]
    group = as_str(spec.get("group"))
    kind = as_str(names.get("kind"))
    version_hash = storage_version_hash(group, storage_version(defaulted), kind)
    served = [v for v in spec["versions"] if v.get("served") is True]
    types: list[ResourceType] = []
    for version in sorted(served, key=lambda v: version_priority(as_str(v.get("name")))):
        subresources = as_dict(version.get("subresources"))
        scale_source = subresources.get("scale")
        scale = None
        if isinstance(scale_source, dict):
            scale = ScaleSpec(
                spec_replicas_path=as_str(scale_source.get("specReplicasPath")),
                status_replicas_path=as_str(scale_source.get("statusReplicasPath")),
                label_selector_path=scale_source.get("labelSelectorPath") or None,
            )
        types.append(
            ResourceType(
                group=group,
                version=as_str(version.get("name")),
                resource=as_str(names.get("plural")),
                kind=kind,
                singular=as_str(names.get("singular")),
                namespaced=spec.get("scope") == "Namespaced",
                list_kind=as_str(names.get("listKind")),
                short_names=list(as_list(names.get("shortNames"))),
                categories=list(as_list(names.get("categories"))),
                has_status="status" in subresources,
                scale=scale,
                schema=as_dict(version.get("schema")).get("openAPIV3Schema"),
                printer_columns=list(as_list(version.get("additionalPrinterColumns"))),
                storage_version_hash=version_hash,
            )
        )
    return types
