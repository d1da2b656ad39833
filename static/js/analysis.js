// Analysis page: a [data-copy="#id"] button copies that field's text to the clipboard (no
// inline script: the Content-Security-Policy forbids it).
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-copy]");
    if (!button) return;
    var field = document.querySelector(button.getAttribute("data-copy"));
    var done = document.querySelector("[data-copied]");
    if (!field) return;
    function shown() { if (done) done.hidden = false; }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(shown, function () { field.select(); });
    } else {
      field.select();
      if (document.execCommand("copy")) shown();
    }
  });
})();

// A filter or level chosen applies at once (the Apply button stays for keyboards and no-JS).
(function () {
  "use strict";
  document.addEventListener("change", function (event) {
    var select = event.target.closest && event.target.closest(".analysis-filters select");
    if (select && select.form.requestSubmit) select.form.requestSubmit();
  });
})();
