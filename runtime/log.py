"""Structured logs on stdlib :mod:`logging`, with per-reconcile keys carried in context variables.

Every line a controller writes while it reconciles one object carries the same keys, whoever
emits it (the controller, your reconciler, a library it calls):

===============  ===================================================================
``controller``   the controller's name
``object``       ``"namespace/name"`` (or ``"name"`` for cluster-scoped objects)
``namespace``    the object's namespace (``""`` for cluster-scoped objects)
``name``         the object's name
``reconcileID``  a fresh UUID per reconcile, to tell one pass from the next
===============  ===================================================================

The keys live in a :class:`contextvars.ContextVar`, so they follow the reconcile's task and every
task it creates, and never leak into a concurrent reconcile of another worker. Use
:func:`log_context` to add keys of your own for a block of code.

Two output formats, chosen by :func:`configure_logging`:

* ``"json"``: one JSON object per line: ``ts`` (RFC 3339, UTC, milliseconds), ``level``,
  ``logger``, ``msg``, then the keys; an exception adds ``error`` (``Type: message``) and
  ``stacktrace`` (the formatted traceback). What a log pipeline in a cluster wants.
* ``"console"``: ``ts  LEVEL  logger  msg  {keys as JSON}`` and the traceback below, for humans.

Loggers
-------
Plain ``logging.getLogger(__name__)`` loggers get the context keys (the handler installed by
:func:`configure_logging` adds them). :func:`get_logger` returns a :class:`Logger` that also takes
keys per call, like logr's ``WithValues`` and key/value pairs (an operator's ``main`` calls
``configure_logging(format="json")`` once, for the root logger and stderr):

>>> import io, json, logging
>>> from runtime.log import configure_logging, get_logger, log_context
>>> out = io.StringIO()
>>> handler = configure_logging(format="json", level="info", stream=out, logger="example")
>>> log = get_logger("example").with_values(component="demo")
>>> with log_context(controller="demo", reconcileID="0f6e"):
...     log.info("Scaling up", replicas=3)
>>> print(out.getvalue())  # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
{"ts": "...", "level": "info", "logger": "example", "msg": "Scaling up",
 "controller": "demo", "reconcileID": "0f6e", "component": "demo", "replicas": 3}
>>> logging.getLogger("example").removeHandler(handler)

Key precedence, lowest first: context keys, a :class:`Logger`'s ``with_values``, the call's keys.
A key that collides with a field of the line itself (``ts``, ``level``, ``logger``, ``msg``,
``error``, ``stacktrace``) is written with a trailing underscore (``msg_``) rather than dropped.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import json
import logging
import os
import sys
import traceback
from collections.abc import Iterator, Mapping
from typing import IO, Any, Final, Literal

LogFormat = Literal["json", "console"]

KEY_CONTROLLER: Final = "controller"
KEY_OBJECT: Final = "object"
KEY_NAMESPACE: Final = "namespace"
KEY_NAME: Final = "name"
KEY_RECONCILE_ID: Final = "reconcileID"

# The attribute under which a record carries its keys (context keys merged with the call's).
RECORD_KEYS_ATTR: Final = "cpo_keys"

_RESERVED: Final = frozenset({"ts", "level", "logger", "msg", "error", "stacktrace"})
_EMPTY: Final[Mapping[str, Any]] = {}

_context: Final[contextvars.ContextVar[Mapping[str, Any]]] = contextvars.ContextVar(
    "runtime_log_context", default=_EMPTY
)


# --- context ------------------------------------------------------------------------------------


def current_context() -> Mapping[str, Any]:
    """The keys set by the enclosing :func:`log_context` blocks (read-only)."""
    return _context.get()


def current_reconcile_id() -> str | None:
    """The ``reconcileID`` of the reconcile running in this task, if any (controller-runtime's
    ``ReconcileIDFromContext``): handy to tag events or requests with the pass that made them."""
    value = _context.get().get(KEY_RECONCILE_ID)
    return None if value is None else str(value)


@contextlib.contextmanager
def log_context(**keys: Any) -> Iterator[None]:
    """Add ``keys`` to every log line written inside the block, including from tasks it creates."""
    merged = {**_context.get(), **keys}
    token = _context.set(merged)
    try:
        yield
    finally:
        _context.reset(token)


def set_context(keys: Mapping[str, Any]) -> contextvars.Token[Mapping[str, Any]]:
    """Replace the current keys where a ``with`` block does not fit; undo with :func:`reset_context`."""
    return _context.set(keys)


def reset_context(token: contextvars.Token[Mapping[str, Any]]) -> None:
    """Undo a :func:`set_context`."""
    _context.reset(token)


def _keys_of(record: logging.LogRecord) -> Mapping[str, Any]:
    keys = getattr(record, RECORD_KEYS_ATTR, None)
    if keys is None:
        keys = _context.get()
        setattr(record, RECORD_KEYS_ATTR, keys)
    return keys


class ContextFilter(logging.Filter):
    """Attaches the current context keys to records from plain stdlib loggers.

    Records made by :class:`Logger` already carry them (captured when the call was made). Put
    this filter on any handler of your own that should see the keys; it never drops a record.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        _keys_of(record)
        return True


# --- loggers ------------------------------------------------------------------------------------


class Logger:
    """A stdlib logger that takes key/value pairs: ``log.info("msg", key=value)``.

    Context keys are captured when the call is made. ``exc_info`` works as in :mod:`logging`
    (``log.exception`` inside an ``except`` block, or ``exc_info=err``).
    """

    __slots__ = ("_logger", "_values")

    def __init__(self, logger: logging.Logger, values: Mapping[str, Any] | None = None) -> None:
        self._logger = logger
        self._values: Mapping[str, Any] = _EMPTY if values is None else values

    @property
    def name(self) -> str:
        return self._logger.name

    @property
    def stdlib(self) -> logging.Logger:
        """The underlying :class:`logging.Logger`."""
        return self._logger

    def with_values(self, **values: Any) -> Logger:
        """A logger that adds ``values`` to every line (on top of this one's)."""
        return Logger(self._logger, {**self._values, **values})

    def is_enabled_for(self, level: int) -> bool:
        return self._logger.isEnabledFor(level)

    def log(self, level: int, msg: str, /, *, exc_info: Any = None, **keys: Any) -> None:
        self._emit(level, msg, exc_info, keys)

    def debug(self, msg: str, /, **keys: Any) -> None:
        if self._logger.isEnabledFor(logging.DEBUG):  # a disabled line costs one check, no more
            self._emit(logging.DEBUG, msg, None, keys)

    def info(self, msg: str, /, **keys: Any) -> None:
        if self._logger.isEnabledFor(logging.INFO):  # a disabled line costs one check, no more
            self._emit(logging.INFO, msg, None, keys)

    def warning(self, msg: str, /, *, exc_info: Any = None, **keys: Any) -> None:
        self._emit(logging.WARNING, msg, exc_info, keys)

    def error(self, msg: str, /, *, exc_info: Any = None, **keys: Any) -> None:
        self._emit(logging.ERROR, msg, exc_info, keys)

    def exception(self, msg: str, /, **keys: Any) -> None:
        """An error line with the exception being handled."""
        self._emit(logging.ERROR, msg, True, keys)

    def _emit(self, level: int, msg: str, exc_info: Any, keys: Mapping[str, Any]) -> None:
        if not self._logger.isEnabledFor(level):
            return
        merged = {**_context.get(), **self._values, **keys}
        # stacklevel=3: the record's funcName/lineno are those of whoever called info() & co.
        self._logger.log(level, msg, exc_info=exc_info, extra={RECORD_KEYS_ATTR: merged}, stacklevel=3)


def get_logger(name: str) -> Logger:
    """The :class:`Logger` named ``name`` (a stdlib logger underneath, so levels apply as usual)."""
    return Logger(logging.getLogger(name))


# --- formatters ---------------------------------------------------------------------------------


def _timestamp(record: logging.LogRecord) -> str:
    when = datetime.datetime.fromtimestamp(record.created, tz=datetime.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(record.msecs):03d}Z"


def _message(record: logging.LogRecord) -> str:
    try:
        return record.getMessage()
    except Exception:  # a bad %-format must not lose the line
        return f"{record.msg!r} % {record.args!r}"


def _key_fields(record: logging.LogRecord) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for key, value in _keys_of(record).items():
        fields[f"{key}_" if key in _RESERVED else key] = value
    return fields


def _error_fields(record: logging.LogRecord) -> dict[str, str]:
    exc_info = record.exc_info
    if not exc_info or exc_info[1] is None:
        return {}
    err = exc_info[1]
    return {
        "error": f"{type(err).__qualname__}: {err}",
        "stacktrace": "".join(traceback.format_exception(*exc_info)).rstrip("\n"),
    }


def _json_default(value: object) -> str:
    return str(value)


class JSONFormatter(logging.Formatter):
    """One JSON object per line (see the module docstring for the fields)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": _message(record),
        }
        line.update(_key_fields(record))
        line.update(_error_fields(record))
        if record.stack_info:
            line["stack"] = record.stack_info
        return json.dumps(line, default=_json_default, ensure_ascii=False)


class ConsoleFormatter(logging.Formatter):
    """``ts  LEVEL  logger  msg  {keys}``, then the traceback, for reading in a terminal."""

    def format(self, record: logging.LogRecord) -> str:
        parts = [_timestamp(record), record.levelname, record.name, _message(record)]
        keys = _key_fields(record)
        if keys:
            parts.append(json.dumps(keys, default=_json_default, ensure_ascii=False))
        text = "\t".join(parts)
        errors = _error_fields(record)
        if errors:
            text += "\n" + errors["stacktrace"]
        if record.stack_info:
            text += "\n" + record.stack_info
        return text


# --- configuration ------------------------------------------------------------------------------


class _RuntimeHandler(logging.StreamHandler[IO[str]]):
    """The handler :func:`configure_logging` installs; marked so a second call replaces it."""


def default_format() -> LogFormat:
    """``"json"`` inside a cluster (``KUBERNETES_SERVICE_HOST`` is set), ``"console"`` elsewhere."""
    return "json" if os.environ.get("KUBERNETES_SERVICE_HOST") else "console"


def _resolve_level(level: int | str) -> int:
    if isinstance(level, int):
        return level
    resolved = logging.getLevelNamesMapping().get(level.upper())
    if resolved is None:
        raise ValueError(f"unknown log level {level!r}: use debug, info, warning, error or a number")
    return resolved


def configure_logging(
    format: LogFormat | None = None,
    level: int | str = "info",
    *,
    stream: IO[str] | None = None,
    logger: str = "",
) -> logging.Handler:
    """Send the records of ``logger`` (default: the root logger) to ``stream`` in ``format``.

    ``format`` defaults to :func:`default_format`; ``level`` is a name (``"debug"``, ``"info"``,
    …) or a :mod:`logging` number and is set on the logger; ``stream`` defaults to stderr.
    Calling it again replaces the handler installed before, so it is safe to call from both a
    ``main`` and a test. Returns the installed handler.
    """
    chosen = default_format() if format is None else format
    formatter: logging.Formatter
    if chosen == "json":
        formatter = JSONFormatter()
    elif chosen == "console":
        formatter = ConsoleFormatter()
    else:
        raise ValueError(f"unknown log format {chosen!r}: use 'json' or 'console'")
    numeric_level = _resolve_level(level)
    target = logging.getLogger(logger)
    for old in [h for h in target.handlers if isinstance(h, _RuntimeHandler)]:
        target.removeHandler(old)
        old.close()
    handler = _RuntimeHandler(sys.stderr if stream is None else stream)
    handler.setFormatter(formatter)
    handler.addFilter(ContextFilter())
    target.addHandler(handler)
    target.setLevel(numeric_level)
    return handler
