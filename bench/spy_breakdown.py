"""Where the controller's CPU goes, from a py-spy sample file: one row per stage of an event's path.

Not part of the test run. ``bench.runtime --spy FILE`` samples the controller child with py-spy
(``pip install py-spy``, a development tool; native frames included, so the event loop's C code,
the TLS library and the kernel-call wrappers show) into FILE as raw collapsed stacks; this script
puts each sampled stack in the first stage (in the order of :data:`STAGES`) that one of its frames
matches and prints the share of each. Samples of the start-up (imports, the initial list, the
memory phase's second cache) are left out, so a long ``--rate`` phase with short flood and drain
phases makes the table that of a steady rate::

    .venv/bin/python -m bench.runtime --n 1000 --rate 100 --rate-seconds 60 --flood-count 200 \\
        --drain-count 200 --drain-rounds 1 --no-delivery --spy /tmp/steady.txt
    .venv/bin/python -m bench.spy_breakdown /tmp/steady.txt [--per-event-ms 0.25]

``--per-event-ms`` (the CPU per event that the same run printed for the rate phase) turns the
shares into microseconds per event. py-spy counts a sample only when the process is on a CPU (not
waiting in ``epoll_wait``), so the shares are of CPU time.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter

# (stage, frame pattern): the first stage with a matching frame anywhere in a stack takes it, so
# the more specific stages (a decode inside the informer, a metric inside the queue) come first.
IDLE = re.compile(r"epoll_pwait|epoll_wait|PyThread_acquire_lock_timed|sem_clockwait")
"""A stack ending in a wait: py-spy samples idle threads too; they are no CPU and are left out."""

STAGES: list[tuple[str, str]] = [
    (
        "excluded: start-up, initial list, memory phase",
        r"_list_pages|replace_encoded|cache_bytes|"
        r"wait_synced|_find_and_load|from_kubeconfig|tracemalloc|loop_factory|parse_args|"
        # The bench's own gc.collect() calls around its phases; a collection py-spy could not place
        # (no frame above it) is one of those too: none is automatic at this rate (the bench counts
        # the automatic ones: "GC runs" in bench.vs_kopf).
        r"gc_collect \(|^[^;]*;gc_collect_main[^;]*$",
    ),
    ("garbage collector", r"gc_collect|collect_generations|_on_gc|subtract_refs|visit_"),
    ("bench bookkeeping (observe, stdin commands)", r"Tracker\.|serve_commands|stdin_commands"),
    (
        "metrics (workqueue, controller)",
        r"Loop(Counter|Gauge|Histogram)|observe_reconcile_time|"
        r"WorkqueueMetrics|_update_unfinished_work",
    ),
    ("JSON decode: the watch line", r"Client\.watch.*?(loads|orjson)"),
    ("JSON decode: the reconciler's cache read", r"get_by_key.*?(loads|orjson)"),
    ("JSON encode: the store's copy", r"_upsert.*?(dumps|orjson)"),
    ("workqueue (add, get, done)", r"WorkQueue\.|_wake_one_getter"),
    (
        "informer (transform, versions, index) and handlers",
        r"Informer\.|strip_managed_fields|"
        r"_notify|EnqueueRequest|_KindHandler|source\.py|handler\.py|Reflector\._handle",
    ),
    (
        "controller worker (context, reconcile ID, result)",
        r"Controller\._|set_context|reset_context|"
        r"_reconcile_id|_ReconcileKeys|current_context",
    ),
    ("the no-op reconciler", r"NoopReconciler"),
    (
        "timers (call_later, cancel)",
        r"call_later|call_at|TimerHandle|_reschedule_timeout|uv_timer|"
        r"Timer(Handle)?\.|__timer|_on_timeout|loop_call_later",
    ),
    (
        "HTTP chunk parsing and aiohttp's stream",
        r"data_received|_http_parser|http_parser|feed_data|"
        r"StreamReader|iter_any|readany|HttpResponseParser|cb_on_body|llhttp",
    ),
    (
        "TLS decryption (uvloop's TLS protocol, OpenSSL)",
        r"SSL_read|ssl3_|tls1|aes|gcm|EVP_|SSLObject|_ssl__|sslproto|SSLProtocol|"
        r"ossl_|BIO_|CRYPTO_",
    ),
    ("the watch generator and the reflector loop", r"Client\.watch|Reflector\._watch"),
    ("event loop: wake-up, socket read, task switches", r"run_forever|run_until_complete"),
]


def classify(stack: str) -> str:
    for stage, pattern in STAGES:
        if re.search(pattern, stack):
            return stage
    return "other"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw", help="py-spy's --format raw output")
    parser.add_argument("--per-event-ms", type=float, default=0.0)
    parser.add_argument("--top", type=int, default=0, help="also print the N heaviest 'other' stacks")
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    others: Counter[str] = Counter()
    with open(args.raw) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            if not stack or IDLE.search(stack):
                continue
            stage = classify(stack)
            counts[stage] += int(n)
            if stage == "other":
                others[stack] += int(n)
    excluded = counts.pop(STAGES[0][0], 0)
    total = sum(counts.values())
    print(f"{total} samples counted ({excluded} excluded: start-up, initial list, memory phase)")
    print()
    head = "| stage | share |" + (" µs per event |" if args.per_event_ms else "")
    print(head)
    print("|---|---|" + ("---|" if args.per_event_ms else ""))
    for stage, _ in [*STAGES[1:], ("other", "")]:
        n = counts.get(stage, 0)
        share = n / total if total else 0.0
        row = f"| {stage} | {share * 100:.1f} % |"
        if args.per_event_ms:
            row += f" {share * args.per_event_ms * 1000:.1f} |"
        print(row)
    for stack, n in others.most_common(args.top):
        print(n, stack[-400:])


if __name__ == "__main__":
    main()
