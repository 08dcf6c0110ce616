"""What answers an admission request: handlers, and adapters from validators and defaulters."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from ..jsoncodec import JSON
from .review import AdmissionRequest, AdmissionResponse, allowed, errored, patch_response


@runtime_checkable
class AdmissionHandler(Protocol):
    """Answers one admission request. Raise :class:`Denied` to refuse."""

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse: ...


class CustomValidator(Protocol):
    """Judges objects of one kind; returns warnings, or raises :class:`Denied` to refuse."""

    async def validate_create(self, obj: JSON, request: AdmissionRequest) -> list[str]: ...

    async def validate_update(self, old: JSON, new: JSON, request: AdmissionRequest) -> list[str]: ...

    async def validate_delete(self, obj: JSON, request: AdmissionRequest) -> list[str]: ...


class CustomDefaulter(Protocol):
    """Fills in defaults by changing ``obj`` in place; raise :class:`Denied` to refuse."""

    async def default(self, obj: JSON, request: AdmissionRequest) -> None: ...


class _FuncHandler:
    __slots__ = ("_func",)

    def __init__(self, func: Callable[[AdmissionRequest], Awaitable[AdmissionResponse]]) -> None:
        self._func = func

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        return await self._func(request)


def admission_handler_func(
    func: Callable[[AdmissionRequest], Awaitable[AdmissionResponse]],
) -> AdmissionHandler:
    """Adapt ``async def f(request) -> AdmissionResponse`` to :class:`AdmissionHandler`."""
    return _FuncHandler(func)


def _warnings_from(result: object, who: str) -> list[str]:
    if result is None:
        return []
    if isinstance(result, list | tuple) and all(isinstance(w, str) for w in result):
        return list(result)
    raise TypeError(f"{who} returned {result!r}; it must return a list of warning strings")


class ValidatorHandler:
    """Serves a :class:`CustomValidator`: CREATE, UPDATE and DELETE go to the matching method."""

    __slots__ = ("validator",)

    def __init__(self, validator: CustomValidator) -> None:
        self.validator = validator

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        v = self.validator
        op = request.operation
        if op == "CREATE":
            if request.object is None:
                return errored(400, "request.object is missing: a CREATE review must carry the new object")
            result = await v.validate_create(request.object, request)
        elif op == "UPDATE":
            if request.object is None or request.old_object is None:
                return errored(400, "an UPDATE review must carry both request.object and request.oldObject")
            result = await v.validate_update(request.old_object, request.object, request)
        elif op == "DELETE":
            if request.old_object is None:
                return errored(400, "request.oldObject is missing: a DELETE review must carry the object")
            result = await v.validate_delete(request.old_object, request)
        else:
            return errored(400, f"unknown operation {op!r}: a validator handles CREATE, UPDATE and DELETE")
        return allowed(warnings=_warnings_from(result, type(v).__name__))


class DefaulterHandler:
    """Serves a :class:`CustomDefaulter` on CREATE and UPDATE; other operations are allowed as they are."""

    __slots__ = ("defaulter",)

    def __init__(self, defaulter: CustomDefaulter) -> None:
        self.defaulter = defaulter

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        if request.operation not in ("CREATE", "UPDATE"):
            # Nothing to default on a delete or connect (controller-runtime skips them too).
            return allowed()
        original = request.object
        if original is None:
            return errored(
                400, f"request.object is missing: a {request.operation} review must carry the object"
            )
        # A JSON round trip is a deep copy at C speed, several times faster than copy.deepcopy.
        working: JSON = json.loads(json.dumps(original))
        await self.defaulter.default(working, request)
        return patch_response(original, working)


def validate_path(group: str, version: str, kind: str) -> str:
    """kubebuilder's validating path: ``("apps", "v1", "Deployment")`` → ``/validate-apps-v1-deployment``.

    The core group ``""`` gives ``/validate--v1-pod``, as controller-runtime builds it.
    """
    return f"/validate-{group.replace('.', '-')}-{version}-{kind.lower()}"


def mutate_path(group: str, version: str, kind: str) -> str:
    """kubebuilder's mutating path, ``/mutate-<group with dashes>-<version>-<kind lowercase>``."""
    return f"/mutate-{group.replace('.', '-')}-{version}-{kind.lower()}"
