"""Validation of the built-in types, with the field errors kube-apiserver reports.

One ``validate_<type>(new, old)`` per type (``old`` is None on create), returning
:class:`~runtime.fielderrors.FieldError` lists in the order and multiplicity the real server
reports them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from runtime.jsoncodec import JSON

from ..errors import FieldError, forbidden, invalid, not_supported, required
from ..gostruct import meta_of, section
from ..objectmeta import (
    dns1035_label_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    qualified_name_errors,
    regex_error,
)
from .events import core_event_shape


def _immutable(new: Any, old: Any, path: str) -> list[FieldError]:
    return [] if new == old else [invalid(path, new, "field is immutable")]


_STANDARD_FINALIZERS = {"kubernetes", "orphan", "foregroundDeletion"}


def validate_namespace(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    for finalizer in section(new).get("finalizers") or []:
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


def validate_data_keys(obj: JSON, fields: Sequence[str]) -> list[FieldError]:
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


def validate_immutable_data(new: JSON, old: JSON | None, fields: Sequence[str]) -> list[FieldError]:
    if old is None or old.get("immutable") is not True:
        return []
    errs: list[FieldError] = []
    if new.get("immutable") is not True:
        errs.append(forbidden("immutable", "field is immutable when `immutable` is set"))
    for name in fields:
        if (new.get(name) or {}) != (old.get(name) or {}):
            errs.append(forbidden(name, "field is immutable when `immutable` is set"))
    return errs


def validate_config_map(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    errs.extend(validate_data_keys(new, ("data", "binaryData")))
    errs.extend(validate_immutable_data(new, old, ("data", "binaryData")))
    return errs


def validate_secret(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    errs.extend(validate_data_keys(new, ("data",)))
    if old is not None:
        errs.extend(_immutable(new.get("type"), old.get("type"), "type"))
    errs.extend(validate_immutable_data(new, old, ("data",)))
    return errs


def validate_lease(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = section(new)
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
    namespace = meta_of(event).get("namespace") or ""
    involved = section(event, "involvedObject")
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


def validate_core_event(new: JSON, old: JSON | None) -> list[FieldError]:
    # core/v1 keeps the old lax rules for compatibility: no metadata or immutability checks
    return _legacy_event_errors(new, core_request=True)


def validate_events_v1_event(new: JSON, old: JSON | None) -> list[FieldError]:
    event = core_event_shape(new)
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
        source = section(event, "source")
        if source.get("component") or source.get("host"):
            errs.append(invalid("deprecatedSource", "", "needs to be unset"))
        return errs
    before = core_event_shape(old)
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


def validate_node(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, taint in enumerate(section(new).get("taints") or []):
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
        old_cidr = section(old).get("podCIDR") or ""
        new_cidr = section(new).get("podCIDR") or ""
        if old_cidr and new_cidr != old_cidr:
            errs.append(
                forbidden("spec.podCIDR", 'node updates may not change podCIDR except from "" to valid')
            )
        old_provider = section(old).get("providerID") or ""
        if old_provider and (section(new).get("providerID") or "") != old_provider:
            errs.append(
                forbidden("spec.providerID", 'node updates may not change providerID except from "" to valid')
            )
    return errs


def validate_pod(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = section(new)
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
        errs.extend(_pod_update_errors(spec, section(old)))
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


def validate_service(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = section(new)
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
        old_ip = section(old).get("clusterIP") or ""
        if old_ip and spec.get("clusterIP", old_ip) != old_ip:
            errs.append(invalid("spec.clusterIPs[0]", spec.get("clusterIP"), "may not change once set"))
    return errs


def validate_pdb(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = section(new)
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


def webhook_configuration_validator(*, mutating: bool):  # type: ignore[no-untyped-def]
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


def validate_crd(new: JSON, old: JSON | None) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = section(new)
    names = section(spec, "names")
    group = spec.get("group") or ""
    plural = names.get("plural") or ""
    name = meta_of(new).get("name") or ""
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
        errs.extend(_immutable(spec.get("group"), section(old).get("group"), "spec.group"))
        old_scope = section(old).get("scope")
        if scope != old_scope:
            errs.append(invalid("spec.scope", scope, "field is immutable"))
    return errs
