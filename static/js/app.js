// Keyboard shortcuts shared by every page. Each page lists the ones it offers.
//   /      focus the search box
//   j / k  move to the next / previous row of a list (Enter opens it)
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
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (event.key === "/") {
      var search = document.querySelector("input[type=search]");
      if (search) { event.preventDefault(); search.focus(); search.select(); }
    } else if (event.key === "j") {
      moveRow(1);
    } else if (event.key === "k") {
      moveRow(-1);
    }
  });
})();
