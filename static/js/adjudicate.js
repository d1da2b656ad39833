// The adjudicate page: work through the facets with the keyboard.
// No inline script: the page marks its parts with data- attributes.
//   n / p     next / previous facet          d   next facet where the annotators differ
//   1 … 9     take that annotator's labels for the current facet
//   e         edit the current facet's final labels (Esc returns)
//   r / c     reason / comment               ?   shortcuts
//   Enter     save the decision and go to the next item (Ctrl+Enter from any field)
(function () {
  "use strict";
  if (!document.querySelector("[data-adjudicate]")) return;
  var current = 0;

  function rows() { return Array.prototype.slice.call(document.querySelectorAll("[data-row]")); }
  function form() { return document.querySelector("[data-decision-form]"); }
  function finalField(row) {
    return row && document.querySelector('[data-final="' + row.dataset.facetId + '"]');
  }
  function typing(target) {
    return target.closest("input, textarea, select, [contenteditable]") !== null;
  }

  function setCurrent(index) {
    var all = rows();
    if (!all.length) return;
    current = Math.max(0, Math.min(all.length - 1, index));
    all.forEach(function (row, i) { row.classList.toggle("current", i === current); });
    document.querySelectorAll(".decision-form .field").forEach(function (f) { f.classList.remove("current"); });
    var field = finalField(all[current]);
    if (field) {
      field.closest(".field").classList.add("current");
      all[current].scrollIntoView({ block: "nearest" });
    }
  }

  function nextDiffering() {
    var all = rows();
    for (var step = 1; step <= all.length; step++) {
      var i = (current + step) % all.length;
      if (all[i].classList.contains("differs")) { setCurrent(i); return; }
    }
  }

  // Copy annotator `index`'s labels of the current facet into its final field.
  function take(index) {
    var row = rows()[current];
    var cell = row && row.querySelector('[data-index="' + index + '"]');
    var field = finalField(row);
    if (!cell || !field) return false;
    var ids = cell.dataset.take ? cell.dataset.take.split(",") : [];
    Array.prototype.forEach.call(field.options, function (option) {
      option.selected = ids.indexOf(option.value) !== -1 || (!ids.length && option.value === "");
    });
    field.dispatchEvent(new Event("change", { bubbles: true }));
    if (row.nextElementSibling && row.nextElementSibling.matches("[data-row]")) setCurrent(current + 1);
    return true;
  }

  function focusField(name) {
    var f = form();
    var field = f && f.querySelector('[name="' + name + '"]');
    if (field) field.focus();
  }

  document.addEventListener("focusin", function (event) {
    var facet = event.target.dataset && event.target.dataset.final;
    if (!facet) return;
    var index = rows().findIndex(function (row) { return row.dataset.facetId === facet; });
    if (index !== -1 && index !== current) setCurrent(index);
  });

  function toggleShortcuts() {
    var dialog = document.querySelector("[data-shortcuts]");
    if (!dialog) return;
    if (dialog.open) dialog.close(); else dialog.showModal();
  }
  document.addEventListener("click", function (event) {
    if (event.target.closest && event.target.closest("[data-shortcuts-open]")) toggleShortcuts();
  });

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (target.closest("[data-shortcuts]")) {  // the dialog's own keys (Esc closes it)
      if (event.key === "?") { event.preventDefault(); toggleShortcuts(); }
      return;
    }
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      if (form()) { event.preventDefault(); form().requestSubmit(); }
      return;
    }
    if (event.key === "Escape" && target.closest("[data-decision-form]")) {
      target.blur(); setCurrent(current); return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || typing(target)) return;
    if (event.key === "Enter") {
      if (target.closest("summary, button, a, details")) return;  // their own Enter
      if (form()) { event.preventDefault(); form().requestSubmit(); }
      return;
    }
    var key = event.key.toLowerCase();
    var handled = true;
    if (key === "n" || key === "]") setCurrent(current + 1);
    else if (key === "p" || key === "[") setCurrent(current - 1);
    else if (key === "d") nextDiffering();
    else if (key === "e") { var field = finalField(rows()[current]); if (field) field.focus(); else handled = false; }
    else if (key === "r") focusField("reason");
    else if (key === "c") focusField("comment");
    else if (event.key === "?") toggleShortcuts();
    else if (/^[1-9]$/.test(key)) handled = take(key);
    else handled = false;
    if (handled) event.preventDefault();
  });

  // After a swap (errors or a conflict), start again at the first facet with an error; on
  // afterSettle, since htmx's settle step rewrites the attributes of elements that keep their id.
  document.body.addEventListener("htmx:afterSettle", function () {
    var invalid = rows().findIndex(function (row) {
      var field = finalField(row);
      return field && field.closest(".field").querySelector(".error");
    });
    setCurrent(invalid === -1 ? current : invalid);
  });

  // Begin at the first facet where the annotators differ.
  var first = rows().findIndex(function (row) { return row.classList.contains("differs"); });
  setCurrent(first === -1 ? 0 : first);
})();
