// Live updates of the weir console: an element with data-stream opens a
// server-sent event stream; each "update" event is a JSON object whose
// fields fill the elements that name them. data-live="key" takes
// the text of obj[key] or of obj.brokers[key]; data-live-d="key" takes
// the path of an inline SVG sparkline; data-live-lag="id" takes obj.lags[id];
// data-live-value="key" (a progress bar) takes obj.values[key] as its
// value, and data-live-pct="key" the same number as text.
"use strict";
(function () {
  function apply(root, obj) {
    root.querySelectorAll("[data-live]").forEach(function (el) {
      var k = el.getAttribute("data-live");
      var v = k in obj ? obj[k] : (obj.brokers || {})[k];
      if (v !== undefined && typeof v !== "object") { el.textContent = String(v); }
    });
    root.querySelectorAll("[data-live-d]").forEach(function (el) {
      var v = obj[el.getAttribute("data-live-d")];
      if (typeof v === "string") { el.setAttribute("d", v); }
    });
    root.querySelectorAll("[data-live-lag]").forEach(function (el) {
      var v = (obj.lags || {})[el.getAttribute("data-live-lag")];
      if (v !== undefined) { el.textContent = String(v); }
    });
    root.querySelectorAll("[data-live-value]").forEach(function (el) {
      var v = (obj.values || {})[el.getAttribute("data-live-value")];
      if (v !== undefined) { el.value = v; el.textContent = String(v) + "%"; }
    });
    root.querySelectorAll("[data-live-pct]").forEach(function (el) {
      var v = (obj.values || {})[el.getAttribute("data-live-pct")];
      if (v !== undefined) { el.textContent = String(v); }
    });
  }
  document.querySelectorAll("[data-stream]").forEach(function (root) {
    if (!window.EventSource) { return; }
    var es = new EventSource(root.getAttribute("data-stream"));
    es.addEventListener("update", function (e) {
      root.removeAttribute("data-stale");
      apply(root, JSON.parse(e.data));
      root.setAttribute("data-updated", String(Date.now()));
    });
    es.addEventListener("failure", function () { root.setAttribute("data-stale", "true"); });
  });
})();
