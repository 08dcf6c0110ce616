"""apiVersion strings: ``"<group>/<version>"``, or the version alone for the core group.

>>> split_api_version("cluster.x-k8s.io/v1beta1")
('cluster.x-k8s.io', 'v1beta1')
>>> group_of("v1")
''
"""

from __future__ import annotations

__all__ = ["group_of", "split_api_version"]


def split_api_version(api_version: str) -> tuple[str, str]:
    """``(group, version)`` of ``api_version``; the group is ``""`` for the core group (``"v1"``)."""
    group, _, version = api_version.rpartition("/")
    return group, version


def group_of(api_version: str) -> str:
    """The API group of ``api_version``: ``"apps"`` for ``"apps/v1"``, ``""`` for ``"v1"``."""
    return split_api_version(api_version)[0]
