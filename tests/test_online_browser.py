"""The dashboard in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright):
traces move, the R² shown changes, pause and resume, reload, a service restart (the page
reconnects), a drift event shown, the twin's last update shown, nothing loaded from anywhere
but the service. Screenshots (live, and paused at the drift event) are saved in the test's tmp
directory and, with ONLINE_ARTEFACTS=DIR, copied there."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from ident_framework.testing.cli import (
    CHROMIUM,
    CHROMIUM_ARGS,
    running_service,
    wait_for_page,
)

pytestmark = pytest.mark.slow


def chromium_or_skip() -> None:
    if Path(CHROMIUM).exists():
        return
    if os.environ.get("CI"):
        pytest.fail(
            "CI: /usr/bin/chromium is missing (apt-get install -y chromium chromium-driver)"
        )
    pytest.skip("no /usr/bin/chromium (apt-get install -y chromium chromium-driver)")


def test_dashboard_in_headless_chromium(tmp_path):
    chromium_or_skip()
    from playwright.sync_api import sync_playwright

    overrides = (
        "online.twin.every_s=6",
        "online.drift.warmup_s=3",
        "online.payload_change={t_s: 12.0, mass_kg: 3.5}",
    )
    profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=tmp_path)
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1920, "height": 1080},
        )
        errors: list[str] = []
        requests: list[str] = []
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("request", lambda request: requests.append(request.url))
        with running_service(tmp_path / "run", *overrides) as service:
            port = service.url.rsplit(":", 1)[1].rstrip("/")
            page.goto(service.url)
            t0 = wait_for_page(page, "window.identDashboard && window.identDashboard.latestT()")
            r2_shown = wait_for_page(page, "document.querySelector('#fit-now').textContent")
            time.sleep(3)
            t1 = page.evaluate("window.identDashboard.latestT()")
            assert t1 > t0 + 1.0  # traces move
            points = page.evaluate("window.identDashboard.store.trace.t.length")
            assert points > 100
            before = page.locator("#panel-torque").screenshot()
            time.sleep(1.0)
            assert page.locator("#panel-torque").screenshot() != before  # drawn, scrolling
            assert page.inner_text("#fit-now") != r2_shown  # "now: pooled R² 0.99..."
            assert "R²" in page.inner_text("#panel-torque .joint-title .fig")
            # pause: the view stops while data keep coming; resume snaps back to live
            page.click("#pause")
            assert page.inner_text("#mode") == "PAUSED"
            end = page.evaluate("window.identDashboard.view.tEnd")
            page.keyboard.press("ArrowLeft")
            assert page.evaluate("window.identDashboard.view.tEnd") < end
            time.sleep(1.5)
            assert page.evaluate("window.identDashboard.latestT()") > end
            page.click("#pause")
            assert page.inner_text("#mode") == "LIVE"
            # reload: the history comes back at once
            page.reload()
            wait_for_page(
                page, "window.identDashboard && window.identDashboard.store.trace.t.length > 500"
            )
            # drift event shown (payload change at 12 s of source time)
            drift = "window.identDashboard.store.events.some(e => e.kind === 'drift')"
            wait_for_page(page, drift, 60)
            wait_for_page(page, "document.querySelector('#panel-events .tag.drift') !== null")
            # the twin's last update is shown (one fit every 6 s)
            twin_age = "document.querySelector('#twin-age').textContent.includes('updated')"
            wait_for_page(page, twin_age)
            time.sleep(1.0)
            page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
            # click the drift event: the view pauses around it
            page.click("#panel-events li:has(.tag.drift)")
            assert page.inner_text("#mode") == "PAUSED"
            drift_t = page.evaluate(
                "window.identDashboard.store.events.find(e => e.kind === 'drift').t"
            )
            end = page.evaluate("window.identDashboard.view.tEnd")
            width = page.evaluate("window.identDashboard.view.width")
            assert end - width <= drift_t <= end
            time.sleep(0.5)
            page.screenshot(path=str(tmp_path / "dashboard_paused.png"), full_page=True)
            page.keyboard.press("l")
            assert page.inner_text("#mode") == "LIVE"
        # service stopped: the page notices, then reconnects to a new service on the same port
        wait_for_page(page, "window.identDashboard.connection !== 'live'", 30)
        with running_service(tmp_path / "run2", f"online.port={port}", "online.twin.every_s=null"):
            wait_for_page(page, "window.identDashboard.connection === 'live'", 60)
            t_new = wait_for_page(page, "window.identDashboard.latestT()", 30)
            assert t_new < 30  # the new service's own clock
            assert page.inner_text("#connection") == "connected"
        context.close()
    assert not errors, errors
    origins = {url.split("/")[2] for url in requests if not url.startswith("data:")}
    assert origins <= {f"127.0.0.1:{port}"}, origins  # nothing from the internet
    artefacts = os.environ.get("ONLINE_ARTEFACTS")
    for name in ("dashboard.png", "dashboard_paused.png"):
        assert (tmp_path / name).stat().st_size > 50_000
        if artefacts:
            Path(artefacts).mkdir(parents=True, exist_ok=True)
            shutil.copy(tmp_path / name, Path(artefacts) / name)
