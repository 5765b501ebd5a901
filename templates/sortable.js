/* Sortable tables (screen only): a click on a header of a table.sortable sorts its rows by that column, again to
   reverse. Numbers are read with their unit ("18.6 ms", "67.1 MB", "1,310", "3.62×"); a cell without a number sorts
   as text; a cross (does not fit) and a dash sort last. Rows of class "total" stay at the bottom. */
(function () {
  var SCALE = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1, "k": 1e3, "M": 1e6, "B": 1e9, "G": 1e9,
               "T": 1e12, "P": 1e15, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "GiB": 1073741824};
  function key(cell) {
    var raw = cell ? cell.textContent : "";
    var text = raw.replace(/✗/g, "").trim();
    var last = /✗/.test(raw) || text === "—" || text === "";  // does not fit, or no value: last either way
    var match = text.replace(/,/g, "").match(/^[≥$]?\s*(-?\d+(?:\.\d+)?)\s*([a-zA-Zµ]+)?/);
    if (!match) return {num: null, text: text.toLowerCase(), last: last};
    var unit = match[2] || "", scale = SCALE[unit] || SCALE[unit.replace(/FLOP.*|token.*|B\/s$/, "")] || 1;
    return {num: parseFloat(match[1]) * scale, text: text.toLowerCase(), last: last};
  }
  function compare(a, b) {
    if (a.num !== null && b.num !== null) return a.num - b.num;
    if (a.num !== null) return -1;
    if (b.num !== null) return 1;
    return a.text < b.text ? -1 : a.text > b.text ? 1 : 0;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var body = table.tBodies[0];
    table.querySelectorAll("thead th").forEach(function (th, column) {
      th.setAttribute("title", "sort by this column");
      th.addEventListener("click", function () {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        table.querySelectorAll("thead th").forEach(function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var rows = Array.prototype.slice.call(body.rows).filter(function (r) { return !r.classList.contains("total"); });
        var totals = Array.prototype.slice.call(body.rows).filter(function (r) { return r.classList.contains("total"); });
        rows.sort(function (a, b) {
          var ka = key(a.cells[column]), kb = key(b.cells[column]);
          if (ka.last !== kb.last) return ka.last ? 1 : -1;  // in both directions, as the header comment says
          var order = compare(ka, kb);
          return ascending ? order : -order;
        });
        rows.concat(totals).forEach(function (r) { r.classList.remove("group-start"); body.appendChild(r); });
      });
    });
  });
})();
