"""``cpo demo``: watch the operator keep etcd's quorum through every kind of control-plane change.

One command on a fresh machine runs the whole product on this laptop: the embedded API server,
the local machine provider (each Machine a real etcd member on loopback) and the operator with
all its controllers and webhooks, each in its own process. It creates a ControlPlane of 3
replicas over three failure domains, starts a writer that puts unique keys into etcd and records
every acknowledged write, and takes a scripted tour (:mod:`demo.tour`): bootstrap, an even replica
count refused by the webhook, scale out, a member killed and remediated, a rolling update of
every Machine, scale back. Each step waits for the real outcome, not a timer.

It ends with a report (``demo-out/demo-report.json``: each step's duration, peak voters,
learners and Machines, the lowest quorum margin, acknowledged and lost writes) and a picture
(``demo-out/demo-timeline.png``: voters, learners and Machines by phase over time, the write rate,
the steps marked). In a terminal a live panel shows the Machines and their etcd roles as they
change; elsewhere (CI, a pipe) plain lines tell the same story.

::

    cpo demo                     # everything, about 5 minutes on 2 cores
    cpo demo --fast              # short health timeouts (CI)
    cpo demo --realistic         # members on their own addresses, etcd over TLS, no provider hints
    cpo demo --keep              # then keep it running until stopped; prints KUBECONFIG and kubectl commands
    cpo demo --steps bootstrap,kill --replicas 5 --out /tmp/demo

Ctrl-C, ``kill <pid>`` (SIGTERM) or a closed terminal (SIGHUP) at any moment stops the demo the
same way: the report is written as far as it got, every process the demo started is stopped and
the etcd members are killed, and it exits with 128 + the signal's number (130, 143, 129). Nothing
is left running, so a second run can start at once (ports are picked free each time). Killed
outright (SIGKILL), the demo takes its ``cpo`` processes with it (a parent-death signal), and the
next ``cpo demo`` ends the etcd members it left and says so (:mod:`demo.lifetime`).
"""

from demo.run import DemoOptions, ResolvedDemoOptions, run_demo

__all__ = ["DemoOptions", "ResolvedDemoOptions", "run_demo"]
