// ctxfold ui: live updates and the list's filter. The pages work without
// this script; it only saves a reload.
(function () {
  "use strict";

  // The list: hide rows that do not match the filter as one types.
  var q = document.getElementById("q");
  var table = document.getElementById("conversations");
  if (q && table) {
    q.addEventListener("input", function () {
      var needle = q.value.trim().toLowerCase();
      table.querySelectorAll("tr.conversation").forEach(function (tr) {
        tr.hidden = needle !== "" && tr.dataset.filter.indexOf(needle) < 0;
      });
    });
  }

  // A conversation page: the server says when the log grew; fetch the
  // page again and swap its content, keeping the scroll position.
  var main = document.getElementById("main");
  if (!main || !main.dataset.events || !window.EventSource) return;
  var status = document.getElementById("live-status");
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(window.location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        var fresh = doc.getElementById("main");
        if (fresh) {
          main.innerHTML = fresh.innerHTML;
          main.dataset.seq = fresh.dataset.seq;
          status = document.getElementById("live-status");
          if (status) status.textContent = "Live: updated " + new Date().toLocaleTimeString() + ".";
        }
      })
      .catch(function () {})
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  var source = new EventSource(main.dataset.events + "?seq=" + encodeURIComponent(main.dataset.seq));
  source.addEventListener("open", function () {
    if (status) status.textContent = "Live: this page updates as the conversation grows.";
  });
  source.addEventListener("changed", refresh);
  // The stream ended (the conversation is gone, the server stopped):
  // say so rather than reconnect every few seconds for ever.
  source.addEventListener("error", function () {
    source.close();
    status = document.getElementById("live-status");
    if (status) status.textContent = "Not live: updates stopped; reload the page to resume them.";
  });
})();
