"""Mutation check of the chaos campaign: switch one safety rule off, and see the campaign catch it.

Not part of the test run. For each rule below, the working tree is copied to a temporary
directory, the rule's code is replaced there by a version that never says "wait" (the change is
textual and must match exactly once, so a refactored rule fails this loudly instead of mutating
nothing), and ``bench.chaos`` runs against the copy — its ``cpo run`` children import the copy
through ``PYTHONPATH`` — seed after seed until a run fails or ``--runs`` runs passed::

    .venv/bin/python -m bench.mutation [--rule NAME ...] [--runs 20] [--seed 1] [--duration 60]
                                        [--jobs 2] [--out mutation-out]

A rule is *caught* when a run breaks an invariant (a run that ended in an error without one,
say a world that could not start, is reported and not counted); the report gives the first
failing seed, how many runs it took (seeds are tried in order, ``--jobs`` at a time) and that
run's violations. The failing run's evidence (schedule, timeline, logs) is under
``--out/<rule>/seed-<seed>/``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    """One safety rule switched off: in ``path``, each ``old`` text (found exactly once) becomes
    its ``new`` text."""

    rule: str
    summary: str
    path: str
    changes: tuple[tuple[str, str], ...]


NEVER = "    if False:\n"
"""A rule's condition, replaced: its wait never happens."""


def _never(condition: str, then: str) -> tuple[str, str]:
    """The change that makes ``if <condition>:`` (followed by ``then``, which makes it unique) never true."""
    return f"    if {condition}:\n{then}", NEVER + then


MUTATIONS = (
    Mutation(
        "hook-membership-gate",
        "the etcd-quorum hook leaves a deleting Machine at once, member or not",
        "controllers/etcdquorum/rules.py",
        ((" and machine.has_hook and machine.name not in owners.values()\n", " and machine.has_hook\n"),),
    ),
    Mutation(
        "voters-stay-desired",
        "a healthy voter is removed even when fewer healthy voters than desired are left",
        "controllers/etcdquorum/rules.py",
        (("    if candidate.healthy and healthy_after < desired:\n", NEVER),),
    ),
    Mutation(
        "preflight",
        "the ControlPlane creates and deletes Machines without its preflight checks",
        "controllers/controlplane/preflight.py",
        (("    removing, replacing = excluded_from_preflight(step)\n", "    return []\n"),),
    ),
    Mutation(
        "one-remediation-at-a-time",
        "a remediation starts while the previous one, a deletion or a provisioning Machine is under way",
        "controllers/controlplane/remediation.py",
        (
            ("    if previous is not None and not resuming and not held_by_hook(previous):\n", NEVER),
            _never(
                "deleting",
                "        return RemediationDecision(\n            False,\n"
                "            REASON_WAITING_FOR_DELETION,\n",
            ),
            _never(
                "provisioning",
                "        return RemediationDecision(\n            False,\n"
                "            REASON_WAITING_FOR_PROVISIONING,\n",
            ),
        ),
    ),
)
"""The rules the mutation check switches off, one at a time."""


def mutated_copy(mutation: Mutation, into: Path) -> Path:
    """A copy of the working tree (tracked and untracked, not ignored files) with ``mutation``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, check=True, capture_output=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    target = into / mutation.path
    text = target.read_text()
    for old, new in mutation.changes:
        if text.count(old) != 1:
            raise SystemExit(
                f"{mutation.rule}: {mutation.path} holds {old!r} {text.count(old)} times, not once"
            )
        text = text.replace(old, new)
    target.write_text(text)
    return into


def run_batch(copy: Path, first_seed: int, runs: int, duration: float, out: Path) -> list[dict[str, Any]]:
    """``bench.chaos`` on the mutated copy: ``runs`` runs at once from ``first_seed``."""
    results = out / f"runs-{first_seed}.json"
    env = {**os.environ, "PYTHONPATH": str(copy)}
    subprocess.run(
        [sys.executable, "-m", "bench.chaos", "--runs", str(runs), "--seed", str(first_seed),
         "--jobs", str(runs), "--duration", str(duration), "--out", str(out), "--json", str(results)],
        cwd=copy, env=env, check=False,
    )  # fmt: skip
    loaded: list[dict[str, Any]] = json.loads(results.read_text())
    return loaded


def check(mutation: Mutation, args: argparse.Namespace) -> dict[str, Any]:
    out = (args.out / mutation.rule).resolve()
    out.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"cpo-mutant-{mutation.rule}-") as directory:
        copy = mutated_copy(mutation, Path(directory))
        tried = 0
        while tried < args.runs:
            batch = min(args.jobs, args.runs - tried)
            results = run_batch(copy, args.seed + tried, batch, args.duration, out)
            # A run whose world never came up (its error, no violation) says nothing of the rule.
            broken = [r["seed"] for r in results if r["error"] and not r["violations"]]
            if broken:
                print(f"{mutation.rule}: seed(s) {broken} ended in a harness error, not counted", flush=True)
            failed = sorted((r for r in results if r["violations"]), key=lambda r: r["seed"])
            if failed:
                first = failed[0]
                return {
                    "rule": mutation.rule, "caught": True, "seed": first["seed"],
                    "runs": first["seed"] - args.seed + 1, "failing_seeds": [r["seed"] for r in failed],
                    "violations": first["violations"], "error": first["error"],
                    "seconds": round(time.monotonic() - began),
                }  # fmt: skip
            tried += batch
    return {"rule": mutation.rule, "caught": False, "runs": tried, "seconds": round(time.monotonic() - began)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    names = [m.rule for m in MUTATIONS]
    parser.add_argument("--rule", action="append", choices=names, help="default: every rule, in turn")
    parser.add_argument("--runs", type=int, default=20, help="runs per rule before it counts as not caught")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("mutation-out"))
    args = parser.parse_args(argv)
    reports = []
    for mutation in MUTATIONS:
        if args.rule and mutation.rule not in args.rule:
            continue
        print(f"== {mutation.rule}: {mutation.summary}", flush=True)
        report = check(mutation, args)
        reports.append(report)
        print(json.dumps(report), flush=True)
    (args.out / "mutation.json").write_text(json.dumps(reports, indent=1) + "\n")
    print("\n| rule | caught | seed | runs | first violation |")
    print("|---|---|---|---|---|")
    for r in reports:
        first = (r.get("violations") or [r.get("error") or ""])[0] if r["caught"] else ""
        caught = "yes" if r["caught"] else "no"
        print(f"| {r['rule']} | {caught} | {r.get('seed', '-')} | {r['runs']} | {first} |")
    return 0 if all(r["caught"] for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
