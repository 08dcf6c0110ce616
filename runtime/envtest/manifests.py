"""Manifests for a test environment: objects given as dicts, or YAML/JSON files and folders."""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from ..jsoncodec import JSON

_MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

ManifestSource = str | os.PathLike[str] | Mapping[str, Any]
"""A manifest: an object, or the path of a file or folder of them."""


def load_manifests(
    sources: Iterable[ManifestSource], *, kinds: set[str], error_if_missing: bool = True
) -> list[JSON]:
    """The objects of ``kinds`` among ``sources``: objects as they are, files and folders parsed.

    Folders are read non-recursively, files with a ``.yaml``/``.yml``/``.json`` suffix, in name
    order; multi-document YAML and ``kind: List`` are unpacked. Objects are copied, never shared.
    """
    if isinstance(sources, (str, os.PathLike, Mapping)):
        sources = [sources]
    found: list[JSON] = []
    for source in sources:
        if isinstance(source, Mapping):
            documents: list[Any] = [source]
        else:
            documents = _read_manifest_path(Path(source), error_if_missing)
        for document in _unpack_lists(documents):
            if document.get("kind") in kinds:
                found.append(copy.deepcopy(dict(document)))
    return found


def _read_manifest_path(path: Path, error_if_missing: bool) -> list[Any]:
    if not path.exists():
        if error_if_missing:
            raise FileNotFoundError(f"manifest path {path} does not exist")
        return []
    files = (
        sorted(p for p in path.iterdir() if p.is_file() and p.suffix in _MANIFEST_SUFFIXES)
        if path.is_dir()
        else [path]
    )
    documents: list[Any] = []
    for file in files:
        try:
            documents.extend(doc for doc in yaml.safe_load_all(file.read_text(encoding="utf-8")) if doc)
        except yaml.YAMLError as err:
            raise ValueError(f"{file} is not valid YAML/JSON: {err}") from err
    return documents


def _unpack_lists(documents: Iterable[Any]) -> Iterable[Mapping[str, Any]]:
    for document in documents:
        if not isinstance(document, Mapping):
            continue
        if document.get("kind") == "List" or str(document.get("kind", "")).endswith("List"):
            yield from _unpack_lists(document.get("items") or [])
        else:
            yield document
