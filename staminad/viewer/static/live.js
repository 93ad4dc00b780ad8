// Live update without a reload: poll /api/mark; when the store changed, fetch this page's <main> again
// and swap it in, keeping open <details> open. Only same-origin requests; nothing else is loaded.
(function () {
  "use strict";
  var main = document.getElementById("live");
  var status = document.getElementById("live-status");
  if (!main) { return; }
  var mark = null;
  var busy = false;
  var ticks = 0;  // the ops page shows the box, not the store: it is refetched every few polls whatever the mark

  function openIds() {
    var ids = [];
    main.querySelectorAll("details[open][id]").forEach(function (d) { ids.push(d.id); });
    return ids;
  }

  function refresh() {
    var keep = openIds();
    return fetch(window.location.pathname + window.location.search,
                 {headers: {"X-Viewer-Fragment": "1"}, credentials: "same-origin"})
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("live");
        if (!fresh) { return; }
        main.replaceChildren.apply(main, Array.prototype.slice.call(fresh.childNodes).map(function (n) {
          return document.importNode(n, true);
        }));
        keep.forEach(function (id) {
          var d = document.getElementById(id);
          if (d && d.tagName === "DETAILS") { d.open = true; }
        });
        main.dataset.refreshed = String(Number(main.dataset.refreshed || "0") + 1);
      });
  }

  function poll() {
    if (busy) { return; }
    busy = true;
    fetch("/api/mark", {credentials: "same-origin", cache: "no-store"})
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.json(); })
      .then(function (data) {
        if (status) { status.textContent = "live"; status.classList.remove("stale"); }
        ticks += 1;
        if (main.dataset.page === "ops" && ticks % 4 === 0) {
          mark = data.mark;
          return refresh();
        }
        if (mark !== null && data.mark !== mark) {
          mark = data.mark;
          return refresh();
        }
        mark = data.mark;
      })
      .catch(function () {
        if (status) { status.textContent = "viewer offline"; status.classList.add("stale"); }
      })
      .then(function () { busy = false; });
  }

  poll();
  window.setInterval(poll, 1500);
}());
