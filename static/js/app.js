// Keyboard shortcuts shared by every page. Each page lists the ones it offers.
//   /      focus the search box
//   Esc    leave the search box (so that j / k move again)
//   j / k  move to the next / previous row of a list (Enter opens it)
//   Enter  on a page with a [data-start] link and no row chosen: follow it ("start with the first")
// A link or button marked data-print prints the page (no inline onclick: the CSP forbids it).
// And focus for swapped-in forms: an element marked data-autofocus gets focus once, when it
// arrives (page load or htmx swap). The HTML autofocus attribute is not used there: Chromium
// applies it a frame later, stealing focus from whatever the user has started typing in.
(function () {
  "use strict";
  function focusArrived() {
    var target = document.querySelector("[data-autofocus]");
    if (target) {
      target.removeAttribute("data-autofocus");
      target.focus();
    }
  }
  document.addEventListener("DOMContentLoaded", focusArrived);
  document.addEventListener("htmx:afterSettle", focusArrived);

  function typing(target) {
    return target.closest("input, textarea, select, [contenteditable]") !== null;
  }
  function moveRow(step) {
    var links = Array.prototype.slice.call(document.querySelectorAll("[data-row-link]"));
    if (!links.length) return;
    var current = links.indexOf(document.activeElement);
    var next = current === -1 ? (step > 0 ? 0 : links.length - 1) : current + step;
    next = Math.max(0, Math.min(links.length - 1, next));
    links[next].focus();
    links[next].closest("tr").scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("click", function (event) {
    var trigger = event.target.closest && event.target.closest("[data-print]");
    if (trigger) { event.preventDefault(); window.print(); }
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && event.target.matches && event.target.matches("input[type=search]") && !event.target.closest("[data-annotate], [data-guidelines]")) {
      event.preventDefault();  // keep the query (Chromium's Escape would clear it)
      event.target.blur();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (event.key === "Enter") {
      var start = document.querySelector("[data-start]");
      var onNothing = event.target === document.body || event.target === document.documentElement || event.target.matches("main");
      if (start && onNothing) { event.preventDefault(); start.click(); }
    } else if (event.key === "/") {
      var search = document.querySelector("input[type=search]");
      if (search) { event.preventDefault(); search.focus(); search.select(); }
    } else if (event.key === "j") {
      moveRow(1);
    } else if (event.key === "k") {
      moveRow(-1);
    }
  });
})();
