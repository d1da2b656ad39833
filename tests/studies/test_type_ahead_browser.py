"""Keys typed the moment a refused item comes back land on the facet the page shows.

The refusal swaps the form; a key pressed in the next few milliseconds used to reach the facet
the page showed (Distributed), after which htmx's settle step put the server's classes back and
the page jumped to the first invalid facet again, so the next key picked there: "1 2" chose
Distributed = yes and then Distributed = no. The test presses the first key from a zero-delay
timer after the swap, as a fast typist's key arrives."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.studies.test_labeling_layout_browser import make_lab, open_labeling

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PRESS_AFTER_SWAP = """() => {
  document.body.addEventListener("htmx:afterSwap", () => setTimeout(() => {
    const target = document.activeElement || document.body;
    target.dispatchEvent(new KeyboardEvent("keydown", {key: "1", bubbles: true, cancelable: true}));
    document.body.dataset.afterKey = document.querySelector(".facet.current legend").textContent.trim();
  }, 0), {once: true});
}"""


def test_a_key_pressed_as_the_refusal_arrives_picks_on_the_facet_shown(browser, live_server):
    lab = make_lab(annotators=1, k=1)
    context, page = open_labeling(browser, live_server.url, lab, (1280, 720))
    page.keyboard.press("1")  # Relevant: on to Distributed
    expect(page.locator(".facet.current legend")).to_contain_text("Distributed")
    page.evaluate(PRESS_AFTER_SWAP)
    page.keyboard.press("Enter")  # relevant and nothing else: the rules refuse
    expect(page.locator("#error-distributed")).to_contain_text("required when Screening is")
    expect(page.locator("body[data-after-key]")).to_have_count(1)
    assert "Stage" in page.locator("body").get_attribute("data-after-key")  # picked, moved on
    page.keyboard.press("2")
    expect(page.locator("#facet-distributed [data-facet-choice]")).to_contain_text("Yes")
    expect(page.locator("#facet-stage input:checked")).to_have_count(1)
    expect(page.locator(".facet.current legend")).to_contain_text("Symptom")
    context.close()
