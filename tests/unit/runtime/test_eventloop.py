"""runtime.eventloop: uvloop when asked for or installed, asyncio's loop otherwise, clear errors."""

from __future__ import annotations

import asyncio
import importlib.util
import sys

import pytest

from runtime.eventloop import loop_factory, loop_name, run

HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None


async def which_loop() -> str:
    await asyncio.sleep(0)
    return loop_name()


def test_asyncio_forces_the_standard_loop() -> None:
    assert loop_factory("asyncio") is None
    assert run(which_loop(), loop="asyncio") == "asyncio"


@pytest.mark.skipif(not HAS_UVLOOP, reason="uvloop is not installed")
def test_auto_and_uvloop_run_on_uvloop_when_installed() -> None:
    assert run(which_loop()) == "uvloop"
    assert run(which_loop(), loop="uvloop") == "uvloop"


def test_without_uvloop_auto_falls_back_and_uvloop_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop now raises ImportError
    assert run(which_loop()) == "asyncio"
    coroutine = which_loop()
    with pytest.raises(RuntimeError, match=r"controlplane-operator\[uvloop\]"):
        run(coroutine, loop="uvloop")
    assert coroutine.cr_frame is None  # closed, so no "never awaited" warning


def test_an_unknown_loop_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="auto, uvloop, asyncio"):
        loop_factory("trio")  # type: ignore[arg-type]
