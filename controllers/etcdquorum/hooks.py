"""The preDrain hook on a ControlPlane's Machines: placed, repaired, removed, and the escape hatch.

:class:`HookKeeper` applies :mod:`controllers.etcdquorum.rules`' hook rules to the Machines of
one pass: the hook on every Machine not being deleted once the Machine API works, set back to
our owner when another was written, taken off a deleting Machine once a member list read from
etcd shows no member of it. Every hook write is a merge patch that carries the Machine's
resourceVersion, so a hook someone else added meanwhile is never lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from api.machine import API_VERSION as MACHINE_API_VERSION
from controllers.etcd.client import Member
from controllers.etcdquorum.options import ResolvedEtcdQuorumOptions
from controllers.etcdquorum.report import Pass, Reporter
from controllers.etcdquorum.rules import (
    hook_action,
    hook_removable,
    hooks_with_ours,
    hooks_without_ours,
    machine_api_functional,
)
from runtime.client import JSON, Client


class HookKeeper:
    """Places and removes the hook; remembers which Machines it has seen hooked (by uid), so that
    a hook taken off a deleting Machine by someone else is reported once and never re-added."""

    def __init__(self, client: Client, options: ResolvedEtcdQuorumOptions, reporter: Reporter) -> None:
        self.client = client
        self.options = options
        self.reporter = reporter
        self.hooked: set[str] = set()
        self.escape_reported: set[str] = set()

    async def place(self, state: Pass) -> None:
        """Step 1: the hook on every Machine not being deleted, once the Machine API works."""
        functional = machine_api_functional(list(state.infos.values()))
        for name, info in sorted(state.infos.items()):
            obj = state.machines[name]
            if info.has_hook:
                self.hooked.add(obj["metadata"].get("uid") or name)
            action = hook_action(info, functional)
            if action is None:
                continue
            hooks = ((obj.get("spec") or {}).get("lifecycleHooks") or {}).get("preDrain") or []
            hook = self.options.hook
            patched = await self._patch_hooks(obj, hooks_with_ours(hooks, hook))
            state.machines[name] = patched
            state.infos[name] = replace(info, hook_owner=hook.owner)
            self.hooked.add(obj["metadata"].get("uid") or name)
            if action == "add":
                message = f"preDrain hook {hook.name} added: the Machine's etcd member is protected"
                self.reporter.event_both(state, patched, "Normal", "HookAdded", message)
            else:
                message = (
                    f"preDrain hook {hook.name} had owner {info.hook_owner!r}; set back to {hook.owner!r}"
                )
                self.reporter.event_both(state, patched, "Warning", "HookRepaired", message)

    async def _patch_hooks(self, obj: JSON, hooks: list[dict[str, Any]]) -> JSON:
        """A merge patch of ``spec.lifecycleHooks.preDrain`` that fails (409) if the Machine changed
        since it was read: the list is written whole, so someone else's hook added meanwhile
        would otherwise be lost."""
        metadata = obj["metadata"]
        return await self.client.patch(
            MACHINE_API_VERSION,
            "Machine",
            metadata["name"],
            {
                "metadata": {"resourceVersion": metadata.get("resourceVersion")},
                "spec": {"lifecycleHooks": {"preDrain": hooks or None}},
            },
            metadata.get("namespace"),
        )

    async def remove(self, state: Pass) -> None:
        """Step 3: a deleting Machine's hook goes once no member belongs to it (fresh member list)."""
        for name, info in sorted(state.infos.items()):
            if not hook_removable(info, state.owners):
                continue
            obj = state.machines[name]
            hooks = ((obj.get("spec") or {}).get("lifecycleHooks") or {}).get("preDrain") or []
            patched = await self._patch_hooks(obj, hooks_without_ours(hooks, self.options.hook))
            state.machines[name] = patched
            state.infos[name] = replace(info, hook_owner=None)
            self.escape_reported.add(obj["metadata"].get("uid") or name)  # our own removal
            self.reporter.event_both(
                state,
                patched,
                "Normal",
                "HookRemoved",
                f"preDrain hook {self.options.hook.name} removed: no etcd member belongs to this Machine "
                "any more",
            )

    def report_escape_hatch(self, state: Pass, members: Sequence[Member] | None) -> None:
        """A deleting Machine without the hook that had it, or whose member is still listed: someone
        removed the hook on purpose. Never re-added; said once per Machine in an event."""
        for name, info in sorted(state.infos.items()):
            obj = state.machines[name]
            uid = obj["metadata"].get("uid") or name
            if not info.deleting or info.has_hook or uid in self.escape_reported:
                continue
            listed = [m for m in members or () if state.owners.get(m.id) == name]
            if uid not in self.hooked and not listed:
                continue
            self.escape_reported.add(uid)
            kept = ", ".join(m.name or m.id_hex for m in listed)
            message = (
                f"preDrain hook {self.options.hook.name} was removed from this deleting Machine by "
                "someone else: "
                "it is not re-added and the Machine is drained without waiting for etcd"
                + (
                    f"; its member {kept} stays in the cluster until removed by hand (etcdctl member remove)"
                    if kept
                    else ""
                )
            )
            self.reporter.event_both(state, obj, "Warning", "HookRemovedByOthers", message)
