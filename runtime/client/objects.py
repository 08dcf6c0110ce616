"""How objects go in and come out of the client: plain dicts, or pydantic models when asked."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeGuard, TypeVar, overload

from ..jsoncodec import JSON

if TYPE_CHECKING:
    # Types only: importing pydantic costs an operator memory (docs/performance.md), and one that
    # passes plain dicts never needs it. At run time models are recognised by _is_model.
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")
PatchType = Literal["merge", "json", "strategic", "apply"]

PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    # JSON is YAML, so an apply body needs no YAML encoder.
    "apply": "application/apply-patch+yaml",
}


@dataclass
class ObjectList(Generic[M]):
    """A LIST answer with its items decoded into a model class."""

    items: list[M]
    resource_version: str = ""
    continue_: str = ""
    remaining_item_count: int | None = None
    raw_metadata: JSON = field(default_factory=dict)


def _query(**params: str | int | bool | None) -> dict[str, str]:
    query: dict[str, str] = {}
    for key, value in params.items():
        if value is None:
            continue
        query[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return query


def _is_model(obj: object) -> TypeGuard[BaseModel]:
    """Whether ``obj`` is a pydantic model, without importing pydantic: a model instance exists
    only once ``pydantic.main`` has been imported, by whoever defined its class."""
    main = sys.modules.get("pydantic.main")
    return main is not None and isinstance(obj, main.BaseModel)


def _identify(obj: Mapping[str, Any] | BaseModel) -> tuple[JSON, str, str, str, str | None]:
    body = obj.model_dump(by_alias=True, exclude_none=True, mode="json") if _is_model(obj) else dict(obj)
    api_version = body.get("apiVersion")
    kind = body.get("kind")
    if not api_version or not kind:
        raise ValueError("the object needs apiVersion and kind")
    meta = body.get("metadata") or {}
    return body, str(api_version), str(kind), str(meta.get("name") or ""), meta.get("namespace") or None


def _model_of(obj: Mapping[str, Any] | BaseModel, model: type[M] | None) -> type[BaseModel] | None:
    if model is not None:
        return model
    return type(obj) if _is_model(obj) else None


@overload
def _out(answer: JSON, model: None) -> JSON: ...
@overload
def _out(answer: JSON, model: type[M]) -> M: ...
@overload
def _out(answer: JSON, model: type[BaseModel] | None) -> JSON | BaseModel: ...
def _out(answer: JSON, model: type[BaseModel] | None) -> JSON | BaseModel:
    return answer if model is None else model.model_validate(answer)
