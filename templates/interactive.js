/* Interactive figures (HTML only): each <figure> with a plotly.js spec (script.figure-spec, JSON) is drawn by the
   plotly.js bundle shipped beside the page (no network); its static image stays where plotly.js did not load. */
(function () {
  if (!window.Plotly) return;
  document.querySelectorAll("figure script.figure-spec").forEach(function (script) {
    var figure = script.parentNode, target = figure.querySelector("div.interactive");
    var spec = JSON.parse(script.textContent);
    target.hidden = false;
    Plotly.newPlot(target, spec.data, spec.layout, {responsive: true, displaylogo: false,
                                                    modeBarButtonsToRemove: ["sendDataToCloud"]}).then(function () {
      var image = figure.querySelector("img");
      if (image) image.style.display = "none";  // the stylesheet's display: block would win over `hidden`
    });
  });
})();
