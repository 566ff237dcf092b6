(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var W = 640, H = 240, M = {l: 56, r: 14, t: 24, b: 34};
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var steps = data.steps;
  var BUCKETS = [["productive", "#59a14f"], ["overhead", "#edc948"], ["idle", "#c8c8c8"], ["wasted", "#e15759"]];
  var PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"];

  function el(name, attrs, parent) {
    var e = document.createElementNS(SVG, name);
    for (var k in attrs) { if (Object.prototype.hasOwnProperty.call(attrs, k)) { e.setAttribute(k, attrs[k]); } }
    if (parent) { parent.appendChild(e); }
    return e;
  }

  function text(parent, x, y, s, anchor) {
    var t = el("text", {x: x, y: y, "text-anchor": anchor || "middle"}, parent);
    t.textContent = s;
    return t;
  }

  function fmt(v) {
    var a = Math.abs(v);
    if (a === 0) { return "0"; }
    if (v === Math.round(v) && a < 1e6) { return String(v); }
    if (a >= 1000) { return v.toFixed(0); }
    if (a >= 10) { return v.toFixed(1); }
    if (a >= 0.01) { return v.toFixed(3).replace(/0+$/, "").replace(/\.$/, ""); }
    return v.toExponential(1);
  }

  function ticks(lo, hi, n) {
    if (!(hi > lo)) { return [lo]; }
    var raw = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10)), step = mag;
    [1, 2, 5, 10].some(function (m) { step = m * mag; return step >= raw; });
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9 && out.length < 20; v += step) { out.push(v); }
    return out;
  }

  function domain(values, zero) {
    var lo = Infinity, hi = -Infinity;
    values.forEach(function (v) { if (isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
    if (!isFinite(lo)) { return [0, 1]; }
    if (zero) { lo = Math.min(0, lo); }
    if (hi === lo) { hi = lo + (lo === 0 ? 1 : Math.abs(lo) * 0.1); lo = zero ? lo : lo - (hi - lo); }
    var pad = (hi - lo) * 0.05;
    return [zero && lo >= 0 ? lo : lo - pad, hi + pad];
  }

  function frame(svg, xd, yd, xLabel, integerX, top) {
    var mt = top || M.t; // below the legend, if any
    var sx = function (x) { return M.l + (xd[1] === xd[0] ? 0.5 : (x - xd[0]) / (xd[1] - xd[0])) * (W - M.l - M.r); };
    var sy = function (y) { return H - M.b - (y - yd[0]) / (yd[1] - yd[0]) * (H - mt - M.b); };
    var grid = el("g", {"class": "grid"}, svg), axis = el("g", {"class": "axis"}, svg);
    ticks(yd[0], yd[1], 4).forEach(function (v) {
      el("line", {x1: M.l, x2: W - M.r, y1: sy(v), y2: sy(v)}, grid);
      text(axis, M.l - 6, sy(v) + 4, fmt(v), "end");
    });
    ticks(xd[0], xd[1], 6).filter(function (v) { return !integerX || v === Math.round(v); }).forEach(function (v) {
      el("line", {x1: sx(v), x2: sx(v), y1: H - M.b, y2: H - M.b + 4}, axis);
      text(axis, sx(v), H - M.b + 16, fmt(v));
    });
    el("path", {d: "M" + M.l + "," + mt + "V" + (H - M.b) + "H" + (W - M.r)}, axis);
    text(axis, (M.l + W - M.r) / 2, H - 4, xLabel);
    return {x: sx, y: sy};
  }

  function empty(svg, why) {
    text(svg, W / 2, H / 2, why).setAttribute("class", "empty");
  }

  function title(node, s) {
    var t = el("title", {}, node);
    t.textContent = s;
  }

  /**
   * Legend entries [[name, color]] in rows across the top, each as wide as its text, a row wrapping before it
   * would pass the right edge; returns where the plot may start (below the last row).
   */
  function legend(svg, entries) {
    var x = M.l + 8, y = 4;
    entries.forEach(function (e) {
      var g = el("g", {"class": "legend-entry"}, svg);
      var r = el("rect", {x: x, y: y, width: 10, height: 10, fill: e[1]}, g);
      var t = text(g, x + 14, y + 9, e[0], "start");
      var room = W - M.r - (M.l + 8) - 14;
      if (t.getComputedTextLength() > room) { // one name wider than the chart: cut, the whole name as its tooltip
        title(g, e[0]);
        for (var n = e[0].length - 1; n > 0 && t.getComputedTextLength() > room; n--) { t.textContent = e[0].substring(0, n) + "..."; }
      }
      var w = 14 + t.getComputedTextLength();
      if (x > M.l + 8 && x + w > W - M.r) {
        x = M.l + 8;
        y += 14;
        r.setAttribute("x", x);
        r.setAttribute("y", y);
        t.setAttribute("x", x + 14);
        t.setAttribute("y", y + 9);
      }
      x += w + 16;
    });
    return Math.max(M.t, y + 20);
  }

  /** Line chart; series: [{name, color, points: [[x, y, step]], band: [[x, lo, hi]]}]. */
  function lines(id, series, xLabel, integerX, noLegend) {
    var svg = document.getElementById(id);
    var xs = [], ys = [];
    series.forEach(function (s) {
      s.points.forEach(function (p) { xs.push(p[0]); ys.push(p[1]); });
      (s.band || []).forEach(function (b) { ys.push(b[1]); ys.push(b[2]); });
    });
    if (xs.length === 0) { empty(svg, "no data in this run"); return; }
    var top = series.length > 1 && !noLegend ? legend(svg, series.map(function (s, i) { return [s.name, s.color || PALETTE[i % PALETTE.length]]; }))
      : M.t;
    var sc = frame(svg, domain(xs, false).map(function (v, i) { return i === 0 ? Math.min.apply(null, xs) : Math.max.apply(null, xs); }),
      domain(ys, false), xLabel, integerX, top);
    series.forEach(function (s, i) {
      var color = s.color || PALETTE[i % PALETTE.length];
      if (s.band && s.band.length > 1) {
        var up = s.band.map(function (b) { return sc.x(b[0]) + "," + sc.y(b[2]); });
        var down = s.band.slice().reverse().map(function (b) { return sc.x(b[0]) + "," + sc.y(b[1]); });
        el("polygon", {"class": "band", points: up.concat(down).join(" "), fill: color}, svg);
      }
      el("polyline", {"class": "line", stroke: color, points: s.points.map(function (p) { return sc.x(p[0]) + "," + sc.y(p[1]); }).join(" ")}, svg);
      s.points.forEach(function (p) {
        var c = el("circle", {"class": "point", cx: sc.x(p[0]), cy: sc.y(p[1]), r: s.points.length > 200 ? 1.5 : 3,
          fill: color, "data-series": s.name}, svg);
        if (p[2] !== undefined) { c.setAttribute("data-step", p[2]); }
        title(c, s.name + (p[2] !== undefined ? " step " + p[2] : " t=" + fmt(p[0]) + " s") + ": " + fmt(p[1]));
      });
    });
  }

  function stepSeries(name, key, color, bandKey) {
    var pts = [], band = [];
    steps.forEach(function (s) {
      if (typeof s[key] === "number") {
        pts.push([s.step, s[key], s.step]);
        if (bandKey && typeof s[bandKey] === "number") { band.push([s.step, s[key] - s[bandKey], s[key] + s[bandKey]]); }
      }
    });
    return {name: name, color: color, points: pts, band: bandKey ? band : null};
  }

  function stacked(id) {
    var svg = document.getElementById(id);
    var rows = steps.filter(function (s) { return typeof s.step_s === "number"; });
    if (rows.length === 0) { empty(svg, "no data in this run"); return; }
    // the bars stack the goodput buckets, which may add up to more than step_s: the axis covers the stacks
    var totals = rows.map(function (s) {
      return Math.max(s.step_s, BUCKETS.reduce(function (a, b) { return a + ((s.goodput || {})[b[0]] || 0); }, 0));
    });
    var xsRaw = rows.map(function (s) { return s.step; });
    var lo = Math.min.apply(null, xsRaw) - 0.5, hi = Math.max.apply(null, xsRaw) + 0.5;
    var top = legend(svg, BUCKETS.concat([["unattributed", "#9aa7b8"]]));
    var sc = frame(svg, [lo, hi], domain(totals, true), "step", true, top);
    var bw = Math.max(1, (sc.x(hi) - sc.x(lo)) / rows.length * 0.8);
    rows.forEach(function (s) {
      var parts = s.goodput ? BUCKETS.map(function (b) { return [b[0], s.goodput[b[0]] || 0, b[1]]; })
        : [["unattributed", s.step_s, "#9aa7b8"]];
      if (s.goodput) {
        var covered = parts.reduce(function (a, p) { return a + p[1]; }, 0);
        if (s.step_s - covered > 1e-6) { parts.push(["unattributed", s.step_s - covered, "#9aa7b8"]); }
      }
      var base = 0;
      parts.forEach(function (p) {
        if (p[1] <= 0) { return; }
        var r = el("rect", {"class": "bar-part", x: sc.x(s.step) - bw / 2, y: sc.y(base + p[1]), width: bw,
          height: Math.max(0.5, sc.y(base) - sc.y(base + p[1])), fill: p[2], "data-step": s.step, "data-bucket": p[0]}, svg);
        title(r, "step " + s.step + " " + p[0] + ": " + fmt(p[1]) + " s");
        base += p[1];
      });
    });
  }

  function engine(id, key) {
    // one point per step where the steps carry the engines over them (steps.jsonl's engine), else per export
    var stepKey = {queue_time: "engine_queue_s", preemptions: "engine_preemptions"}[key];
    if (steps.some(function (s) { return typeof s[stepKey] === "number"; })) {
      lines(id, [stepSeries(key === "queue_time" ? "queue time (mean)" : "preemptions", stepKey, "#4e79a7")], "step", true);
      return;
    }
    var series = (data.engine[key] || []).filter(function (s) { return s.points.length > 0; }).map(function (s) {
      return {name: s.name, points: s.points.map(function (p) { return [p[0], p[1]]; })};
    });
    if (series.length === 0) { empty(document.getElementById(id), "no engine metrics in this run"); return; }
    lines(id, series, "seconds since the run's first span", false);
  }

  /** The completions step {@code step} kept (samples.jsonl), in the table under its waterfall. */
  function showSamples(step) {
    var rows = (data.samples || {})[String(step)] || [];
    var body = document.querySelector("#samples tbody");
    while (body.firstChild) { body.removeChild(body.firstChild); }
    document.getElementById("samples-title").textContent = "Sample completions of step " + step;
    document.getElementById("samples-note").textContent = rows.length === 0
      ? "Step " + step + " kept no samples." : rows.length + " of the step's completions (telemetry.samples_per_step).";
    rows.forEach(function (s) {
      var tr = document.createElement("tr");
      tr.className = "sample-row";
      var comps = Object.keys(s.components || {}).map(function (k) { return k + " " + fmt(s.components[k]); }).join(", ");
      [s.group, s.index, s.prompt, s.completion, s.answer, typeof s.reward === "number" ? fmt(s.reward) : "",
        comps, s.tokens].forEach(function (v, i) {
        var td = document.createElement("td");
        td.textContent = String(v);
        if (i >= 2 && i <= 4) { td.className = "text"; }
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
  }

  function showStep(step) {
    // a run without GRPO steps lists its traces instead: rows t1, t2, ... (no samples); its start-ups are s1, s2, ...
    var trace = String(step).charAt(0) === "t";
    var startup = String(step).charAt(0) === "s";
    var what = trace ? "Trace " + String(step).substring(1) : startup ? "Start-up " + String(step).substring(1)
      : "Step " + step;
    if (!trace && !startup) { showSamples(step); }
    var doc = document.querySelector("script.waterfall-doc[data-step='" + step + "']");
    var heading = document.getElementById("waterfall-title");
    var frameEl = document.getElementById("waterfall-frame");
    Array.prototype.forEach.call(document.querySelectorAll("tr.step-row, tr.startup-row"), function (r) {
      var on = r.getAttribute("data-step") === String(step);
      r.classList.toggle("selected", on);
      if (on) { // into view inside the table's own scroll box, the page stays where it is
        var box = r.closest("section.steps");
        var rb = r.getBoundingClientRect(), bb = box ? box.getBoundingClientRect() : null;
        if (bb && (rb.top < bb.top || rb.bottom > bb.bottom)) {
          box.scrollTop = Math.max(0, box.scrollTop + rb.top - bb.top - box.clientHeight / 2);
        }
      }
    });
    if (!doc) {
      heading.textContent = startup ? what + ": its waterfall is not in this page (run: ravel trace " + data.run.id + " --startup)"
        : trace ? what + ": its waterfall is not in this page (run: ravel trace " + data.run.id + " --trace <id>)"
        : "Step " + step + ": its waterfall is not in this page (run: ravel trace " + data.run.id + " --step " + step + ")";
      frameEl.removeAttribute("srcdoc");
      return;
    }
    heading.textContent = what + " waterfall";
    frameEl.setAttribute("data-step", String(step));
    frameEl.removeAttribute("data-loaded");
    inflate(doc.textContent.trim()).then(function (html) {
      if (frameEl.getAttribute("data-step") !== String(step)) { return; } // another step was clicked meanwhile
      frameEl.onload = function () { frameEl.setAttribute("data-loaded", String(step)); };
      frameEl.srcdoc = html;
    }, function (err) {
      heading.textContent = what + ": cannot open its waterfall in this browser (" + err + ")";
    });
  }

  function inflate(b64) {
    var bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text();
  }

  /**
   * Several runs (data.runs, from RunOverlay): every chart has one series per run, named by its run id and
   * coloured as its entry in the page's legend (#run-legend), on the step axis.
   */
  function overlay() {
    var runs = data.runs;
    var color = function (i) { return PALETTE[i % PALETTE.length]; };
    Array.prototype.forEach.call(document.querySelectorAll("#run-legend .run-entry"), function (li) {
      li.querySelector(".swatch").style.background = color(Number(li.getAttribute("data-index")));
    });
    function perRun(key) {
      return runs.map(function (r, i) {
        var pts = [];
        r.steps.forEach(function (s) { if (typeof s[key] === "number") { pts.push([s.step, s[key], s.step]); } });
        return {name: r.id, color: color(i), points: pts, band: null};
      });
    }
    [["chart-reward", "reward_mean"], ["chart-kl", "kl"], ["chart-loss", "loss"], ["chart-grad-norm", "grad_norm"],
      ["chart-learning-rate", "learning_rate"], ["chart-entropy", "entropy"], ["chart-eval", "eval_reward"],
      ["chart-length", "length_mean"], ["chart-lag", "lag_mean"], ["chart-step-time", "step_s"],
      ["chart-tokens", "tokens_per_s"]].forEach(function (c) {
      var series = perRun(c[1]).filter(function (s) { return s.points.length > 0; });
      if (series.length === 0) { empty(document.getElementById(c[0]), "no data in these runs"); return; }
      lines(c[0], series, "step", true, true);
    });
    window.ravelReport = {data: data};
  }
  if (data.runs) { overlay(); return; }

  lines("chart-reward", [stepSeries("reward", "reward_mean", "#4e79a7", "reward_std")], "step", true);
  lines("chart-kl", [stepSeries("kl", "kl", "#b07aa1")], "step", true);
  lines("chart-loss", [stepSeries("loss", "loss", "#f28e2b")], "step", true);
  lines("chart-grad-norm", [stepSeries("grad norm (before clipping)", "grad_norm", "#e15759")], "step", true);
  lines("chart-learning-rate", [stepSeries("learning rate", "learning_rate", "#76b7b2")], "step", true);
  lines("chart-entropy", [stepSeries("entropy", "entropy", "#59a14f")], "step", true);
  lines("chart-eval", [stepSeries("eval reward", "eval_reward", "#4e79a7"),
    stepSeries("eval accuracy", "eval_accuracy", "#59a14f")], "step", true);
  var componentNames = [];
  steps.forEach(function (s) {
    Object.keys(s.reward_components || {}).forEach(function (k) { if (componentNames.indexOf(k) < 0) { componentNames.push(k); } });
  });
  lines("chart-reward-components", componentNames.map(function (k, i) {
    var pts = [];
    steps.forEach(function (s) {
      var v = (s.reward_components || {})[k];
      if (typeof v === "number") { pts.push([s.step, v, s.step]); }
    });
    return {name: k, color: PALETTE[i % PALETTE.length], points: pts, band: null};
  }), "step", true);
  lines("chart-length", [stepSeries("mean", "length_mean", "#4e79a7"), stepSeries("max", "length_max", "#f28e2b")],
    "step", true);
  lines("chart-clip", [stepSeries("clipped low", "clip_low", "#4e79a7"), stepSeries("clipped high", "clip_high", "#f28e2b"),
    stepSeries("dual clip", "clip_dual", "#b07aa1")], "step", true);
  lines("chart-lag", [stepSeries("mean", "lag_mean", "#4e79a7"), stepSeries("max", "lag_max", "#f28e2b")],
    "step", true);
  lines("chart-pipeline", [stepSeries("buffer (groups)", "buffer_depth", "#59a14f"),
    stepSeries("in flight (calls)", "in_flight", "#e15759")], "step", true);
  stacked("chart-step-time");
  lines("chart-refit", [stepSeries("refit (whole)", "refit_s", "#9aa7b8")].concat((data.refit_stages || [])
    .filter(function (name) { return steps.some(function (s) { return s.refit && typeof s.refit[name] === "number"; }); })
    .map(function (name, i) {
      var pts = [];
      steps.forEach(function (s) {
        var v = (s.refit || {})[name];
        if (typeof v === "number") { pts.push([s.step, v, s.step]); }
      });
      return {name: name.replace(/^rl\.refit\./, ""), color: PALETTE[i % PALETTE.length], points: pts, band: null};
    })), "step", true);
  engine("chart-engine-queue", "queue_time");
  engine("chart-engine-preemptions", "preemptions");
  if (steps.some(function (s) { return typeof s.engine_running === "number"; })) {
    lines("chart-engine-load", [stepSeries("running", "engine_running", "#59a14f"),
      stepSeries("waiting", "engine_waiting", "#e15759"), stepSeries("KV share", "engine_kv", "#b07aa1")], "step", true);
  } else {
    empty(document.getElementById("chart-engine-load"), "no engine load in this run (telemetry off, or servers over HTTP)");
  }

  document.addEventListener("click", function (ev) {
    var t = ev.target.closest ? ev.target.closest("[data-step]") : null;
    if (t && t.tagName !== "IFRAME") { showStep(t.getAttribute("data-step")); }
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter" && ev.target.classList && (ev.target.classList.contains("step-row")
        || ev.target.classList.contains("startup-row"))) {
      showStep(ev.target.getAttribute("data-step"));
    }
  });
  // report.html#step=N opens step N's waterfall (a link to one step of a run)
  var wanted = /^#step=(-?\d+)$/.exec(window.location.hash);
  if (wanted) { showStep(wanted[1]); }
  window.ravelReport = {showStep: showStep, showSamples: showSamples, data: data};
})();
