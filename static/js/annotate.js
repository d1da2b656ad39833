// The annotate page: keyboard labeling, type-to-filter, autosaved drafts, time spent.
// No inline script: the page marks its parts with data- attributes (a strict CSP comes later).
//   digits and letters   pick the option showing that key in the current facet
//   n / p                next / previous facet      f   filter the current facet
//   o                    propose a category          x   skip        t   notes
//   Enter                submit (Ctrl+Enter from the notes)            ?   shortcuts
(function () {
  "use strict";
  var RESERVED = "fnopxt";
  var KEYS = "1234567890abcdeghijklmqrsuvwyz".split("").filter(function (k) {
    return RESERVED.indexOf(k) === -1;
  });
  var root = document.querySelector("[data-annotate]");
  if (!root) return;
  var current = 0;
  var saveTimer = null;
  var seconds = parseInt(root.dataset.seconds || "0", 10) || 0;
  var dirty = false;

  function form() { return document.getElementById("annotate-form"); }
  function facets() { return Array.prototype.slice.call(document.querySelectorAll("[data-facet]")); }
  function visibleOptions(facet) {
    return Array.prototype.slice.call(facet.querySelectorAll("[data-option]")).filter(function (o) {
      return !o.hidden;
    });
  }
  function typing(target) {
    return target.closest("input[type=text], input[type=search], textarea, select, [contenteditable]") !== null;
  }

  // --- current facet and key hints ---------------------------------------------------------
  function setCurrent(index, focus) {
    var all = facets();
    if (!all.length) return;
    current = Math.max(0, Math.min(all.length - 1, index));
    all.forEach(function (facet, i) {
      facet.classList.toggle("current", i === current);
      facet.querySelectorAll("[data-key]").forEach(function (kbd) { kbd.textContent = ""; });
    });
    visibleOptions(all[current]).forEach(function (option, i) {
      if (i < KEYS.length) option.querySelector("[data-key]").textContent = KEYS[i];
    });
    if (focus) {
      var input = all[current].querySelector("input:checked") || all[current].querySelector("[data-option]:not([hidden]) input");
      if (input) { input.focus({ preventScroll: true }); }
      all[current].scrollIntoView({ block: "nearest" });
    }
  }

  function pick(key) {
    var facet = facets()[current];
    if (!facet) return false;
    var index = KEYS.indexOf(key);
    var option = visibleOptions(facet)[index];
    if (index === -1 || !option) return false;
    var input = option.querySelector("input");
    var single = facet.dataset.kind !== "multi";
    if (single && input.checked) {
      input.checked = false;  // the same key again clears a single choice
    } else {
      input.checked = !input.checked || single;
    }
    input.focus({ preventScroll: true });
    changed();
    if (single && input.checked) setCurrent(current + 1, true);
    return true;
  }

  // --- type to filter ------------------------------------------------------------------------
  function filter(box) {
    var facet = box.closest("[data-facet]");
    var words = box.value.toLowerCase().trim().split(/\s+/).filter(Boolean);
    var options = Array.prototype.slice.call(facet.querySelectorAll("[data-option]"));
    var byId = {};
    options.forEach(function (o) { byId[o.dataset.id] = o; o.hidden = words.length > 0; });
    options.forEach(function (o) {
      var text = o.dataset.search;
      var name = o.dataset.name;
      o.dataset.match = words.length && words.every(function (w) { return name.indexOf(w) !== -1; }) ? "name" : "";
      if (words.every(function (w) { return text.indexOf(w) !== -1; })) {
        if (!o.dataset.match && words.length) o.dataset.match = "text";
        // Show a match with its ancestors, so the hierarchy still reads.
        for (var node = o; node; node = byId[node.dataset.parent]) node.hidden = false;
      }
    });
    setCurrent(facets().indexOf(facet), false);
  }

  // Enter in the filter box: the first option whose name matches, else the first match.
  function pickBestMatch(box) {
    var facet = box.closest("[data-facet]");
    var options = visibleOptions(facet);
    var best = options.find(function (o) { return o.dataset.match === "name"; }) ||
      options.find(function (o) { return o.dataset.match === "text"; });
    if (best) {
      var input = best.querySelector("input");
      input.checked = facet.dataset.kind === "multi" ? !input.checked : true;
      changed();
    }
    box.value = "";
    filter(box);
    if (best && facet.dataset.kind !== "multi") setCurrent(current + 1, true);
    else setCurrent(current, true);
  }

  // --- autosave and time spent ---------------------------------------------------------------
  function changed() {
    dirty = true;
    clearTimeout(saveTimer);
    saveTimer = setTimeout(save, 600);
  }
  function save() {
    var f = form();
    if (!f || !dirty || f.dataset.submitted === "1") return;
    dirty = false;
    fetch(root.dataset.draftUrl, {
      method: "POST", body: new FormData(f), credentials: "same-origin",
      headers: { "HX-Request": "true" },
    }).then(function (response) {
      return response.text().then(function (html) {
        var status = document.querySelector("[data-save-status]");
        if (!response.ok) { dirty = true; html = '<span id="save-status" class="save-status error" role="status" data-save-status>Not saved (' + response.status + '); retrying…</span>'; setTimeout(save, 3000); }
        if (status) status.outerHTML = html;
      });
    }).catch(function () { dirty = true; setTimeout(save, 3000); });
  }
  function flush() {
    var f = form();
    if (f && dirty && f.dataset.submitted !== "1" && navigator.sendBeacon) {
      navigator.sendBeacon(root.dataset.draftUrl, new FormData(f));
      dirty = false;
    }
  }
  setInterval(function () {
    if (document.visibilityState !== "visible") return;
    seconds += 1;
    var input = document.querySelector("[data-seconds-input]");
    if (input) input.value = seconds;
  }, 1000);

  // --- events --------------------------------------------------------------------------------
  document.addEventListener("change", function (event) {
    if (event.target.closest("#annotate-form") && !event.target.closest("[data-propose]")) changed();
  });
  document.addEventListener("input", function (event) {
    if (event.target.matches("[data-filter]")) filter(event.target);
    else if (event.target.id === "notes") changed();
  });
  document.addEventListener("focusin", function (event) {
    var facet = event.target.closest("[data-facet]");
    if (facet) {
      var index = facets().indexOf(facet);
      if (index !== current) setCurrent(index, false);
    }
  });
  document.addEventListener("submit", function (event) {
    if (event.target.id === "annotate-form") { clearTimeout(saveTimer); event.target.dataset.submitted = "1"; }
  }, true);
  document.addEventListener("visibilitychange", function () { if (document.visibilityState === "hidden") flush(); });
  window.addEventListener("pagehide", flush);
  // After settle, not after swap: htmx puts the old attributes on elements that keep their id
  // and restores the new ones 20 ms later (its settle step), which would wipe the class set here.
  document.body.addEventListener("htmx:afterSettle", function () {
    // The form came back with errors: go to the first facet that needs attention.
    var all = facets();
    var invalid = all.findIndex(function (f) { return f.classList.contains("invalid"); });
    setCurrent(invalid === -1 ? current : invalid, true);
  });

  function submitForm() {
    var f = form();
    if (f) f.requestSubmit();
  }
  function openDetails(selector, focusSelector) {
    var details = document.querySelector(selector);
    if (!details) return;
    details.open = true;
    var target = details.querySelector(focusSelector);
    if (target) target.focus();
  }

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && target.closest("#annotate-form")) {
      event.preventDefault(); submitForm(); return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (target.matches("[data-filter]")) {
      if (event.key === "Enter") {
        event.preventDefault();
        pickBestMatch(target);
      } else if (event.key === "Escape") {
        target.value = ""; filter(target); setCurrent(current, true);
      }
      return;
    }
    if (event.key === "Enter" && target.matches("[data-propose-name], [data-propose] input")) {
      event.preventDefault();
      target.closest("[data-propose]").querySelector("[data-propose-button]").click();
      return;
    }
    if (event.key === "Enter" && target.closest("[data-skip-form]") && target.tagName === "SELECT") {
      event.preventDefault(); target.closest("form").requestSubmit(); return;
    }
    if (event.key === "Escape" && target.closest("details")) {
      target.closest("details").open = false; setCurrent(current, true); return;
    }
    if (typing(target)) return;
    if (event.key === "Enter") {
      if (target.closest("[data-skip-form], summary, button, a")) return;  // their own Enter
      event.preventDefault(); submitForm(); return;
    }
    var key = event.key.toLowerCase();
    var handled = true;
    if (key === "n" || key === "]") setCurrent(current + 1, true);
    else if (key === "p" || key === "[") setCurrent(current - 1, true);
    else if (key === "f" || key === "/") {
      var box = facets()[current] && facets()[current].querySelector("[data-filter]");
      if (box) { box.focus(); box.select(); } else handled = false;
    } else if (key === "o") {
      var propose = facets()[current] && facets()[current].querySelector("[data-propose]");
      if (propose) { propose.open = true; propose.querySelector("[data-propose-name]").focus(); }
    } else if (key === "x") openDetails("[data-skip]", "select");
    else if (key === "t") { var notes = document.getElementById("notes"); if (notes) notes.focus(); }
    else if (key === "?") { var help = document.querySelector("[data-shortcuts]"); if (help) help.open = !help.open; }
    else handled = pick(key);
    if (handled) event.preventDefault();
  });

  // Resume where the work stopped: the first facet that needs attention or has no label yet.
  (function () {
    var all = facets();
    var start = all.findIndex(function (f) { return f.classList.contains("invalid"); });
    if (start === -1) start = all.findIndex(function (f) { return !f.querySelector("input:checked"); });
    setCurrent(start === -1 ? 0 : start, true);
  })();
})();
