"""The ``cpo explain`` screen: the document of :mod:`cli.explain.document` laid out with ``rich``.

Rendering reads only the document, so the screen never shows a fact ``-o json`` lacks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from api.controlplane import CONDITION_PROGRESSING

_STATUS_STYLE: Final = {"True": "green", "False": "red", "Unknown": "yellow"}


def _dash(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)


def _condition_style(type_: str, status: str) -> str:
    # Degraded and Remediating are the conditions whose True is the bad news.
    if type_ in ("Degraded", "Remediating", "Blocked", "PreflightFailed"):
        return {"True": "red", "False": "green"}.get(status, "yellow")
    if type_ == CONDITION_PROGRESSING:
        return "yellow" if status == "True" else "green"
    return _STATUS_STYLE.get(status, "yellow")


def _etcd_cell(etcd: Mapping[str, Any] | None) -> tuple[str, str]:
    if etcd is None:
        return "-", ""
    healthy = etcd.get("healthy")
    mark = "healthy" if healthy else "unhealthy" if healthy is False else "unknown"
    return f"{etcd.get('role')}, {mark}", "green" if healthy else "red" if healthy is False else "yellow"


def _hook_cell(machine: Mapping[str, Any]) -> tuple[str, str]:
    hooks = machine["hooks"]
    if not hooks["preDrain"]:
        return "-", ""
    names = ", ".join(str(h.get("name")) for h in hooks["preDrain"])
    holding = hooks.get("etcdQuorumHookHolding")
    if machine["deleting"]:
        if holding is not None and holding.get("status") == "True":
            return f"holds: {names} ({holding.get('reason')})", "yellow"
        return f"holds: {names}", "yellow"
    return names, ""


def _up_to_date_cell(up_to_date: Mapping[str, Any] | None) -> tuple[str, str]:
    if up_to_date is None:
        return "-", ""
    if up_to_date.get("status") == "True":
        return "yes", "green"
    why = up_to_date.get("message") or up_to_date.get("reason") or "no"
    return f"no: {why}", "yellow"


def _components_cell(components: Mapping[str, Any] | None) -> tuple[str, str]:
    if components is None:
        return "-", ""
    status = components.get("status")
    if status == "True":
        return "healthy", "green"
    why = components.get("message") or components.get("reason") or "unknown"
    return (f"unhealthy: {why}", "red") if status == "False" else (f"unknown: {why}", "yellow")


def _health_cell(check: Mapping[str, Any]) -> tuple[str, str]:
    owner = check.get("ownerRemediated")
    if owner is not None:
        return f"marked: {owner.get('reason') or 'OwnerRemediated'}", "red"
    if check.get("healthy") is False:
        return f"unhealthy: {check.get('reason') or '-'}", "red"
    if check.get("healthy") is True:
        return "healthy", "green"
    return "-", ""


def render(document: Mapping[str, Any]) -> RenderableType:
    """The document laid out for a terminal: one screen, the plan last (where the eye ends)."""
    return Group(
        *_header(document["controlPlane"]),
        _conditions_table(document["conditions"]),
        _machines_table(document["machines"]),
        _etcd_line(document["etcd"]),
        _remediation_line(document["remediation"]),
        *_plan_lines(document["plan"]),
    )


def _header(cp: Mapping[str, Any]) -> list[RenderableType]:
    strategy = cp["strategy"]
    surge = f", maxSurge {strategy['maxSurge']}" if strategy.get("maxSurge") is not None else ""
    header = Text.assemble(
        ("ControlPlane ", "bold"),
        (f"{cp['namespace']}/{cp['name']}", "bold cyan"),
        f"   desired {cp['desiredReplicas']}   strategy {strategy['type']}{surge}   state ",
        (str(cp["state"]), "green" if cp["state"] == "Active" else "yellow"),
        "   phase ",
        (_dash(cp["phase"]), "bold"),
    )
    if cp["paused"]:
        header.append("   PAUSED", "bold yellow")
    if cp["deleting"]:
        header.append("   DELETING", "bold red")
    replicas = cp["replicas"]
    counts = Text(
        f"replicas: current {_dash(replicas['current'])}, ready {_dash(replicas['ready'])}, "
        f"updated {_dash(replicas['updated'])}, available {_dash(replicas['available'])}, "
        f"unavailable {_dash(replicas['unavailable'])}"
    )
    return [header, counts]


def _conditions_table(conditions: list[Mapping[str, Any]]) -> Table:
    table = Table(title="Conditions", title_justify="left", box=None, pad_edge=False)
    for column in ("TYPE", "STATUS", "REASON", "MESSAGE"):
        table.add_column(column, overflow="fold")
    for c in conditions:
        table.add_row(
            str(c["type"]),
            Text(_dash(c["status"]), _condition_style(str(c["type"]), str(c["status"]))),
            _dash(c["reason"]),
            c["message"],
        )
    if not conditions:
        table.add_row("-", "-", "-", "no conditions written yet")
    return table


def _machines_table(machines: list[Mapping[str, Any]]) -> Table:
    table = Table(title="Machines", title_justify="left", box=None, pad_edge=False)
    # Names and short facts never wrap (a name cut in two is not a name); the explanations do.
    for column in ("NAME", "DOMAIN", "PHASE", "NODE READY"):
        table.add_column(column, no_wrap=True)
    for column in ("ETCD", "HOOK", "UP TO DATE", "COMPONENTS", "HEALTH CHECK"):
        table.add_column(column, overflow="fold")
    for m in machines:
        phase = _dash(m["phase"]) + (" (deleting)" if m["deleting"] and m["phase"] != "Deleting" else "")
        ready = m["nodeReady"]
        table.add_row(
            Text(str(m["name"]), "bold red" if m["deleting"] else "bold"),
            _dash(m["failureDomain"]),
            Text(phase, "red" if m["deleting"] or m["phase"] == "Failed" else ""),
            Text(_dash(ready), _STATUS_STYLE.get(str(ready), "")),
            Text(*_etcd_cell(m["etcd"])),
            Text(*_hook_cell(m)),
            Text(*_up_to_date_cell(m["upToDate"])),
            Text(*_components_cell(m.get("components"))),
            Text(*_health_cell(m["healthCheck"])),
        )
    if not machines:
        table.add_row("-", "", "", "", "", "", "", "", "no Machine matches the selector")
    return table


def _etcd_line(etcd: Mapping[str, Any]) -> Text:
    if not etcd["known"]:
        return Text("etcd: quorum unknown (the operator writes no status.etcd)", "yellow")
    return Text(
        f"etcd: {_dash(etcd['voters'])} voter(s), {_dash(etcd['learners'])} learner(s), "
        f"{_dash(etcd['healthyVoters'])} healthy; quorum {_dash(etcd['quorum'])}, "
        f"fault tolerance {_dash(etcd['faultTolerance'])}; leader on {_dash(etcd['leaderMachine'])}"
    )


def _remediation_line(remediation: Mapping[str, Any]) -> Text:
    last = remediation["lastRemediation"]
    line = Text("remediation: ")
    if last is not None:
        line.append(f"last {last['machine']} at {last['timestamp']} (retry {last['retryCount']})")
    else:
        line.append("none recorded")
    check = remediation["healthCheck"]
    if check is None:
        line.append("; no MachineHealthCheck")
        return line
    line.append(
        f"; {check['name']}: maxUnhealthy {_dash(check['maxUnhealthy'])}, expected "
        f"{_dash(check['expectedMachines'])}, healthy {_dash(check['currentHealthy'])}, "
        f"remediations allowed {_dash(check['remediationsAllowed'])}"
    )
    return line


def _plan_lines(plan: Mapping[str, Any]) -> list[RenderableType]:
    progressing = plan["progressing"]
    lines: list[RenderableType] = []
    if progressing is None:
        lines.append(Text("plan: unknown (no Progressing condition yet)", "yellow"))
    else:
        busy = progressing["status"] == "True"
        lines.append(
            Text.assemble(
                ("plan: ", "bold"),
                (progressing["reason"] or "-", "bold yellow" if busy else "bold green"),
                f" since {_dash(progressing['since'])}",
                f": {progressing['message']}" if progressing["message"] else "",
            )
        )
    for block in plan["blocked"]:
        # A blocked Progressing already said its message on the plan line.
        message = block["message"] if block["source"] != CONDITION_PROGRESSING else ""
        lines.append(
            Text.assemble(
                ("blocked: ", "bold red"),
                f"{block['reason']} ({block['source']}",
                f", since {block['since']})" if block["since"] else ")",
                f": {message}" if message else "",
            )
        )
    return lines
