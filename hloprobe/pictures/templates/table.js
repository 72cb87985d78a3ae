// hloprobe's report tables: click a header to sort by it (again: the other
// way), type in the box above a table to keep the rows holding every word.
// Self-contained (no library, no network): the page works offline.
(function () {
  "use strict";
  // A cell's number (its data-sort), or null for text and "n/a".
  function number(cell) {
    var v = cell ? cell.getAttribute("data-sort") : null;
    return v === null || v === "" ? null : Number(v);
  }
  function numeric(rows, col) {
    var seen = false;
    for (var i = 0; i < rows.length; i++) {
      var cell = rows[i].cells[col];
      var text = cell ? cell.textContent.trim() : "";
      if (number(cell) !== null) { seen = true; }
      else if (text !== "n/a" && text !== "") { return false; }
    }
    return seen;
  }
  function compare(a, b, col, asNumber) {
    if (asNumber) {
      var x = number(a.cells[col]), y = number(b.cells[col]);
      if (x === null || y === null) {
        return (x === null) - (y === null);
      }
      return x - y;
    }
    var s = a.cells[col] ? a.cells[col].textContent : "";
    var t = b.cells[col] ? b.cells[col].textContent : "";
    return s.localeCompare(t, undefined, {numeric: true});
  }
  function sortBy(table, th, col) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var up = th.getAttribute("aria-sort") !== "ascending";
    var asNumber = numeric(rows, col);
    rows.forEach(function (r, i) { r.setAttribute("data-order", i); });
    rows.sort(function (a, b) {
      var d = compare(a, b, col, asNumber);
      var missing = asNumber &&
        (number(a.cells[col]) === null || number(b.cells[col]) === null);
      if (!up && !missing) { d = -d; }  // "n/a" stays last either way
      return d || a.getAttribute("data-order") - b.getAttribute("data-order");
    });
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length; i++) { heads[i].removeAttribute("aria-sort"); }
    th.setAttribute("aria-sort", up ? "ascending" : "descending");
    rows.forEach(function (r) { body.appendChild(r); });
  }
  function filter(table, words, shown) {
    var want = words.toLowerCase().split(/\s+/).filter(Boolean);
    var rows = table.tBodies[0].rows, kept = 0;
    for (var i = 0; i < rows.length; i++) {
      var text = rows[i].textContent.toLowerCase();
      var keep = want.every(function (w) { return text.indexOf(w) >= 0; });
      rows[i].hidden = !keep;
      kept += keep ? 1 : 0;
    }
    if (shown) { shown.textContent = kept + " of " + rows.length + " rows"; }
  }
  var tables = document.querySelectorAll("table.sortable:not([data-ready])");
  Array.prototype.forEach.call(tables, function (table) {
    table.setAttribute("data-ready", "");
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.tabIndex = 0;
      th.addEventListener("click", function () { sortBy(table, th, col); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, th, col); }
      });
    });
    var box = document.getElementById(table.id + "-filter");
    var shown = document.getElementById(table.id + "-shown");
    if (box) {
      box.addEventListener("input", function () { filter(table, box.value, shown); });
    }
  });
})();
