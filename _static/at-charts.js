// Draws the book's altair charts offline. Each chart is a <div class="at-vega-chart"> whose
// Vega-Lite spec sits in the <script type="application/json"> named by its data-spec attribute
// (written by annotated_transformer.viz.show); Vega, Vega-Lite and Vega-Embed come from
// _static/vendor/, so no page needs the network.
(function () {
  "use strict";

  function fail(div, message) {
    div.setAttribute("data-drawn", "error");
    div.textContent = "This chart could not be drawn: " + message;
    div.style.color = "#a00";
  }

  function draw(div) {
    if (div.hasAttribute("data-drawn")) return;
    div.setAttribute("data-drawn", "pending");
    if (typeof window.vegaEmbed !== "function") {
      fail(div, "the Vega scripts (_static/vendor/) did not load.");
      return;
    }
    var holder = document.getElementById(div.getAttribute("data-spec"));
    var spec;
    try {
      spec = JSON.parse(holder.textContent);
    } catch (err) {
      fail(div, "its spec is missing or invalid (" + err + ").");
      return;
    }
    // SVG keeps the marks in the DOM (testable, crisp); the editor action would need the network.
    window.vegaEmbed(div, spec, { renderer: "svg", actions: { export: true, source: true, compiled: false, editor: false } })
      .then(function () { div.setAttribute("data-drawn", "ok"); })
      .catch(function (err) { fail(div, String(err)); });
  }

  window.atDrawCharts = function () {
    var divs = document.querySelectorAll("div.at-vega-chart");
    for (var i = 0; i < divs.length; i++) draw(divs[i]);
  };

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", window.atDrawCharts);
  } else {
    window.atDrawCharts();
  }
})();
