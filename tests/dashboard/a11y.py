"""An automated accessibility check for the browser tests: axe-core (vendored under
`tests/dashboard/vendor/`, MPL-2.0, its licence beside it; never served by the product) run on
the page as it is, failing on any serious or critical violation.

`with_axe(context)` adds axe to every page of a Playwright browser context before its own
scripts run (an init script: the page's Content-Security-Policy allows no inline script, and is
not loosened for the check); `assert_accessible(page)` runs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

AXE = Path(__file__).parent / "vendor" / "axe-core-4.14.1.min.js"
# The impacts that fail a page; "minor" and "moderate" ones are reported by axe but not failed.
FAILING = ("serious", "critical")
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]


def with_axe(context: Any) -> Any:
    context.add_init_script(path=str(AXE))
    return context


def assert_accessible(page: Any, *, where: str = "") -> None:
    """No serious or critical violation of WCAG 2.1 A and AA (and axe's best practices) on the
    page as shown now."""
    found = page.evaluate(
        """async (tags) => {
          const result = await window.axe.run(document, {
            runOnly: { type: "tag", values: tags },
            resultTypes: ["violations"],
          });
          return result.violations.map((v) => ({
            id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")),
          }));
        }""",
        TAGS,
    )
    failing = [violation for violation in found if violation["impact"] in FAILING]
    assert not failing, f"{where or page.url}: " + "; ".join(
        f"{v['id']} ({v['impact']}): {v['help']} at {v['nodes']}" for v in failing
    )
