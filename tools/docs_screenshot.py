"""Take the online dashboard's screenshot for the docs (`docs/images/online_dashboard.png`).

    python tools/docs_screenshot.py [--out docs/images/online_dashboard.png] [--wait-s 40]

Starts `python -m ident_framework mode=online` on the simulated UR12e (a quick excitation
search; a payload change 1.5 -> 3.5 kg planted at 20 s so that a drift alarm shows, a twin fit
every 10 s), opens its dashboard in Debian's headless Chromium (`apt-get install -y chromium
chromium-driver`; driven by Playwright, never `playwright install`), waits until the drift and
a twin update are on the page, and saves the viewport as a PNG. Needs the `online` and `test`
extras.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from ident_framework.testing.cli import (
    CHROMIUM,
    CHROMIUM_ARGS,
    running_service,
    wait_for_page,
)

ROOT = Path(__file__).resolve().parents[1]
OVERRIDES = (
    "online.twin.every_s=10",
    "online.drift.warmup_s=3",
    "online.payload_change={t_s: 20.0, mass_kg: 3.5}",
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs/images/online_dashboard.png")
    parser.add_argument("--wait-s", type=float, default=40.0, help="s of source time shown")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="ident-docs-screenshot-") as tmp:
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                str(Path(tmp) / "profile"),
                executable_path=CHROMIUM,
                args=CHROMIUM_ARGS,
                headless=True,
                viewport={"width": 1600, "height": 1000},
            )
            page = context.new_page()
            with running_service(Path(tmp) / "run", *OVERRIDES) as service:
                print(f"dashboard at {service.url}", file=sys.stderr)
                page.goto(service.url)
                wait_for_page(page, "window.identDashboard && window.identDashboard.latestT()", 60)
                wait_for_page(page, f"window.identDashboard.latestT() > {args.wait_s}", 300)
                wait_for_page(
                    page, "window.identDashboard.store.events.some(e => e.kind === 'drift')", 60
                )
                wait_for_page(
                    page, "document.querySelector('#twin-age').textContent.includes('updated')", 60
                )
                time.sleep(1.0)
                args.out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(args.out))
            context.close()
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
