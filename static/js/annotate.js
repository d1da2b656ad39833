// The annotate page: keyboard labeling, type-to-filter, autosaved drafts, time spent, the
// definition pane, the guidelines drawer, undo and the shortcuts dialog.
// No inline script: the page marks its parts with data- attributes (an enforced CSP).
//   digits and letters   pick the option showing that key in the current facet
//   Backspace            clear the current facet      Ctrl+Z  undo the last change
//   n / p                next / previous facet      f   filter the current facet
//   o                    propose a category          x   skip        t   notes
//   Enter                submit (Ctrl+Enter from the notes)            ?   shortcuts
//   Shift+D  definition pane   Shift+G  guidelines   Shift+W  wrap code lines
//   Shift+U  unsure about the current facet (again: no longer)
// The commands added later are upper case (Shift) or named keys: every lower-case letter but
// f n o p t x is an option key on a long facet.
(function () {
  "use strict";
  var RESERVED = "fnopxt";
  var KEYS = "1234567890abcdeghijklmqrsuvwyz".split("").filter(function (k) {
    return RESERVED.indexOf(k) === -1;
  });
  var root = document.querySelector("[data-annotate]");
  if (!root) return;
  root.classList.add("js");  // non-current facets fold to their one-line summary
  var current = 0;
  var saveTimer = null;
  var seconds = parseInt(root.dataset.seconds || "0", 10) || 0;
  var dirty = false;
  var undoStack = [];  // earlier states of this item's choices, for undo
  var lastState = null;
  var pointerWasChecked = null;

  function form() { return document.getElementById("annotate-form"); }
  function facets() { return Array.prototype.slice.call(document.querySelectorAll("[data-facet]")); }
  function options(facet) { return Array.prototype.slice.call(facet.querySelectorAll("[data-option]")); }
  function visibleOptions(facet) {
    return options(facet).filter(function (o) { return !o.hidden; });
  }
  // What keys, the filter's Enter and a click may pick: not a group the codebook's rules lock
  // (data-locked: shown, with its definition on focus, but never chosen).
  function choosable(facet) {
    return visibleOptions(facet).filter(function (o) { return !o.hasAttribute("data-locked"); });
  }
  function typing(target) {
    return target.closest("input[type=text], input[type=search], textarea, select, [contenteditable]") !== null;
  }
  function remember(key, value) {
    try { window.localStorage.setItem("annotate." + key, value); } catch (e) { /* private mode */ }
  }
  function recalled(key) {
    try { return window.localStorage.getItem("annotate." + key); } catch (e) { return null; }
  }
  var sayTimer = null;
  function say(text) {
    var box = document.querySelector("[data-key-message]");
    if (!box) return;
    box.textContent = text;
    clearTimeout(sayTimer);
    sayTimer = setTimeout(function () { box.textContent = ""; }, 6000);
  }
  function facetName(facet) { return facet.querySelector(".facet-name").textContent; }
  function unsureBox(facet) { return facet.querySelector("[data-unsure]"); }

  // --- the one-line summary of each facet's choice -------------------------------------------
  function summarise(facet) {
    var names = Array.prototype.map.call(facet.querySelectorAll("[data-option] input:checked"), function (input) {
      return input.closest("[data-option]").querySelector(".name").textContent;
    });
    var box = facet.querySelector("[data-facet-choice]");
    if (!box) return;
    box.textContent = names.length ? names.join(", ") : "— not chosen";
    box.classList.toggle("none", !names.length);
    // Unsure in words, not a colour alone: a folded facet shows only this line.
    var unsure = unsureBox(facet);
    facet.classList.toggle("unsure", !!(unsure && unsure.checked));
    if (unsure && unsure.checked) {
      var mark = document.createElement("span");
      mark.className = "unsure-mark";
      mark.textContent = "unsure";
      box.append(" · ", mark);
    }
  }
  function summariseAll() { facets().forEach(summarise); }

  // --- current facet and key hints ---------------------------------------------------------
  function setCurrent(index, focus) {
    var all = facets();
    if (!all.length) return;
    current = Math.max(0, Math.min(all.length - 1, index));
    all.forEach(function (facet, i) {
      facet.classList.toggle("current", i === current);
      facet.querySelector("[data-facet-head]").setAttribute("aria-expanded", i === current ? "true" : "false");
      facet.querySelectorAll("[data-key]").forEach(function (kbd) { kbd.textContent = ""; });
    });
    choosable(all[current]).forEach(function (option, i) {
      if (i < KEYS.length) option.querySelector("[data-key]").textContent = KEYS[i];
    });
    if (focus) {
      var input = all[current].querySelector("[data-option]:not([hidden]) input:checked") ||
        all[current].querySelector("[data-option]:not([hidden]):not([data-locked]) input");
      if (input) { input.focus({ preventScroll: true }); }
      reveal(all[current]);
    }
    var showing = all[current].querySelector("[data-option] input:focus");
    showDefinition(showing ? showing.closest("[data-option]") : null);
  }

  // Scroll the facet panel to show the whole facet, or its top when it is taller than the panel.
  function reveal(facet) {
    var panel = facet.closest("[data-facet-panel]");
    if (!panel || panel.scrollHeight <= panel.clientHeight) { facet.scrollIntoView({ block: "nearest" }); return; }
    var p = panel.getBoundingClientRect();
    var f = facet.getBoundingClientRect();
    if (f.height >= p.height || f.top < p.top) panel.scrollTop += f.top - p.top - 2;
    else if (f.bottom > p.bottom) panel.scrollTop += f.bottom - p.bottom + 2;
  }

  function pick(key) {
    var facet = facets()[current];
    if (!facet) return false;
    var index = KEYS.indexOf(key);
    var option = choosable(facet)[index];
    if (index === -1 || !option) return false;
    var input = option.querySelector("input");
    var single = facet.dataset.kind !== "multi";
    if (single && input.checked) {
      say(option.querySelector(".name").textContent + " stays chosen; Backspace clears it.");
    } else {
      input.checked = single ? true : !input.checked;
      changed();
    }
    input.focus({ preventScroll: true });
    showDefinition(option);
    if (single) setCurrent(current + 1, true);
    return true;
  }

  function clearCurrent() {
    var facet = facets()[current];
    if (!facet) return;
    var any = false;
    facet.querySelectorAll("[data-option] input:checked").forEach(function (input) { input.checked = false; any = true; });
    if (any) { changed(); say(facetName(facet) + " cleared (Ctrl+Z undoes)."); }
  }

  function toggleUnsure() {
    var facet = facets()[current];
    var box = facet && unsureBox(facet);
    if (!box) return false;
    box.checked = !box.checked;
    changed();
    say((box.checked ? "Unsure about " : "No longer unsure about ") + facetName(facet) + " (Ctrl+Z undoes).");
    return true;
  }

  // --- undo: every change within this item, the latest first -----------------------------------
  // The choices and the unsure boxes: what undo restores.
  var TRACKED = "[data-option] input, [data-unsure]";
  function state() {
    var f = form();
    if (!f) return "";
    return Array.prototype.filter.call(f.querySelectorAll(TRACKED), function (i) { return i.checked; }).map(function (i) {
      return i.name + "=" + i.value;
    }).sort().join("&");
  }
  function record() {
    var now = state();
    if (lastState !== null && now !== lastState) undoStack.push(lastState);
    lastState = now;
  }
  function undo() {
    if (!undoStack.length) { say("Nothing to undo on this item."); return; }
    var previous = undoStack.pop();
    var wanted = previous ? previous.split("&") : [];
    var f = form();
    var touched = null;
    f.querySelectorAll(TRACKED).forEach(function (input) {
      var on = wanted.indexOf(input.name + "=" + input.value) !== -1;
      if (input.checked !== on) { input.checked = on; touched = touched || input.closest("[data-facet]"); }
    });
    lastState = previous;
    dirty = true; scheduleSave(); summariseAll();
    if (touched) {
      setCurrent(facets().indexOf(touched), true);
      say("Undone: " + facetName(touched) + " is back to " + touched.querySelector("[data-facet-choice]").textContent + ".");
    }
  }

  // --- the definition pane -------------------------------------------------------------------
  function pane() { return document.querySelector("[data-definition-pane]"); }
  function showDefinition(option) {
    document.querySelectorAll("[data-option].showing").forEach(function (o) { o.classList.remove("showing"); });
    var body = document.querySelector("[data-definition-body]");
    if (!option || !body) return;
    option.classList.add("showing");
    var source = option.querySelector(".definition");
    body.replaceChildren.apply(body, Array.prototype.map.call(source.children, function (node) {
      return node.cloneNode(true);
    }));
  }
  function setPane(visible) {
    var box = pane();
    if (!box) return;
    box.hidden = !visible;
    document.querySelector("[data-definition-hidden]").hidden = visible;
    remember("definitions", visible ? "shown" : "hidden");
    say(visible ? "Definitions shown." : "Definitions hidden: Shift+D shows them.");
  }

  // --- type to filter ------------------------------------------------------------------------
  function filter(box) {
    var facet = box.closest("[data-facet]");
    var words = box.value.toLowerCase().trim().split(/\s+/).filter(Boolean);
    var all = options(facet);
    var byId = {};
    all.forEach(function (o) { byId[o.dataset.id] = o; o.hidden = words.length > 0; });
    all.forEach(function (o) {
      var text = o.dataset.search;
      var name = o.dataset.name;
      o.dataset.match = words.length && words.every(function (w) { return name.indexOf(w) !== -1; }) ? "name" : "";
      if (words.every(function (w) { return text.indexOf(w) !== -1; })) {
        if (!o.dataset.match && words.length) o.dataset.match = "text";
        // Show a match with its ancestors, so the hierarchy still reads.
        for (var node = o; node; node = byId[node.dataset.parent]) node.hidden = false;
      }
    });
    // Highlight what Enter will pick: the first option whose name matches, else the first match.
    var shown = choosable(facet);
    var best = shown.find(function (o) { return o.dataset.match === "name"; }) ||
      shown.find(function (o) { return o.dataset.match === "text"; });
    highlight(facet, words.length ? best : null);
    setCurrent(facets().indexOf(facet), false);
  }
  function highlight(facet, option) {
    options(facet).forEach(function (o) { o.classList.toggle("best", o === option); });
    if (option) { showDefinition(option); option.scrollIntoView({ block: "nearest" }); }
  }
  function moveHighlight(box, step) {
    var facet = box.closest("[data-facet]");
    var matches = choosable(facet).filter(function (o) { return o.dataset.match; });
    if (!matches.length) return;
    var at = matches.findIndex(function (o) { return o.classList.contains("best"); });
    highlight(facet, matches[Math.max(0, Math.min(matches.length - 1, at + step))]);
  }

  // Enter in the filter box: the highlighted option.
  function pickHighlighted(box) {
    var facet = box.closest("[data-facet]");
    var best = facet.querySelector("[data-option].best:not([hidden])");
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
    record();
    summariseAll();
    dirty = true;
    scheduleSave();
  }
  function scheduleSave() {
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

  // --- the guidelines drawer -----------------------------------------------------------------
  var drawerReturn = null;
  function drawer() { return document.querySelector("[data-guidelines]"); }
  function loadCodebookGuideline() {
    var box = drawer();
    var target = box.querySelector("[data-codebook-guideline]");
    var url = box.dataset.codebookGuidelineUrl;
    if (!url || target.dataset.loaded) return;
    target.dataset.loaded = "1";
    fetch(url, { credentials: "same-origin" }).then(function (response) {
      if (!response.ok) throw new Error(String(response.status));
      return response.text();
    }).then(function (html) {
      var doc = new DOMParser().parseFromString(html, "text/html");
      var article = doc.querySelector("main article") || doc.querySelector("main");
      if (!article) throw new Error("no guideline");
      article.querySelectorAll(".no-print, script, [data-print]").forEach(function (n) { n.remove(); });
      // Its anchors (#facet-KEY) would clash with this page's facets: give them a prefix.
      article.querySelectorAll("[id]").forEach(function (n) { n.id = "guideline-" + n.id; });
      article.querySelectorAll("[aria-labelledby]").forEach(function (n) {
        n.setAttribute("aria-labelledby", "guideline-" + n.getAttribute("aria-labelledby"));
      });
      article.querySelectorAll('a[href^="#"]').forEach(function (a) {
        a.setAttribute("href", "#guideline-" + a.getAttribute("href").slice(1));
      });
      article.querySelectorAll("h1").forEach(function (h) {
        var h4 = document.createElement("p"); h4.className = "meta"; h4.textContent = h.textContent; h.replaceWith(h4);
      });
      target.replaceChildren(document.importNode(article, true));
      var search = box.querySelector("[data-guidelines-search]");
      if (search.value) searchGuidelines(search);
    }).catch(function (error) {
      target.dataset.loaded = "";
      target.textContent = "The codebook guideline did not load (" + error.message + "); the link above opens it.";
    });
  }
  function setDrawer(open) {
    var box = drawer();
    if (!box) return;
    box.hidden = !open;
    document.querySelectorAll("[data-guidelines-toggle]").forEach(function (b) { b.setAttribute("aria-expanded", String(open)); });
    if (open) {
      drawerReturn = document.activeElement;
      loadCodebookGuideline();
      box.querySelector("[data-guidelines-search]").focus();
    } else if (drawerReturn && document.contains(drawerReturn)) {
      drawerReturn.focus({ preventScroll: true });
    } else {
      setCurrent(current, true);
    }
  }
  // Search: keep the blocks (paragraphs, list items, category entries) holding every word.
  function searchGuidelines(box) {
    var words = box.value.toLowerCase().trim().split(/\s+/).filter(Boolean);
    var blocks = drawer().querySelectorAll(
      ".guidelines-body .markdown > *, .guidelines-body .entry, .guidelines-body [data-codebook-guideline] article > p, .guidelines-body [data-codebook-guideline] article > ol > li"
    );
    var shown = 0;
    blocks.forEach(function (block) {
      var text = block.textContent.toLowerCase();
      var hit = words.every(function (w) { return text.indexOf(w) !== -1; });
      block.hidden = !hit;
      if (hit) shown += 1;
    });
    drawer().querySelector("[data-guidelines-count]").textContent = words.length ? shown + " matching" : "";
  }

  // --- the shortcuts dialog and the wrap toggle ----------------------------------------------
  function toggleShortcuts() {
    var dialog = document.querySelector("[data-shortcuts]");
    if (!dialog) return;
    if (dialog.open) dialog.close(); else dialog.showModal();
  }
  function setWrap(on) {
    var thread = document.querySelector("[data-thread]");
    if (!thread) return;
    thread.classList.toggle("wrap-code", on);
    document.querySelectorAll("[data-wrap-toggle]").forEach(function (b) { b.setAttribute("aria-pressed", String(on)); });
    remember("wrap", on ? "on" : "off");
  }

  // --- events --------------------------------------------------------------------------------
  document.addEventListener("change", function (event) {
    if (event.target.closest("#annotate-form") && !event.target.closest("[data-propose]")) changed();
  });
  document.addEventListener("input", function (event) {
    if (event.target.matches("[data-filter]")) filter(event.target);
    else if (event.target.matches("[data-guidelines-search]")) searchGuidelines(event.target);
    else if (event.target.id === "notes") { dirty = true; scheduleSave(); }
  });
  document.addEventListener("focusin", function (event) {
    var facet = event.target.closest("[data-facet]");
    // Not on a facet's heading: the facets would fold under the pointer before its click.
    if (facet && !event.target.closest("[data-facet-head]")) {
      var index = facets().indexOf(facet);
      if (index !== current) setCurrent(index, false);
    }
    var option = event.target.closest("[data-option]");
    if (option) showDefinition(option);
  });
  document.addEventListener("mouseover", function (event) {
    var option = event.target.closest && event.target.closest("[data-option]");
    if (option && !option.classList.contains("showing")) showDefinition(option);
  });
  // A picked single choice clicked again clears (keys never clear: Backspace does).
  document.addEventListener("pointerdown", function (event) {
    var label = event.target.closest && event.target.closest("[data-option] label");
    var input = label && label.querySelector("input[type=radio]");
    pointerWasChecked = input && input.checked ? input : null;
  });
  document.addEventListener("click", function (event) {
    var t = event.target;
    var locked = t.matches && t.matches("[data-locked] input");
    if (locked) {  // a click, Space or an arrow key landing on a locked group: not chosen
      event.preventDefault();
      say(t.closest("[data-option]").querySelector(".name").textContent + " is a group: choose one of its sub-categories.");
      return;
    }
    var head = t.closest("[data-facet-head]");
    if (head) { setCurrent(facets().indexOf(head.closest("[data-facet]")), true); return; }
    if (pointerWasChecked && t === pointerWasChecked) {
      var input = pointerWasChecked;
      pointerWasChecked = null;
      input.checked = false;
      changed();
      say(input.closest("[data-option]").querySelector(".name").textContent + " cleared (Ctrl+Z undoes).");
      return;
    }
    if (t.closest("[data-shortcuts-open]")) toggleShortcuts();
    else if (t.closest("[data-guidelines-toggle]")) setDrawer(drawer().hidden);
    else if (t.closest("[data-guidelines-close]")) setDrawer(false);
    else if (t.closest("[data-definition-toggle]")) setPane(false);
    else if (t.closest("[data-wrap-toggle]")) setWrap(!document.querySelector("[data-thread]").classList.contains("wrap-code"));
    else if (t.closest("[data-undo]")) undo();
  });
  document.addEventListener("submit", function (event) {
    if (event.target.id === "annotate-form") { clearTimeout(saveTimer); event.target.dataset.submitted = "1"; }
  }, true);
  document.addEventListener("visibilitychange", function () { if (document.visibilityState === "hidden") flush(); });
  window.addEventListener("pagehide", flush);
  // After settle, not after swap: htmx puts the old attributes on elements that keep their id
  // and restores the new ones in its settle step, which would wipe the class set here. The form
  // swaps with settle:0ms, so the settle runs in the same task as the swap: a key typed the
  // moment a refusal arrives waits for this and lands on the facet it shows.
  document.body.addEventListener("htmx:afterSettle", function () {
    // The form came back with errors: go to the first facet that needs attention.
    var all = facets();
    var invalid = all.findIndex(function (f) { return f.classList.contains("invalid"); });
    summariseAll();
    lastState = state();
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
    if ((event.ctrlKey || event.metaKey) && !event.altKey && !event.shiftKey && event.key.toLowerCase() === "z" && !typing(target)) {
      event.preventDefault(); undo(); return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (target.closest("[data-shortcuts]")) {
      if (event.key === "?") { event.preventDefault(); toggleShortcuts(); }
      return;  // the dialog's own keys (Esc closes it)
    }
    if (target.closest("[data-guidelines]")) {
      if (event.key === "Escape") { event.preventDefault(); setDrawer(false); }
      return;
    }
    if (target.matches("[data-filter]")) {
      if (event.key === "Enter") {
        event.preventDefault();
        pickHighlighted(target);
      } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        moveHighlight(target, event.key === "ArrowDown" ? 1 : -1);
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
    if (event.key === "Escape") {  // the open drawer first, else the definition pane
      if (drawer() && !drawer().hidden) setDrawer(false);
      else if (pane() && !pane().hidden) setPane(false);
      return;
    }
    if (event.key === "Enter") {
      if (target.closest("[data-skip-form], summary, button, a")) return;  // their own Enter
      event.preventDefault(); submitForm(); return;
    }
    if (event.key === "Backspace" || event.key === "Delete") {
      event.preventDefault(); clearCurrent(); return;
    }
    var handled = true;
    // Shift itself, not the upper-case letter: with Caps Lock on, d g w still pick options.
    var shifted = event.shiftKey ? event.key.toUpperCase() : "";
    if (shifted === "D") setPane(pane() ? pane().hidden : false);
    else if (shifted === "G") setDrawer(drawer() ? drawer().hidden : false);
    else if (shifted === "W") setWrap(!document.querySelector("[data-thread]").classList.contains("wrap-code"));
    else if (shifted === "U") handled = toggleUnsure();
    else if (event.key === "?") toggleShortcuts();
    else {
      var key = event.key.toLowerCase();
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
      else handled = pick(key);
    }
    if (handled) event.preventDefault();
  });

  // Where the last item left the pane and the wrapping.
  if (recalled("definitions") === "hidden") { pane().hidden = true; document.querySelector("[data-definition-hidden]").hidden = false; }
  if (recalled("wrap") === "on") setWrap(true);
  summariseAll();
  lastState = state();

  // Resume where the work stopped: the first facet that needs attention or has no label yet.
  (function () {
    var all = facets();
    var start = all.findIndex(function (f) { return f.classList.contains("invalid"); });
    if (start === -1) start = all.findIndex(function (f) { return !f.querySelector("[data-option] input:checked"); });
    setCurrent(start === -1 ? 0 : start, true);
  })();
})();
