// Live progress of a running investigation: poll the page's progress.json every 2 s, update the
// numbers in place, and reload the page once the investigation has finished (succeeded or failed).
(function () {
  "use strict";
  var panel = document.getElementById("progress");
  if (!panel) { return; }
  var url = panel.getAttribute("data-url");
  var POLL_MS = 2000;

  function show(name, value) {
    var el = panel.querySelector('[data-field="' + name + '"]');
    if (el && value !== undefined && value !== null) { el.textContent = String(value); }
  }

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" }, cache: "no-store" })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (state) {
        if (state.finished) { window.location.reload(); return; }
        show("status", state.status);
        var p = state.progress || {};
        show("turn", p.turn);
        show("last_tool", p.last_tool);
        show("hypotheses", p.hypotheses);
        window.setTimeout(poll, POLL_MS);
      })
      .catch(function () { window.setTimeout(poll, POLL_MS * 2); }); // keep trying, a little slower
  }

  window.setTimeout(poll, POLL_MS);
})();
