// Draw the explorer's Plotly figures. The figures come from the server (frontend/figures.py) in
// <script type="application/json"> blocks: data, never code, so the page needs no inline script.
(function () {
  "use strict";
  var CONFIG = {
    responsive: true,
    displaylogo: false,
    showLink: false,
    showSendToCloud: false,
    showEditInChartStudio: false,
    scrollZoom: false,
    modeBarButtonsToRemove: ["select2d", "lasso2d", "toImage"],
  };

  function draw(container) {
    var source = document.getElementById(container.getAttribute("data-figure"));
    if (!source || !window.Plotly) { return; }
    var figure = JSON.parse(source.textContent);
    var config = Object.assign({}, CONFIG, {
      scrollZoom: container.getAttribute("data-scroll-zoom") === "true",
    });
    window.Plotly.newPlot(container, figure.data, figure.layout, config).then(function () {
      // A graph wider than the page scrolls sideways: start with its path in view.
      var scroller = container.parentElement;
      var focus = figure.layout.meta && figure.layout.meta.focus_px;
      if (focus && scroller.classList.contains("figure-scroll")) {
        scroller.scrollLeft = Math.max(0, focus - scroller.clientWidth / 2);
      }
      container.setAttribute("data-rendered", "true");
    });
  }

  document.querySelectorAll(".figure[data-figure]").forEach(draw);
})();
