"""The operator's controllers, and the few rules they share.

Three controllers, each a package with a user guide in its docstring, each shaped the same way:
gather the facts (from the shared cache and etcd), decide in small pure functions, act, then
report (status, conditions, Events, metrics):

=========================================  ===============================================================
:mod:`controllers.controlplane`            a ControlPlane's Machines: scaling, rollouts, failure domains,
                                           remediation, adoption and release
:mod:`controllers.etcdquorum`              the preDrain hook that holds a deleting Machine until its etcd
                                           member may go, member promotion and removal
:mod:`controllers.machinehealthcheck`      OpenShift MachineHealthChecks, handing ControlPlane Machines
                                           to their ControlPlane instead of deleting them
:mod:`controllers.etcd`                    the one etcd membership model, its client, pool and TLS
:mod:`controllers.conditions`              how every controller reads and writes conditions
:mod:`controllers.common`                  times and resync jitter
:mod:`controllers.operator`                the wiring: one manager running all of them and the webhooks
:mod:`controllers.cache_scope`             what the shared cache holds: control-plane objects only
=========================================  ===============================================================

Which Machines are a ControlPlane's, a Machine's failure domain and etcd's quorum arithmetic are
decided in :mod:`api` (:mod:`api.ownership`, :mod:`api.failuredomains`, :mod:`api.quorum`), so
that the controllers and the admission webhooks cannot disagree about them.
"""
