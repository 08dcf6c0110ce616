"""Dynamic admission: calling registered Mutating/ValidatingWebhookConfigurations as kube-apiserver does.

The HTTP layer builds one :class:`AdmissionAttributes` per write and hands it, with the stored
webhook configurations, to :class:`Admission`:

* :meth:`Admission.mutate` runs the matching mutating webhooks one after another (configurations
  sorted by name, webhooks in their listed order), applies each JSONPatch answer, and reinvokes
  ``reinvocationPolicy: IfNeeded`` webhooks once when a later webhook changed the object.
* :meth:`Admission.validate` calls the matching validating webhooks concurrently and fails with the
  first error to arrive, after all calls have finished.

What the caller decides: the mutating phase must be given the object as decoded from the request,
*before* name generation, uid and creationTimestamp are filled in (the real server only fills those
in after mutating admission, so ``request.name`` is absent for ``generateName`` creates); the
validating phase gets the object as it will be stored (name, uid, creationTimestamp, generation
set). Likewise on UPDATE the mutating phase sees the old ``metadata.generation`` and the validating
phase the bumped one. Key order is this module's business (see :func:`wire_form`): custom resources
go out with sorted keys, built-ins in Go struct order. After :meth:`Admission.mutate` the caller
should prune/default the result again, as the real server decodes a webhook's output through the
type's schema.

Denials and failures reach the client exactly as the real server phrases them: a webhook denial
is the webhook's own ``status`` with the code raised to at least 400 and the message prefixed
``admission webhook "<name>" denied the request: ``; a webhook that cannot be called, times out or
answers nonsense is a 500 ``InternalError`` naming the URL with ``?timeout=Ns``, unless its
``failurePolicy`` is ``Ignore``.

Not supported: CEL ``matchConditions`` are validated for shape but not evaluated (a webhook with
conditions is called as if they all held). ``matchPolicy: Equivalent`` knows the other served
versions of the same group/resource when a :class:`~.registry.Registry` is given, and converts
objects between them by rewriting ``apiVersion`` only (the CRD ``None`` conversion strategy).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import copy
import ipaddress
import json
import os
import posixpath
import re
import socket
import ssl
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import jsonpatch
import jsonpointer
import yaml
from cryptography import x509

from runtime.goformat import go_strings
from runtime.jsoncodec import JSON

from .builtins import order_builtin, order_scale, struct_of
from .errors import (
    FieldError,
    Qualified,
    StatusError,
    Warnings,
    forbidden,
    go_quote,
    internal_error,
    invalid,
    not_found,
    not_supported,
    required,
)
from .objectmeta import (
    dns1035_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)
from .registry import Registry, ResourceType
from .selectors import SelectorError, label_selector_object_matches

ADMISSION_USER_AGENT = "kube-apiserver-admission"
ADMISSION_GROUP = "admission.k8s.io"
# The AdmissionReview versions this server can speak, in the order it prefers them.
KNOWN_REVIEW_VERSIONS = ("v1", "v1beta1")
DEFAULT_TIMEOUT_SECONDS = 10
DEFAULT_SERVICE_PORT = 443

# Resolves a clientConfig.service (namespace, name, port) to the local (host, port) serving it.
# May raise LookupError (or OSError) whose first argument is shown where the real server shows
# its resolver's error, e.g. 'service "name" not found'.
ServiceResolver = Callable[[str, str, int], tuple[str, int]]

_NAMESPACES = Qualified("", "namespaces", "Namespace")


@dataclass
class AdmissionAttributes:
    """Everything admission needs to know about one request (``admission.Attributes``)."""

    operation: str  # CREATE | UPDATE | DELETE | CONNECT
    # The object as sent: for /scale this is autoscaling/v1 Scale.
    group: str
    version: str
    kind: str
    # The resource requested.
    resource_group: str
    resource_version: str
    resource: str
    sub_resource: str = ""
    name: str = ""
    # For requests on a Namespace object itself this is that namespace's name, as the real
    # server's request info sets it.
    namespace: str = ""
    object: JSON | None = None
    old_object: JSON | None = None
    # CreateOptions / UpdateOptions / DeleteOptions as the real server sends them (see operation_options).
    options: JSON | None = None
    dry_run: bool = False
    # {"username", "uid", "groups", "extra"} of the caller.
    user_info: JSON = field(default_factory=dict)
    # Labels of attrs.namespace; None when that namespace does not exist. For the namespaces
    # resource itself CREATE/UPDATE use the object's labels, as the real server does.
    namespace_labels: dict[str, str] | None = None
    # Fills in defaults (in place) on the object a webhook's patch produced, as kube-apiserver runs
    # the type's defaulter (a CRD's structural defaults) after every non-empty patch. None: none.
    defaulter: Callable[[JSON], None] | None = None


@dataclass(frozen=True)
class WebhookInvocation:
    """A webhook that matched a request, and the resource/kind it is called for.

    ``resource``/``kind`` differ from the request's only when ``matchPolicy: Equivalent`` matched
    the webhook through another version of the resource.
    """

    configuration: str
    index: int
    webhook: JSON
    mutating: bool
    resource: tuple[str, str, str]  # group, version, resource
    sub_resource: str
    kind: tuple[str, str, str]  # group, version, kind

    @property
    def name(self) -> str:
        return str(self.webhook.get("name", ""))

    @property
    def key(self) -> tuple[str, int]:
        return (self.configuration, self.index)

    @property
    def ignores_failures(self) -> bool:
        return self.webhook.get("failurePolicy") == "Ignore"

    @property
    def reinvocable(self) -> bool:
        return self.mutating and self.webhook.get("reinvocationPolicy") == "IfNeeded"


def operation_options(
    operation: str,
    *,
    dry_run: list[str] | None = None,
    field_manager: str = "",
    field_validation: str = "",
    delete_options: JSON | None = None,
) -> JSON | None:
    """The ``request.options`` object webhooks receive for ``operation``.

    PATCH requests are admitted as UPDATE (or CREATE for an apply that creates) and therefore get
    UpdateOptions/CreateOptions built from the PatchOptions. ``delete_options`` is the decoded
    DeleteOptions body, if any.
    """
    if operation in ("CREATE", "UPDATE"):
        options: JSON = {"kind": "CreateOptions" if operation == "CREATE" else "UpdateOptions"}
        options["apiVersion"] = "meta.k8s.io/v1"
        if dry_run:
            options["dryRun"] = list(dry_run)
        if field_manager:
            options["fieldManager"] = field_manager
        if field_validation:
            options["fieldValidation"] = field_validation
        return options
    if operation == "DELETE":
        given = delete_options or {}
        options = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}
        for key in ("gracePeriodSeconds", "preconditions", "orphanDependents", "propagationPolicy"):
            if given.get(key) is not None:
                options[key] = given[key]
        merged_dry_run = dry_run if dry_run is not None else given.get("dryRun")
        if merged_dry_run:
            options["dryRun"] = list(merged_dry_run)
        if given.get("ignoreStoreReadErrorWithClusterBreakingPotential") is not None:
            options["ignoreStoreReadErrorWithClusterBreakingPotential"] = given[
                "ignoreStoreReadErrorWithClusterBreakingPotential"
            ]
        return options
    return None


# ----------------------------------------------------------------------------------------- matching


def _selector_is_empty(selector: Any) -> bool:
    if not isinstance(selector, dict):
        return True
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def _selector_matches(selector: JSON, labels: dict[str, str]) -> bool:
    try:
        return label_selector_object_matches(selector, labels)
    except SelectorError as exc:
        # The real server fails the request when a stored selector does not parse.
        raise internal_error(str(exc)) from None


def _labels_of(obj: Any) -> dict[str, str] | None:
    if not isinstance(obj, dict):
        return None
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return {}
    labels = metadata.get("labels")
    return dict(labels) if isinstance(labels, dict) else {}


def _namespace_selector_matches(webhook: JSON, attrs: AdmissionAttributes) -> bool:
    if not attrs.namespace and attrs.resource != "namespaces":
        # Cluster-scoped objects other than namespaces are never exempted by a namespaceSelector.
        return True
    selector = webhook.get("namespaceSelector")
    if _selector_is_empty(selector):
        return True
    assert isinstance(selector, dict)
    if attrs.resource == "namespaces" and not attrs.sub_resource and attrs.operation in ("CREATE", "UPDATE"):
        # The namespace being written is not stored yet (or not in its new form): use its own labels.
        labels = _labels_of(attrs.object) or {}
    elif attrs.namespace_labels is None:
        raise not_found(_NAMESPACES, attrs.namespace)
    else:
        labels = attrs.namespace_labels
    return _selector_matches(selector, labels)


def _object_selector_matches(webhook: JSON, attrs: AdmissionAttributes) -> bool:
    selector = webhook.get("objectSelector")
    if _selector_is_empty(selector):
        return True
    assert isinstance(selector, dict)
    for candidate in (attrs.object, attrs.old_object):
        labels = _labels_of(candidate)
        if labels is not None and _selector_matches(selector, labels):
            return True
    return False


def _listed(items: Any, requested: str) -> bool:
    return isinstance(items, list) and any(item == "*" or item == requested for item in items)


def rule_matches(
    rule: JSON, attrs: AdmissionAttributes, resource: tuple[str, str, str] | None = None
) -> bool:
    """Whether one ``rules[]`` entry covers the request (optionally as another group/version/resource)."""
    group, version, plural = resource or (attrs.resource_group, attrs.resource_version, attrs.resource)
    is_namespace_object = (group, version, plural) == ("", "v1", "namespaces")
    scope = rule.get("scope") or "*"
    if scope == "Namespaced":
        # Namespace objects are cluster-scoped even though their requests carry a namespace.
        in_scope = not is_namespace_object and bool(attrs.namespace)
    elif scope == "Cluster":
        in_scope = is_namespace_object or not attrs.namespace
    else:
        in_scope = scope == "*"
    if not in_scope:
        return False
    if not _listed(rule.get("operations"), attrs.operation):
        return False
    if not _listed(rule.get("apiGroups"), group) or not _listed(rule.get("apiVersions"), version):
        return False
    for entry in rule.get("resources") or []:
        wanted_resource, _, wanted_sub = str(entry).partition("/")
        resource_ok = wanted_resource in ("*", plural)
        sub_ok = wanted_sub in ("*", attrs.sub_resource)
        if resource_ok and sub_ok:
            return True
    return False


def _equivalents(
    registry: Registry | None, attrs: AdmissionAttributes
) -> list[tuple[tuple[str, str, str], tuple[str, str, str]]]:
    """Other served versions of the requested resource (and subresource), with their kinds."""
    if registry is None:
        return []
    found: list[tuple[tuple[str, str, str], tuple[str, str, str]]] = []
    for rt in registry.all():
        if rt.key != (attrs.resource_group, attrs.resource) or rt.version == attrs.resource_version:
            continue
        if attrs.sub_resource == "scale":
            if rt.scale is None:
                continue
            kind = ("autoscaling", "v1", "Scale")
        elif attrs.sub_resource == "status":
            if not rt.has_status:
                continue
            kind = (rt.group, rt.version, rt.kind)
        elif attrs.sub_resource:
            continue
        else:
            kind = (rt.group, rt.version, rt.kind)
        found.append(((rt.group, rt.version, rt.resource), kind))
    return found


def _webhooks_in_order(configs: list[JSON]) -> list[tuple[str, int, JSON]]:
    # The real server sorts configurations by name so that serial execution is deterministic.
    ordered = sorted(configs, key=lambda c: str((c.get("metadata") or {}).get("name", "")))
    hooks: list[tuple[str, int, JSON]] = []
    for config in ordered:
        name = str((config.get("metadata") or {}).get("name", ""))
        for index, webhook in enumerate(config.get("webhooks") or []):
            if isinstance(webhook, dict):
                hooks.append((name, index, webhook))
    return hooks


def _should_call(
    configuration: str,
    index: int,
    webhook: JSON,
    attrs: AdmissionAttributes,
    *,
    mutating: bool,
    registry: Registry | None,
) -> WebhookInvocation | None:
    # Selector errors only matter for webhooks whose rules match, so they are held back until then.
    selector_error: StatusError | None = None
    for matcher in (_namespace_selector_matches, _object_selector_matches):
        try:
            if not matcher(webhook, attrs):
                return None
        except StatusError as err:
            selector_error = selector_error or err
    rules = [r for r in webhook.get("rules") or [] if isinstance(r, dict)]
    invocation: WebhookInvocation | None = None
    requested = (attrs.resource_group, attrs.resource_version, attrs.resource)
    if any(rule_matches(rule, attrs) for rule in rules):
        invocation = WebhookInvocation(
            configuration,
            index,
            webhook,
            mutating,
            requested,
            attrs.sub_resource,
            (attrs.group, attrs.version, attrs.kind),
        )
    elif (webhook.get("matchPolicy") or "Equivalent") == "Equivalent":
        equivalents = _equivalents(registry, attrs)
        for rule in rules:  # earlier rules win
            match = next((eq for eq in equivalents if rule_matches(rule, attrs, eq[0])), None)
            if match is not None:
                invocation = WebhookInvocation(
                    configuration, index, webhook, mutating, match[0], attrs.sub_resource, match[1]
                )
                break
    if invocation is None:
        return None
    if selector_error is not None:
        raise selector_error
    return invocation


def select_webhooks(
    attrs: AdmissionAttributes, configs: list[JSON], *, mutating: bool, registry: Registry | None = None
) -> list[WebhookInvocation]:
    """The webhooks of ``configs`` that would be called for ``attrs``, in calling order.

    Raises the StatusError the real server answers with when a namespaceSelector needs the labels
    of a namespace that does not exist (404 ``namespaces "x" not found``).
    """
    found: list[WebhookInvocation] = []
    for configuration, index, webhook in _webhooks_in_order(configs):
        invocation = _should_call(configuration, index, webhook, attrs, mutating=mutating, registry=registry)
        if invocation is not None:
            found.append(invocation)
    return found


# ------------------------------------------------------------------------------------ wire format


def _go_json(value: Any) -> bytes:
    """Encode like Go's json.Encoder: compact, HTML-escaped, newline-terminated."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escaped)
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return (text + "\n").encode()


def _user_info(raw: JSON) -> JSON:
    info: JSON = {}
    if raw.get("username"):
        info["username"] = raw["username"]
    if raw.get("uid"):
        info["uid"] = raw["uid"]
    if raw.get("groups"):
        info["groups"] = list(raw["groups"])
    if raw.get("extra"):
        info["extra"] = {k: list(v) for k, v in raw["extra"].items()}
    return info


_SCALE_KIND = ("autoscaling", "v1", "Scale")


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(item) for item in value]
    return value


def wire_form(obj: JSON, attrs: AdmissionAttributes, kind: tuple[str, str, str]) -> JSON:
    """``obj`` with its keys in the order the real server encodes it into an AdmissionReview.

    Built-in objects (and autoscaling/v1 Scale) are Go structs and come out in struct order;
    custom resources are held as nested maps, which Go's encoder writes with sorted keys at
    every level.
    """
    if kind == _SCALE_KIND:
        return order_scale(obj)
    probe = ResourceType(
        attrs.resource_group,
        attrs.resource_version,
        attrs.resource,
        attrs.kind,
        "",
        bool(attrs.namespace),
        builtin=True,
    )
    if struct_of(probe) is not None:
        return order_builtin(probe, obj)
    ordered: JSON = _sorted_keys(obj)
    return ordered


def _with_api_version(
    obj: JSON | None, attrs: AdmissionAttributes, kind: tuple[str, str, str]
) -> JSON | None:
    """The object as the webhook's version sees it (apiVersion rewrite only, see module docstring)."""
    if obj is None or kind == (attrs.group, attrs.version, attrs.kind):
        return obj
    converted = dict(obj)
    converted["apiVersion"] = f"{kind[0]}/{kind[1]}" if kind[0] else kind[1]
    return converted


def _back_to_request_version(obj: JSON, attrs: AdmissionAttributes) -> JSON:
    if "apiVersion" in obj:
        obj["apiVersion"] = f"{attrs.group}/{attrs.version}" if attrs.group else attrs.version
    return obj


def admission_review(
    uid: str, review_version: str, invocation: WebhookInvocation, attrs: AdmissionAttributes
) -> JSON:
    """The AdmissionReview request body, field for field in the real server's order."""
    group, version, resource = invocation.resource
    kind_group, kind_version, kind = invocation.kind
    request: JSON = {
        "uid": uid,
        "kind": {"group": kind_group, "version": kind_version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource},
    }
    if invocation.sub_resource:
        request["subResource"] = invocation.sub_resource
    request["requestKind"] = {"group": attrs.group, "version": attrs.version, "kind": attrs.kind}
    request["requestResource"] = {
        "group": attrs.resource_group,
        "version": attrs.resource_version,
        "resource": attrs.resource,
    }
    if attrs.sub_resource:
        request["requestSubResource"] = attrs.sub_resource
    if attrs.name:
        request["name"] = attrs.name
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    request["operation"] = attrs.operation
    request["userInfo"] = _user_info(attrs.user_info)
    for key, obj in (("object", attrs.object), ("oldObject", attrs.old_object)):
        converted = _with_api_version(obj, attrs, invocation.kind)
        request[key] = None if converted is None else wire_form(converted, attrs, invocation.kind)
    request["dryRun"] = attrs.dry_run
    request["options"] = attrs.options
    return {
        "kind": "AdmissionReview",
        "apiVersion": f"{ADMISSION_GROUP}/{review_version}",
        "request": request,
    }


# ---------------------------------------------------------------------------------- call failures


class _CallFailure(Exception):
    """The webhook could not be called or answered nonsense (``ErrCallingWebhook``): failurePolicy applies."""

    def __init__(self, webhook_name: str, reason: str) -> None:
        self.message = f"failed calling webhook {go_quote(webhook_name)}: {reason}"
        super().__init__(self.message)


class _CallError(Exception):
    """What Go's HTTP client would report for a failed request, already worded."""


def denial(webhook_name: str, status: Any) -> StatusError:
    """A webhook's ``allowed: false`` answer as the client sees it."""
    result = dict(status) if isinstance(status, dict) else {}
    code = result.get("code")
    code = code if isinstance(code, int) and code >= 400 else 400
    reason = str(result.get("reason") or "")
    message = str(result.get("message") or "")
    denied_by = f"admission webhook {go_quote(webhook_name)} denied the request"
    if message:
        text = f"{denied_by}: {message}"
    elif reason:
        text = f"{denied_by}: {reason}"
    else:
        text = f"{denied_by} without explanation"
    details = result.get("details") if isinstance(result.get("details"), dict) else None
    return StatusError(code, reason or None, text, details)


def _dry_run_unsupported(webhook_name: str) -> StatusError:
    return StatusError(
        400, "BadRequest", f"admission webhook {go_quote(webhook_name)} does not support dry run"
    )


# client-go's wording for HTTP errors whose body is not a Status (NewGenericServerResponse).
_GENERIC_MESSAGES = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, "
    "but may still be processing the request",
}


def _unexpected_status_message(code: int, server_message: str) -> str:
    if code in (403,):
        return server_message
    if code == 406 and server_message in ("", "unknown"):
        return "the server was unable to respond with a content type that the client supports"
    if code in (406, 415):
        return server_message
    if code in _GENERIC_MESSAGES:
        return _GENERIC_MESSAGES[code]
    if code >= 500:
        return (
            f"an error on the server ({go_quote(server_message)}) has prevented the request from succeeding"
        )
    return f"the server responded with the status code {code} but did not return more information"


def _parse_body(media_type: str, body: bytes) -> Any:
    text = body.decode("utf-8", errors="replace")
    if media_type == "application/yaml":
        return yaml.safe_load(text)
    return json.loads(text)


def _decode_webhook_answer(status: int, content_type: str, body: bytes) -> Any:
    """Turn the webhook's HTTP answer into the decoded review, or raise _CallError as client-go would."""
    effective_type = content_type or "application/json"
    media_type = effective_type.split(";", 1)[0].strip().lower()
    decodable = media_type in ("application/json", "application/yaml")
    successful = 200 <= status <= 206
    if not successful:
        is_text = not content_type or media_type.startswith("text/")
        server_message = body.decode("utf-8", errors="replace").strip() if is_text else "unknown"
        if decodable and body:
            # A Status body with status Failure is preferred over the generic wording.
            with contextlib.suppress(ValueError, yaml.YAMLError):
                decoded = _parse_body(media_type, body)
                if (
                    isinstance(decoded, dict)
                    and decoded.get("kind") == "Status"
                    and decoded.get("status") == "Failure"
                ):
                    raise _CallError(str(decoded.get("message", "")))
        raise _CallError(_unexpected_status_message(status, server_message))
    if not decodable:
        raise _CallError(f"serializer for {effective_type} doesn't exist")
    if not body:
        raise _CallError(f"0-length response with status code: {status} and content type: {effective_type}")
    try:
        decoded = _parse_body(media_type, body)
    except (ValueError, yaml.YAMLError) as exc:
        raise _CallError(f"couldn't get version/kind; json parse error: {exc}") from None
    if not isinstance(decoded, dict):
        raise _CallError(
            f"couldn't get version/kind; json parse error: json: cannot unmarshal "
            f"{_json_type_name(decoded)} into Go value of type struct"
        )
    if decoded.get("kind") == "Status" and decoded.get("apiVersion") == "v1":
        if decoded.get("status") != "Success":
            raise _CallError(str(decoded.get("message", "")))
        return {}
    return decoded


def _json_type_name(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "null"


def _parse_group_version(api_version: str) -> tuple[str, str]:
    if "/" in api_version:
        group, _, version = api_version.partition("/")
        return group, version
    return "", api_version


@dataclass
class _Answer:
    allowed: bool
    patch: bytes | None
    patch_type: str
    status: Any
    warnings: list[str]


def _verify_answer(review: JSON, uid: str, review_version: str, *, mutating: bool) -> _Answer:
    """Check a decoded AdmissionReview answer (VerifyAdmissionResponse); ValueError says what is wrong."""
    response = review.get("response")
    if not isinstance(response, dict):
        raise ValueError("webhook response was absent")
    raw_patch = response.get("patch")
    patch: bytes | None = None
    if raw_patch:
        try:
            patch = base64.b64decode(str(raw_patch), validate=True)
        except (binascii.Error, ValueError):
            raise _CallError("illegal base64 data at input byte 0") from None
    patch_type = response.get("patchType")
    if review_version == "v1":
        got_uid = str(response.get("uid", ""))
        if got_uid != uid:
            raise ValueError(f"expected response.uid={go_quote(uid)}, got {go_quote(got_uid)}")
        group, version = _parse_group_version(str(review.get("apiVersion", "")))
        kind = str(review.get("kind", ""))
        if (group, version, kind) != (ADMISSION_GROUP, "v1", "AdmissionReview"):
            raise ValueError(
                f"expected webhook response of {ADMISSION_GROUP}/v1, Kind=AdmissionReview, "
                f"got {group}/{version}, Kind={kind}"
            )
        if mutating:
            if patch and patch_type is None:
                raise ValueError("webhook returned response.patch but not response.patchType")
            if not patch and patch_type is not None:
                raise ValueError("webhook returned response.patchType but not response.patch")
            if patch_type is not None and not patch_type:
                raise ValueError(f"webhook returned invalid response.patchType of {go_quote('')}")
        else:
            if patch:
                raise ValueError("validating webhook may not return response.patch")
            if patch_type is not None:
                raise ValueError("validating webhook may not return response.patchType")
    else:
        # v1beta1 answers were never checked for uid/kind; a patch is always a JSON patch.
        patch_type = "JSONPatch" if patch and mutating else ""
        if not mutating:
            patch = None
    warnings = [str(w) for w in response.get("warnings") or [] if w]
    return _Answer(
        bool(response.get("allowed")), patch, str(patch_type or ""), response.get("status"), warnings
    )


# --------------------------------------------------------------------------------- JSON patches


def _apply_json_patch(document: JSON, operations: list[Any]) -> Any:
    """Apply a webhook's JSON patch, failing with the wording of the Go json-patch library."""
    current: Any = document
    for operation in operations:
        if not isinstance(operation, dict):
            raise ValueError("invalid operation")
        op = str(operation.get("op", ""))
        path = str(operation.get("path", ""))
        try:
            current = jsonpatch.JsonPatch([operation]).apply(current, in_place=False)
        except jsonpatch.JsonPatchTestFailed:
            raise ValueError(f"testing value {path} failed: test failed") from None
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            if op == "add":
                raise ValueError(
                    f"add operation does not apply: doc is missing path: {go_quote(path)}: missing value"
                ) from None
            if op == "remove":
                key = path.rsplit("/", 1)[-1]
                raise ValueError(
                    f"error in remove for path: '{path}': "
                    f"Unable to remove nonexistent key: {key}: missing value"
                ) from None
            if op == "replace":
                raise ValueError(
                    f"replace operation does not apply: doc is missing key: {path}: missing value"
                ) from None
            if op not in ("move", "copy", "test"):
                raise ValueError(f"Unexpected kind: {op}") from None
            raise ValueError(str(exc)) from None
    return current


# ----------------------------------------------------------------------------------- the caller


@dataclass(frozen=True)
class _Endpoint:
    display_url: str  # the URL as Go prints it in errors, including ?timeout=
    connect_url: str  # where aiohttp connects
    server_hostname: str | None
    host_header: str | None
    dial_host: str
    dial_port: int
    tls: bool


def _go_clean_path(path: str) -> str:
    cleaned = posixpath.normpath("/" + path) if path else "/"
    # normpath keeps a leading "//"; Go's path.Clean collapses it.
    return re.sub(r"^/+", "/", cleaned)


def _join_host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class Admission:
    """Calls admission webhooks over HTTPS the way kube-apiserver does."""

    def __init__(
        self, resolve_service: ServiceResolver | None = None, *, registry: Registry | None = None
    ) -> None:
        self._resolve_service = resolve_service
        self._registry = registry
        self._session: aiohttp.ClientSession | None = None
        self._tls_contexts: dict[bytes, ssl.SSLContext] = {}

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # A fresh connection per call: webhook servers in tests come and go, and a pooled
            # connection to a stopped server would fail differently from a refused dial.
            connector = aiohttp.TCPConnector(force_close=True, use_dns_cache=False)
            self._session = aiohttp.ClientSession(connector=connector)
        return self._session

    # ------------------------------------------------------------------------------ public API

    async def mutate(
        self, attrs: AdmissionAttributes, configs: list[JSON], *, warnings: Warnings | None = None
    ) -> tuple[JSON | None, list[str]]:
        """Run the matching mutating webhooks; return the mutated object and the webhooks' warnings.

        When no webhook changed anything the object returned is ``attrs.object`` itself, so the
        caller can tell by identity that its own object (and references into it) still stand.

        ``warnings``, when given, receives each warning as it arrives so that warnings survive a
        later denial (the real server sends them with error responses too).
        """
        collected: list[str] = []
        current = copy.deepcopy(attrs.object)
        hooks = _webhooks_in_order(configs)
        invoked_reinvocable: set[tuple[str, int]] = set()
        to_reinvoke: set[tuple[str, int]] = set()
        anything_changed = False
        for round_number in (0, 1):
            if round_number == 1 and not (anything_changed and to_reinvoke):
                break
            for configuration, index, webhook in hooks:
                view = replace(attrs, object=current)
                invocation = _should_call(
                    configuration, index, webhook, view, mutating=True, registry=self._registry
                )
                if invocation is None:
                    continue
                # A webhook skipped in the first round is never called for the first time on reinvocation.
                if round_number == 1 and invocation.key not in to_reinvoke:
                    continue
                changed = False
                failure: _CallFailure | None = None
                try:
                    changed, current = await self._call_mutating(invocation, view, collected, warnings)
                except _CallFailure as err:
                    failure = err
                if changed:
                    to_reinvoke |= invoked_reinvocable
                    invoked_reinvocable.clear()
                    anything_changed = True
                if invocation.reinvocable:
                    invoked_reinvocable.add(invocation.key)
                if failure is not None and not invocation.ignores_failures:
                    raise internal_error(failure.message)
        if current == attrs.object:
            return attrs.object, collected
        return current, collected

    async def validate(
        self, attrs: AdmissionAttributes, configs: list[JSON], *, warnings: Warnings | None = None
    ) -> list[str]:
        """Run the matching validating webhooks concurrently; return their warnings, raise the first error."""
        invocations = select_webhooks(attrs, configs, mutating=False, registry=self._registry)
        if not invocations:
            return []
        collected: list[str] = []
        errors_in_arrival_order: list[StatusError] = []

        async def run(invocation: WebhookInvocation) -> None:
            try:
                answer = await self._call(invocation, attrs, collected, warnings)
            except _CallFailure as failure:
                if not invocation.ignores_failures:
                    errors_in_arrival_order.append(internal_error(failure.message))
                return
            except StatusError as err:
                errors_in_arrival_order.append(err)
                return
            if not answer.allowed:
                errors_in_arrival_order.append(denial(invocation.name, answer.status))

        await asyncio.gather(*(run(invocation) for invocation in invocations))
        if errors_in_arrival_order:
            raise errors_in_arrival_order[0]
        return collected

    # ------------------------------------------------------------------------------- internals

    async def _call_mutating(
        self,
        invocation: WebhookInvocation,
        attrs: AdmissionAttributes,
        collected: list[str],
        sink: Warnings | None,
    ) -> tuple[bool, JSON | None]:
        answer = await self._call(invocation, attrs, collected, sink)
        if not answer.allowed:
            raise denial(invocation.name, answer.status)
        if not answer.patch:
            return False, attrs.object
        try:
            operations = json.loads(answer.patch)
        except ValueError as exc:
            raise _CallFailure(
                invocation.name, f"received undecodable patch in webhook response: {exc}"
            ) from None
        if not isinstance(operations, list):
            raise _CallFailure(
                invocation.name,
                "received undecodable patch in webhook response: json: cannot unmarshal "
                f"{_json_type_name(operations)} into Go value of type jsonpatch.Patch",
            )
        if not operations:
            return False, attrs.object
        if attrs.object is None:
            raise internal_error(
                f"admission webhook {go_quote(invocation.name)} attempted to modify the object, "
                "which is not supported for this operation"
            )
        if answer.patch_type != "JSONPatch":
            raise _CallFailure(invocation.name, f"unsupported patch type {go_quote(answer.patch_type)}")
        before = _with_api_version(attrs.object, attrs, invocation.kind)
        assert before is not None
        try:
            patched = _apply_json_patch(before, operations)
        except ValueError as exc:
            raise internal_error(str(exc)) from None
        if not isinstance(patched, dict):
            raise internal_error("Object 'Kind' is missing in the patched object")
        patched = _back_to_request_version(patched, attrs) if before is not attrs.object else patched
        if attrs.defaulter is not None:
            patched = copy.deepcopy(patched)
            attrs.defaulter(patched)
        return patched != attrs.object, patched

    async def _call(
        self,
        invocation: WebhookInvocation,
        attrs: AdmissionAttributes,
        collected: list[str],
        sink: Warnings | None,
    ) -> _Answer:
        webhook = invocation.webhook
        name = invocation.name
        if attrs.dry_run:
            side_effects = webhook.get("sideEffects")
            if side_effects is None:
                raise _CallFailure(name, "Webhook SideEffects is nil")
            if side_effects not in ("None", "NoneOnDryRun"):
                raise _dry_run_unsupported(name)
        review_version = next(
            (v for v in webhook.get("admissionReviewVersions") or [] if v in KNOWN_REVIEW_VERSIONS), None
        )
        if review_version is None:
            raise _CallFailure(
                name,
                "could not create admission objects: webhook does not accept known AdmissionReview "
                "versions (v1, v1beta1)",
            )
        timeout = webhook.get("timeoutSeconds")
        timeout = timeout if isinstance(timeout, int) and timeout > 0 else DEFAULT_TIMEOUT_SECONDS
        tls_context = self._tls_context(webhook)
        if isinstance(tls_context, str):
            raise _CallFailure(name, f"could not get REST client: {tls_context}")
        uid = str(uuid.uuid4())
        body = _go_json(admission_review(uid, review_version, invocation, attrs))
        try:
            async with asyncio.timeout(timeout):
                endpoint = self._endpoint(webhook, timeout)
                status, content_type, raw = await self._post(endpoint, body, tls_context)
        except _CallError as exc:
            raise _CallFailure(name, f"failed to call webhook: {exc}") from None
        except TimeoutError:
            display = self._display_url(webhook, timeout)
            raise _CallFailure(
                name, f"failed to call webhook: Post {go_quote(display)}: context deadline exceeded"
            ) from None
        try:
            review = _decode_webhook_answer(status, content_type, raw)
            answer = _verify_answer(review, uid, review_version, mutating=invocation.mutating)
        except _CallError as exc:
            raise _CallFailure(name, f"failed to call webhook: {exc}") from None
        except ValueError as exc:
            raise _CallFailure(name, f"received invalid webhook response: {exc}") from None
        for message in answer.warnings:
            collected.append(message)
            if sink is not None:
                sink.add(message)
        return answer

    def _tls_context(self, webhook: JSON) -> ssl.SSLContext | str:
        """The client TLS context trusting the webhook's caBundle (system roots without one)."""
        raw_bundle = (webhook.get("clientConfig") or {}).get("caBundle") or ""
        try:
            bundle = base64.b64decode(raw_bundle) if raw_bundle else b""
        except (binascii.Error, ValueError):
            bundle = raw_bundle.encode() if isinstance(raw_bundle, str) else b""
        cached = self._tls_contexts.get(bundle)
        if cached is not None:
            return cached
        try:
            if bundle:
                context = ssl.create_default_context(cadata=bundle.decode("ascii", errors="replace"))
            else:
                context = ssl.create_default_context()
        except (ssl.SSLError, ValueError):
            return "unable to load root certificates: unable to parse bytes as PEM block"
        # Go verifies SANs only and is not as strict as OpenSSL's X509_STRICT mode.
        context.hostname_checks_common_name = False
        context.verify_flags &= ~getattr(ssl, "VERIFY_X509_STRICT", 0)
        context.set_alpn_protocols(["http/1.1"])
        self._tls_contexts[bundle] = context
        return context

    def _display_url(self, webhook: JSON, timeout: int) -> str:
        client = webhook.get("clientConfig") or {}
        service = client.get("service")
        if isinstance(service, dict):
            port = int(service.get("port") or DEFAULT_SERVICE_PORT)
            server_name = f"{service.get('name', '')}.{service.get('namespace', '')}.svc"
            base = f"https://{_join_host_port(server_name, port)}"
            path = _go_clean_path(str(service.get("path") or ""))
        else:
            parts = urlsplit(str(client.get("url") or ""))
            base = f"{parts.scheme}://{parts.netloc}"
            path = _go_clean_path(parts.path)
        return f"{base}{path}?timeout={timeout}s"

    def _endpoint(self, webhook: JSON, timeout: int) -> _Endpoint:
        client = webhook.get("clientConfig") or {}
        display = self._display_url(webhook, timeout)
        service = client.get("service")
        query = f"?timeout={timeout}s"
        if isinstance(service, dict):
            namespace = str(service.get("namespace", ""))
            name = str(service.get("name", ""))
            port = int(service.get("port") or DEFAULT_SERVICE_PORT)
            server_name = f"{name}.{namespace}.svc"
            if self._resolve_service is None:
                raise _CallError(f"Post {go_quote(display)}: service {go_quote(name)} not found")
            try:
                host, target_port = self._resolve_service(namespace, name, port)
            except (LookupError, OSError) as exc:
                # The real resolver's wording for an unknown service is the default.
                reason = str(exc.args[0]) if exc.args else f"service {go_quote(name)} not found"
                raise _CallError(f"Post {go_quote(display)}: {reason}") from None
            path = _go_clean_path(str(service.get("path") or ""))
            return _Endpoint(
                display_url=display,
                connect_url=f"https://{_join_host_port(host, target_port)}{path}{query}",
                server_hostname=server_name,
                host_header=_join_host_port(server_name, port),
                dial_host=host,
                dial_port=target_port,
                tls=True,
            )
        parts = urlsplit(str(client.get("url") or ""))
        tls = parts.scheme != "http"
        host = parts.hostname or ""
        port = parts.port or (443 if tls else 80)
        path = _go_clean_path(parts.path)
        return _Endpoint(
            display_url=display,
            connect_url=f"{parts.scheme}://{parts.netloc}{path}{query}",
            server_hostname=None,
            host_header=None,
            dial_host=host,
            dial_port=port,
            tls=tls,
        )

    async def _post(
        self, endpoint: _Endpoint, body: bytes, tls_context: ssl.SSLContext
    ) -> tuple[int, str, bytes]:
        headers = {
            "User-Agent": ADMISSION_USER_AGENT,
            "Accept": "application/json, */*",
            "Content-Type": "application/json",
        }
        if endpoint.host_header:
            headers["Host"] = endpoint.host_header
        request_options: dict[str, Any] = {}
        if endpoint.server_hostname:
            request_options["server_hostname"] = endpoint.server_hostname
        try:
            async with self._http().post(
                endpoint.connect_url,
                data=body,
                headers=headers,
                ssl=tls_context if endpoint.tls else False,
                allow_redirects=False,
                **request_options,
            ) as response:
                raw = await response.read()
                return response.status, response.headers.get("Content-Type", ""), raw
        except aiohttp.ClientConnectorCertificateError as exc:
            reason = await self._certificate_problem(endpoint, exc.certificate_error)
            raise _CallError(f"Post {go_quote(endpoint.display_url)}: {reason}") from None
        except (aiohttp.ClientConnectorError, aiohttp.ClientSSLError, ssl.SSLError) as exc:
            reason = await self._dial_problem(endpoint, exc)
            raise _CallError(f"Post {go_quote(endpoint.display_url)}: {reason}") from None
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError):
            raise _CallError(f"Post {go_quote(endpoint.display_url)}: EOF") from None
        except aiohttp.ClientOSError as exc:
            reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
            raise _CallError(f"Post {go_quote(endpoint.display_url)}: {reason}") from None
        except aiohttp.ClientError as exc:
            raise _CallError(f"Post {go_quote(endpoint.display_url)}: {exc}") from None

    async def _dial_address(self, endpoint: _Endpoint) -> str:
        host = endpoint.dial_host
        if not _is_ip(host):
            # Go reports the address it dialled, not the name.
            with contextlib.suppress(OSError):
                infos = await asyncio.get_running_loop().getaddrinfo(
                    host, endpoint.dial_port, type=socket.SOCK_STREAM
                )
                if infos:
                    host = str(infos[0][4][0])
        return _join_host_port(host, endpoint.dial_port)

    async def _dial_problem(self, endpoint: _Endpoint, exc: Exception) -> str:
        os_error = getattr(exc, "os_error", None)
        error: BaseException = os_error if isinstance(os_error, BaseException) else exc
        if isinstance(error, socket.gaierror) or type(exc).__name__ == "ClientConnectorDNSError":
            return f"dial tcp: lookup {endpoint.dial_host}: no such host"
        if isinstance(error, ssl.SSLError):
            if "WRONG_VERSION_NUMBER" in str(error) or "record layer failure" in str(error):
                return "http: server gave HTTP response to HTTPS client"
            return f"remote error: tls: {error.reason or error}".lower()
        address = await self._dial_address(endpoint)
        if isinstance(error, OSError) and error.errno:
            return f"dial tcp {address}: connect: {os.strerror(error.errno).lower()}"
        return f"dial tcp {address}: {error}"

    async def _certificate_problem(self, endpoint: _Endpoint, error: Exception) -> str:
        code = getattr(error, "verify_code", 0)
        prefix = "tls: failed to verify certificate: "
        hostname = endpoint.server_hostname or endpoint.dial_host
        if code in (62, 64):  # X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH
            cert = await self._peek_certificate(endpoint)
            return prefix + (
                _hostname_error(cert, hostname) if cert else f"x509: certificate is not valid for {hostname}"
            )
        if code in (9, 10):  # not yet valid, expired
            cert = await self._peek_certificate(endpoint)
            now = datetime.now(UTC).replace(microsecond=0)
            if cert is not None:
                if code == 10:
                    bound = f"is after {_rfc3339(cert.not_valid_after_utc)}"
                else:
                    bound = f"is before {_rfc3339(cert.not_valid_before_utc)}"
                return (
                    f"{prefix}x509: certificate has expired or is not yet valid: "
                    f"current time {_rfc3339(now)} {bound}"
                )
            return f"{prefix}x509: certificate has expired or is not yet valid"
        return prefix + "x509: certificate signed by unknown authority"

    async def _peek_certificate(self, endpoint: _Endpoint) -> x509.Certificate | None:
        """Fetch the server certificate without verifying it, to word a verification failure."""
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        try:
            async with asyncio.timeout(2):
                _, writer = await asyncio.open_connection(
                    endpoint.dial_host,
                    endpoint.dial_port,
                    ssl=context,
                    server_hostname=endpoint.server_hostname
                    or (None if _is_ip(endpoint.dial_host) else endpoint.dial_host),
                )
                ssl_object = writer.get_extra_info("ssl_object")
                der = ssl_object.getpeercert(binary_form=True) if ssl_object else None
                writer.close()
                with contextlib.suppress(OSError, ssl.SSLError):
                    await writer.wait_closed()
        except (OSError, ssl.SSLError, TimeoutError):
            return None
        return x509.load_der_x509_certificate(der) if der else None


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _hostname_error(cert: x509.Certificate, host: str) -> str:
    """Go's x509.HostnameError wording."""
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        dns_names = [str(n) for n in sans.get_values_for_type(x509.DNSName)]
        ips = [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)]
    except x509.ExtensionNotFound:
        dns_names, ips = [], []
    if _is_ip(host):
        if not ips:
            return f"x509: cannot validate certificate for {host} because it doesn't contain any IP SANs"
        valid = ", ".join(ips)
    else:
        valid = ", ".join(dns_names)
    if not valid:
        return f"x509: certificate is not valid for any names, but wanted to match {host}"
    return f"x509: certificate is valid for {valid}, not {host}"


# ------------------------------------------------------------------------ configuration objects


def _validate_label_selector(selector: Any, path: str) -> list[FieldError]:
    if not isinstance(selector, dict):
        return []
    errs: list[FieldError] = []
    match_labels = selector.get("matchLabels") or {}
    for key in sorted(match_labels):
        errs.extend(invalid(f"{path}.matchLabels", key, msg) for msg in qualified_name_errors(key))
        value = str(match_labels[key])
        errs.extend(invalid(f"{path}.matchLabels", value, msg) for msg in label_value_errors(value))
    for i, requirement in enumerate(selector.get("matchExpressions") or []):
        req_path = f"{path}.matchExpressions[{i}]"
        operator = requirement.get("operator", "")
        values = requirement.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                errs.append(
                    required(f"{req_path}.values", "must be specified when `operator` is 'In' or 'NotIn'")
                )
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errs.append(
                    forbidden(
                        f"{req_path}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errs.append(invalid(f"{req_path}.operator", operator, "not a valid selector operator"))
        key = str(requirement.get("key", ""))
        errs.extend(invalid(f"{req_path}.key", key, msg) for msg in qualified_name_errors(key))
        for j, value in enumerate(values):
            errs.extend(
                invalid(f"{req_path}.values[{j}]", value, msg) for msg in label_value_errors(str(value))
            )
    return errs


def _has_wildcard(values: list[Any]) -> bool:
    return "*" in values


def _validate_resources(resources: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not resources:
        errs.append(required(path, ""))
    with_wildcard_sub: set[str] = set()
    with_wildcard_resource: set[str] = set()
    has_double_wildcard = False
    has_single_wildcard = False
    has_plain_resource = False
    for i, entry in enumerate(resources):
        entry = str(entry)
        if not entry:
            errs.append(required(f"{path}[{i}]", ""))
            continue
        if entry == "*/*":
            has_double_wildcard = True
        if entry == "*":
            has_single_wildcard = True
        if "/" not in entry:
            has_plain_resource = entry != "*"
            continue
        resource, sub = entry.split("/", 1)
        if resource in with_wildcard_sub:
            errs.append(
                invalid(f"{path}[{i}]", entry, f"if '{resource}/*' is present, must not specify {entry}")
            )
        if sub in with_wildcard_resource:
            errs.append(invalid(f"{path}[{i}]", entry, f"if '*/{sub}' is present, must not specify {entry}"))
        if sub == "*":
            with_wildcard_sub.add(resource)
        if resource == "*":
            with_wildcard_resource.add(sub)
    if len(resources) > 1 and has_double_wildcard:
        errs.append(
            invalid(path, go_strings(resources), "if '*/*' is present, must not specify other resources")
        )
    if has_single_wildcard and has_plain_resource:
        errs.append(
            invalid(
                path,
                go_strings(resources),
                "if '*' is present, must not specify other resources without subresources",
            )
        )
    return errs


_OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]
_SCOPES = ["*", "Cluster", "Namespaced"]


def _validate_rule(rule: JSON, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    operations = list(rule.get("operations") or [])
    if not operations:
        errs.append(required(f"{path}.operations", ""))
    if len(operations) > 1 and _has_wildcard(operations):
        errs.append(
            invalid(
                f"{path}.operations",
                go_strings(operations),
                "if '*' is present, must not specify other operations",
            )
        )
    for i, operation in enumerate(operations):
        if operation not in _OPERATIONS:
            errs.append(not_supported(f"{path}.operations[{i}]", operation, _OPERATIONS))
    groups = list(rule.get("apiGroups") or [])
    if not groups:
        errs.append(required(f"{path}.apiGroups", ""))
    if len(groups) > 1 and _has_wildcard(groups):
        errs.append(
            invalid(
                f"{path}.apiGroups",
                go_strings(groups),
                "if '*' is present, must not specify other API groups",
            )
        )
    versions = list(rule.get("apiVersions") or [])
    if not versions:
        errs.append(required(f"{path}.apiVersions", ""))
    if len(versions) > 1 and _has_wildcard(versions):
        errs.append(
            invalid(
                f"{path}.apiVersions",
                go_strings(versions),
                "if '*' is present, must not specify other API versions",
            )
        )
    for i, version in enumerate(versions):
        if not version:
            errs.append(required(f"{path}.apiVersions[{i}]", ""))
    errs.extend(_validate_resources(list(rule.get("resources") or []), f"{path}.resources"))
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errs.append(not_supported(f"{path}.scope", scope, _SCOPES))
    return errs


def _validate_url(url: str, path: str) -> list[FieldError]:
    form = "; desired format: https://host[/path]"
    errs: list[FieldError] = []
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
    except ValueError as exc:
        return [required(path, f"url must be a valid URL: {exc}{form}")]
    if parts.scheme != "https":
        errs.append(invalid(path, parts.scheme, "'https' is the only allowed URL scheme" + form))
    host = netloc.rsplit("@", 1)[-1]
    if not host:
        errs.append(invalid(path, host, "host must be specified" + form))
    if "@" in netloc:
        errs.append(invalid(path, netloc.rsplit("@", 1)[0], "user information is not permitted in the URL"))
    if parts.fragment:
        errs.append(invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        errs.append(invalid(path, parts.query, "query parameters are not permitted in the URL"))
    return errs


def _validate_service(service: JSON, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not service.get("name"):
        errs.append(required(f"{path}.name", "service name is required"))
    if not service.get("namespace"):
        errs.append(required(f"{path}.namespace", "service namespace is required"))
    port = service.get("port", DEFAULT_SERVICE_PORT)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        errs.append(
            invalid(f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive")
        )
    url_path = service.get("path")
    if url_path is None or url_path in ("", "/"):
        return errs
    url_path = str(url_path)
    if url_path == "//":
        return [*errs, invalid(f"{path}.path", url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        errs.append(invalid(f"{path}.path", url_path, "must start with a '/'"))
    to_check = url_path[1:]
    if to_check.endswith("/"):
        to_check = to_check[:-1]
    for i, step in enumerate(to_check.split("/")):
        if not step:
            errs.append(invalid(f"{path}.path", url_path, f"segment[{i}] may not be empty"))
            continue
        errs.extend(
            invalid(f"{path}.path", url_path, f"segment[{i}]: {msg}")
            for msg in dns1123_subdomain_errors(step)
        )
    return errs


def _validate_match_conditions(conditions: list[Any], path: str) -> list[FieldError]:
    if len(conditions) > 64:
        return [FieldError("TooMany", path, len(conditions), "must have at most 64 items")]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, condition in enumerate(conditions):
        condition = condition if isinstance(condition, dict) else {}
        if not str(condition.get("expression") or "").strip():
            errs.append(required(f"{path}[{i}].expression", ""))
        name = str(condition.get("name") or "")
        if not name:
            errs.append(required(f"{path}[{i}].name", ""))
        else:
            errs.extend(invalid(f"{path}[{i}].name", name, msg) for msg in qualified_name_errors(name))
            if name in seen:
                errs.append(FieldError("Duplicate", f"{path}[{i}].name", name))
            seen.add(name)
    return errs


def _validate_review_versions(versions: Any, path: str) -> list[FieldError]:
    accepted = ", ".join(KNOWN_REVIEW_VERSIONS)
    if not versions:
        return [required(path, f"must specify one of {accepted}")]
    errs: list[FieldError] = []
    seen: set[str] = set()
    has_known = False
    for i, version in enumerate(versions):
        version = str(version)
        if version in seen:
            errs.append(invalid(f"{path}[{i}]", version, "duplicate version"))
            continue
        seen.add(version)
        errs.extend(invalid(f"{path}[{i}]", version, msg) for msg in dns1035_label_errors(version))
        has_known = has_known or version in KNOWN_REVIEW_VERSIONS
    if not has_known:
        errs.append(invalid(path, go_strings(list(versions)), f"must include at least one of {accepted}"))
    return errs


def _validate_webhook(webhook: JSON, path: str, *, mutating: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    name = str(webhook.get("name") or "")
    if not name:
        errs.append(required(f"{path}.name", ""))
    elif subdomain_errors := dns1123_subdomain_errors(name):
        errs.append(invalid(f"{path}.name", name, ",".join(subdomain_errors)))
    elif len(name.split(".")) < 3:
        errs.append(
            invalid(f"{path}.name", name, "should be a domain with at least three segments separated by dots")
        )
    for i, rule in enumerate(webhook.get("rules") or []):
        errs.extend(_validate_rule(rule if isinstance(rule, dict) else {}, f"{path}.rules[{i}]"))
    failure_policy = webhook.get("failurePolicy")
    if failure_policy is not None and failure_policy not in ("Fail", "Ignore"):
        errs.append(not_supported(f"{path}.failurePolicy", failure_policy, ["Fail", "Ignore"]))
    match_policy = webhook.get("matchPolicy")
    if match_policy is not None and match_policy not in ("Equivalent", "Exact"):
        errs.append(not_supported(f"{path}.matchPolicy", match_policy, ["Equivalent", "Exact"]))
    side_effects = webhook.get("sideEffects")
    if side_effects is None:
        errs.append(required(f"{path}.sideEffects", "must specify one of None, NoneOnDryRun"))
    elif side_effects not in ("None", "NoneOnDryRun"):
        errs.append(not_supported(f"{path}.sideEffects", side_effects, ["None", "NoneOnDryRun"]))
    timeout = webhook.get("timeoutSeconds")
    if timeout is not None and (not isinstance(timeout, int) or not 1 <= timeout <= 30):
        errs.append(
            invalid(f"{path}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 seconds")
        )
    errs.extend(_validate_label_selector(webhook.get("namespaceSelector"), f"{path}.namespaceSelector"))
    errs.extend(_validate_label_selector(webhook.get("objectSelector"), f"{path}.objectSelector"))
    if mutating:
        policy = webhook.get("reinvocationPolicy")
        if policy is not None and policy not in ("IfNeeded", "Never"):
            errs.append(not_supported(f"{path}.reinvocationPolicy", policy, ["IfNeeded", "Never"]))
    client = webhook.get("clientConfig") or {}
    url, service = client.get("url"), client.get("service")
    if (url is None) == (service is None):
        errs.append(required(f"{path}.clientConfig", "exactly one of url or service is required"))
    elif url is not None:
        errs.extend(_validate_url(str(url), f"{path}.clientConfig.url"))
    else:
        errs.extend(
            _validate_service(service if isinstance(service, dict) else {}, f"{path}.clientConfig.service")
        )
    errs.extend(
        _validate_match_conditions(list(webhook.get("matchConditions") or []), f"{path}.matchConditions")
    )
    return errs


def validate_webhook_configuration(obj: JSON, mutating: bool) -> list[FieldError]:
    """Field errors of a (defaulted) webhook configuration's ``webhooks``, in the real server's order.

    Metadata (the object name) is validated by the generic layer, not here.
    """
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, webhook in enumerate(obj.get("webhooks") or []):
        webhook = webhook if isinstance(webhook, dict) else {}
        errs.extend(_validate_webhook(webhook, f"webhooks[{i}]", mutating=mutating))
        errs.extend(
            _validate_review_versions(
                webhook.get("admissionReviewVersions"), f"webhooks[{i}].admissionReviewVersions"
            )
        )
        name = str(webhook.get("name") or "")
        if name:
            if name in names:
                errs.append(FieldError("Duplicate", f"webhooks[{i}].name", name))
            names.add(name)
    return errs


def _ordered(source: JSON, order: list[str]) -> JSON:
    return {key: source[key] for key in order if source.get(key) is not None}


def _default_selector(selector: Any) -> JSON:
    if not isinstance(selector, dict):
        return {}
    ordered = _ordered(selector, ["matchLabels", "matchExpressions"])
    if "matchExpressions" in ordered:
        ordered["matchExpressions"] = [
            _ordered(r, ["key", "operator", "values"]) if isinstance(r, dict) else r
            for r in ordered["matchExpressions"]
        ]
    return ordered


_WEBHOOK_ORDER = [
    "name",
    "clientConfig",
    "rules",
    "failurePolicy",
    "matchPolicy",
    "namespaceSelector",
    "objectSelector",
    "sideEffects",
    "timeoutSeconds",
    "admissionReviewVersions",
    "reinvocationPolicy",
    "matchConditions",
]


def default_webhook_configuration(obj: JSON, mutating: bool) -> None:
    """Fill in what the real server defaults and put each webhook's fields in Go struct order.

    failurePolicy Fail, matchPolicy Equivalent, namespaceSelector/objectSelector ``{}``,
    timeoutSeconds 10, rules[].scope ``*``, service port 443 and (mutating) reinvocationPolicy
    Never. sideEffects has no default in v1 (validation requires it). Unknown fields inside a
    webhook are dropped, as decoding into the Go type would.
    """
    webhooks = obj.get("webhooks")
    if not isinstance(webhooks, list):
        if webhooks is None:
            obj.pop("webhooks", None)
        return
    for i, webhook in enumerate(webhooks):
        if not isinstance(webhook, dict):
            continue
        hook = dict(webhook)
        client = hook.get("clientConfig") if isinstance(hook.get("clientConfig"), dict) else {}
        assert isinstance(client, dict)
        ordered_client = _ordered(client, ["url", "service", "caBundle"])
        if not ordered_client.get("caBundle"):
            ordered_client.pop("caBundle", None)
        if isinstance(ordered_client.get("service"), dict):
            service = _ordered(ordered_client["service"], ["namespace", "name", "path", "port"])
            service.setdefault("port", DEFAULT_SERVICE_PORT)
            ordered_client["service"] = service
        hook["clientConfig"] = ordered_client
        rules = []
        for rule in hook.get("rules") or []:
            if isinstance(rule, dict):
                rule = _ordered(rule, ["operations", "apiGroups", "apiVersions", "resources", "scope"])
                rule.setdefault("scope", "*")
            rules.append(rule)
        hook["rules"] = rules or None
        hook["failurePolicy"] = hook.get("failurePolicy") or "Fail"
        hook["matchPolicy"] = hook.get("matchPolicy") or "Equivalent"
        hook["namespaceSelector"] = _default_selector(hook.get("namespaceSelector"))
        hook["objectSelector"] = _default_selector(hook.get("objectSelector"))
        if hook.get("timeoutSeconds") is None:
            hook["timeoutSeconds"] = DEFAULT_TIMEOUT_SECONDS
        if mutating:
            hook["reinvocationPolicy"] = hook.get("reinvocationPolicy") or "Never"
        else:
            hook.pop("reinvocationPolicy", None)
        if isinstance(hook.get("matchConditions"), list):
            hook["matchConditions"] = [
                _ordered(c, ["name", "expression"]) if isinstance(c, dict) else c
                for c in hook["matchConditions"]
            ] or None
        ordered = _ordered(hook, _WEBHOOK_ORDER)
        # These two are not omitempty in Go: they serialise even when empty.
        ordered.setdefault("name", "")
        ordered.setdefault("admissionReviewVersions", None)
        webhooks[i] = {key: ordered[key] for key in _WEBHOOK_ORDER if key in ordered}
