// The timing samples of an evaluation, one uPlot chart per workload: each sample's baseline and
// candidate call times (ms), in the order they were taken. The series come from data-series (JSON).
(function () {
  var holder = document.getElementById("plots");
  if (!holder || typeof uPlot === "undefined") return;
  var series = JSON.parse(holder.dataset.series || "{}");
  Object.keys(series).forEach(function (workload) {
    var s = series[workload], n = Math.max(s.baseline.length, s.kernel.length), xs = [];
    for (var i = 0; i < n; i++) xs.push(i + 1);
    var box = document.createElement("div");
    box.className = "plot";
    box.dataset.workload = workload;
    holder.appendChild(box);
    new uPlot({
      title: workload, width: 720, height: 260,
      scales: { x: { time: false } },
      series: [{ label: "sample" }, { label: "baseline ms", stroke: "#0d3b4f" }, { label: "candidate ms", stroke: "#d9480f" }],
    }, [xs, s.baseline, s.kernel], box);
  });
})();
