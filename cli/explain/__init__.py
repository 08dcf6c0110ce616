"""``cpo explain``: what the operator sees of one ControlPlane, what it does next, and what holds it.

Everything comes from the API server alone (an SRE's laptop rarely reaches etcd): the
ControlPlane, the Machines its selector matches in its namespace, their Nodes and its
MachineHealthCheck. Three layers, each usable on its own:

* :func:`~cli.explain.document.gather` reads the objects into a :class:`~cli.explain.document.Snapshot`;
* :func:`~cli.explain.document.explain_document` turns a snapshot into the document ``-o json``
  prints (pure, and the single source of every fact the screen shows; its shape is below);
* :func:`~cli.explain.render.render` lays that document out with ``rich`` for a terminal;

and this module is the command: the connection as kubectl resolves it, one shot or ``--watch``.

``--watch`` keeps one watch per kind (ControlPlane, Machines, Nodes, MachineHealthChecks) and
redraws after each change; nothing is polled. Facts the controller has not written (a Machine's
``EtcdMemberHealthy``, ``UpToDate`` or ``ControlPlaneComponentsHealthy`` condition,
``status.etcd``) show as ``-`` or "unknown", and
the document holds ``null`` for them, so the command works against any operator version.

The document (``-o json``), version 1::

    {"version": 1, "kind": "ControlPlaneExplanation",
     "controlPlane": {"name", "namespace", "desiredReplicas", "strategy": {"type", "maxSurge"},
                      "state", "paused", "phase", "generation", "observedGeneration", "deleting",
                      "replicas": {"current", "ready", "updated", "available", "unavailable"},
                      "failure": {"reason", "message"} | null},
     "conditions": [{"type", "status", "reason", "message", "lastTransitionTime"}],
     "machines": [{"name", "failureDomain", "phase", "node", "nodeReady": "True"|"False"|"Unknown"|null,
                   "etcd": {"role": "leader"|"voter"|"learner"|"none"|"unknown", "healthy",
                            "reason", "message"} | null,
                   "hooks": {"preDrain": [{"name", "owner"}], "preTerminate": [...], "etcdQuorumHook",
                             "etcdQuorumHookHolding": {"status", "reason", "message"} | null},
                   "upToDate": {"status", "reason", "message"} | null,
                   "components": {"status", "reason", "message"} | null,
                   "healthCheck": {"healthy": bool | null, "reason", "message",
                                   "ownerRemediated": {"status", "reason", "message"} | null},
                   "deleting", "deletionTimestamp"}],
     "etcd": {"known", "voters", "learners", "healthyVoters", "quorum", "faultTolerance",
              "leaderMachine"},
     "remediation": {"lastRemediation": {"machine", "timestamp", "retryCount"} | null,
                     "healthCheck": {"name", "maxUnhealthy", "expectedMachines", "currentHealthy",
                                     "remediationsAllowed"} | null},
     "plan": {"progressing": {"status", "reason", "message", "since"} | null,
              "blocked": [{"source", "reason", "message", "since"}]}}

A Machine's ``components`` is its ``ControlPlaneComponentsHealthy`` condition: whether its
kube-apiserver, kube-controller-manager, kube-scheduler and etcd Pods are Ready, the reason naming
the failing one (``APIServerPodUnhealthy``...) and the message the Pod and why (the COMPONENTS
column). The ControlPlane's own condition of that type is in ``conditions`` (Unknown with
``ComponentPodsNotFound`` when the configured layout's Pods are found nowhere).

Keys are never removed within a version; new ones may appear.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import signal
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from api.controlplane import API_VERSION as CONTROLPLANE_API_VERSION
from api.machine import API_VERSION as MACHINE_API_VERSION
from cli.explain.document import (
    DEFAULT_ETCD_HOOK_NAME,
    DOCUMENT_VERSION,
    Snapshot,
    explain_document,
    gather,
)
from cli.explain.render import render
from runtime.client import JSON, Client
from runtime.errors import NotFound

PIPE_WIDTH = 160
"""Columns of the text written into a pipe or a file (a terminal's own width is used otherwise)."""

__all__ = ["DOCUMENT_VERSION", "Snapshot", "configure", "explain_document", "gather", "render", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``cpo explain`` (and ``kubectl cpo explain``)."""
    parser.add_argument("name", metavar="NAME", help="the ControlPlane to explain")
    parser.add_argument(
        "-n",
        "--namespace",
        default=None,
        help="its namespace (default: the kubeconfig context's namespace, else 'default')",
    )
    parser.add_argument(
        "--kubeconfig",
        default=None,
        metavar="PATH",
        help="kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config, else the pod's service account)",
    )
    parser.add_argument("--context", default=None, help="kubeconfig context (default: its current one)")
    parser.add_argument(
        "-o",
        "--output",
        choices=["text", "json"],
        default="text",
        help="text for people, json for scripts (a versioned document; its shape: "
        "python -m pydoc cli.explain)",
    )
    parser.add_argument(
        "-w",
        "--watch",
        action="store_true",
        help="redraw on every change of the ControlPlane, its Machines, Nodes or MachineHealthCheck "
        "(with -o json: one document per change, one per line); Ctrl-C ends it",
    )
    parser.add_argument(
        "--hook-name",
        default=DEFAULT_ETCD_HOOK_NAME,
        metavar="NAME",
        help="name of the etcd-quorum preDrain hook, as given to `cpo run --etcd-hook-name` "
        "(default: %(default)s)",
    )


def kubeconfig_path(explicit: str | None, environ: Mapping[str, str] = os.environ) -> Path | None:
    """The kubeconfig kubectl would use: ``--kubeconfig``, the first existing file of
    ``$KUBECONFIG``, else ``~/.kube/config`` when it exists; None means in-cluster."""
    if explicit:
        return Path(explicit).expanduser()
    for entry in (environ.get("KUBECONFIG") or "").split(os.pathsep):
        if entry and Path(entry).expanduser().is_file():
            return Path(entry).expanduser()
    home = Path(environ.get("HOME") or Path.home()) / ".kube" / "config"
    return home if home.is_file() else None


def resolve_connection(args: argparse.Namespace) -> tuple[JSON | None, str]:
    """The kubeconfig document to use (None: in-cluster) and the namespace to look in, as kubectl
    resolves them: ``-n``, else the context's namespace, else the pod's, else ``default``."""
    path = kubeconfig_path(args.kubeconfig)
    if path is None:
        sa = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
        in_pod = sa.read_text().strip() if sa.is_file() else None
        return None, args.namespace or in_pod or "default"
    import yaml

    document = yaml.safe_load(path.read_text())
    if not isinstance(document, dict):
        raise ValueError(f"{path}: not a kubeconfig document")
    return document, args.namespace or _context_namespace(document, args.context) or "default"


def _context_namespace(document: Mapping[str, Any], context: str | None) -> str | None:
    """The namespace the kubeconfig's context names, as kubectl defaults ``-n`` to it."""
    wanted = context or document.get("current-context")
    for entry in document.get("contexts") or ():
        if entry.get("name") == wanted:
            value = (entry.get("context") or {}).get("namespace")
            return str(value) if value else None
    return None


def run(args: argparse.Namespace) -> int:
    """``cpo explain``: exit 0 when shown, 1 when the ControlPlane or the API server cannot be read."""
    try:
        kubeconfig, namespace = resolve_connection(args)
    except (OSError, ValueError) as err:
        print(f"cpo explain: {err}", file=sys.stderr)
        return 1
    try:
        return asyncio.run(_explain(args, kubeconfig, namespace))
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:
        # The reader went away (`cpo explain -o json | head`): what it wanted is printed. Point
        # stdout at /dev/null so the interpreter's final flush does not fail a second time.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


async def _explain(args: argparse.Namespace, kubeconfig: JSON | None, namespace: str) -> int:
    try:
        if kubeconfig is None:
            client = await Client.in_cluster()
        else:
            client = await Client.from_kubeconfig(kubeconfig, context=args.context)
    except Exception as err:  # any failure to load credentials is the user's to fix; say which
        print(f"cpo explain: cannot reach the API server: {err}", file=sys.stderr)
        return 1
    async with client:
        try:
            snapshot = await gather(client, namespace, args.name)
        except NotFound:
            print(f"cpo explain: controlplane {namespace}/{args.name} not found", file=sys.stderr)
            return 1
        except OSError as err:
            print(f"cpo explain: cannot reach the API server: {err}", file=sys.stderr)
            return 1
        document = explain_document(snapshot, hook_name=args.hook_name)
        if not args.watch:
            _print(document, args.output)
            return 0
        return await _watch(client, namespace, args, document)


def _print(document: Mapping[str, Any], output: str) -> None:
    if output == "json":
        print(json.dumps(document, indent=2), flush=True)
        return
    from rich.console import Console

    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        # Into a pipe or a file, lines as long as they need (as kubectl prints), not 80 columns.
        console = Console(width=PIPE_WIDTH)
    console.print(render(document))


async def _watch(client: Client, namespace: str, args: argparse.Namespace, first: JSON) -> int:
    """Redraw after every change any of the four watches reports, until Ctrl-C or SIGTERM."""
    changed = asyncio.Event()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    shown_nodes = {m["node"] for m in first["machines"] if m["node"]}

    def any_object(_: JSON) -> bool:
        return True

    def this_controlplane(obj: JSON) -> bool:
        return bool((obj.get("metadata") or {}).get("name") == args.name)

    def a_shown_node(obj: JSON) -> bool:
        # Nodes are cluster-wide: only those of the shown Machines redraw the screen.
        return (obj.get("metadata") or {}).get("name") in shown_nodes

    kinds: list[tuple[str, str, str | None, Callable[[JSON], bool]]] = [
        (CONTROLPLANE_API_VERSION, "ControlPlane", namespace, this_controlplane),
        (MACHINE_API_VERSION, "Machine", namespace, any_object),
        ("v1", "Node", None, a_shown_node),
        (MACHINE_API_VERSION, "MachineHealthCheck", namespace, any_object),
    ]
    watches = [
        asyncio.create_task(_watch_kind(client, api_version, kind, where, relevant, changed))
        for api_version, kind, where, relevant in kinds
    ]
    stopping = asyncio.create_task(stop.wait())
    try:
        if args.output == "json":
            print(json.dumps(first), flush=True)
            previous = first
            while await _next_change(changed, stopping):
                document = await _document_or_gone(client, namespace, args, previous)
                shown_nodes = {m["node"] for m in document["machines"] if m["node"]}
                if document != previous:
                    print(json.dumps(document), flush=True)
                    previous = document
            return 0
        from rich.console import Console
        from rich.live import Live

        console = Console()
        with Live(render(first), console=console, auto_refresh=False, screen=False) as live:
            document = first
            while await _next_change(changed, stopping):
                document = await _document_or_gone(client, namespace, args, document)
                shown_nodes = {m["node"] for m in document["machines"] if m["node"]}
                live.update(render(document), refresh=True)
        return 0
    finally:
        stopping.cancel()
        for task in watches:
            task.cancel()
        await asyncio.gather(stopping, *watches, return_exceptions=True)
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


async def _next_change(changed: asyncio.Event, stopping: asyncio.Task[Any]) -> bool:
    """Wait for a change (True) or the stop (False); a burst of changes makes one redraw."""
    waiting = asyncio.create_task(changed.wait())
    done, _ = await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if stopping in done:
        waiting.cancel()
        return False
    changed.clear()
    return True


async def _document_or_gone(client: Client, namespace: str, args: argparse.Namespace, previous: JSON) -> JSON:
    """The document now; when the ControlPlane is gone or the API server cannot be read, the
    last one with that said in ``plan.blocked`` (the watches reconnect and bring a new change)."""
    try:
        return explain_document(await gather(client, namespace, args.name), hook_name=args.hook_name)
    except NotFound:
        reason, message = "NotFound", "the ControlPlane is gone"
    except Exception as err:  # a watch view must outlive an API server restart
        reason, message = "APIUnreachable", f"cannot read the API server: {err}"
    document = copy.deepcopy(previous)
    document["plan"]["blocked"].append(
        {"source": "cpo explain", "reason": reason, "message": message, "since": None}
    )
    return document


async def _watch_kind(
    client: Client,
    api_version: str,
    kind: str,
    namespace: str | None,
    relevant: Callable[[JSON], bool],
    changed: asyncio.Event,
) -> None:
    """Set ``changed`` on each change of a ``relevant`` object of ``kind``: list for a
    resourceVersion, then watch from it; when the stream ends or expires (410), list again, and
    count that as a change (one may have been missed)."""
    while True:
        try:
            listing = await client.list(api_version, kind, namespace, limit=1)
            version = str((listing.get("metadata") or {}).get("resourceVersion") or "")
            async for event in client.watch(
                api_version, kind, namespace, resource_version=version or None, timeout_seconds=300
            ):
                kind_of_event = event.get("type")
                if kind_of_event == "ERROR":
                    break
                if kind_of_event in ("ADDED", "MODIFIED", "DELETED") and relevant(event.get("object") or {}):
                    changed.set()
        except asyncio.CancelledError:
            raise
        except Exception:  # the API server restarting, a network blip: start over after a pause
            await asyncio.sleep(1.0)  # allow-sleep: back-off before re-listing after a failed watch
        changed.set()
