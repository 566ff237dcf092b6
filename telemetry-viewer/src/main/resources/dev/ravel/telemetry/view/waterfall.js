(function () {
  'use strict';
  var DOWN = String.fromCharCode(0x25BE);
  var RIGHT = String.fromCharCode(0x25B8);
  var dataEl = document.getElementById('trace-data');
  var data = JSON.parse(dataEl.textContent);
  var spansById = Object.create(null);
  data.spans.forEach(function (s) { spansById[s.id] = s; });
  var waterfall = document.getElementById('waterfall');
  var rows = Array.prototype.slice.call(waterfall.querySelectorAll('.span-row'));

  function two(x) { return x < 10 ? '0' + x : String(x); }
  function dec(x) { return x < 9.995 ? x.toFixed(2) : (x < 99.95 ? x.toFixed(1) : x.toFixed(0)); }
  function fmtDur(ns) {
    if (ns < 0) { return '-' + fmtDur(-ns); }
    if (ns < 1e3) { return Math.round(ns) + 'ns'; }
    if (ns < 1e6) { return dec(ns / 1e3) + 'us'; }
    if (ns < 1e9) { return dec(ns / 1e6) + 'ms'; }
    if (ns < 6e10) { return dec(ns / 1e9) + 's'; }
    var s = Math.floor(ns / 1e9);
    if (s < 3600) { return Math.floor(s / 60) + 'm' + two(s % 60) + 's'; }
    return Math.floor(s / 3600) + 'h' + two(Math.floor((s % 3600) / 60)) + 'm';
  }
  function text(v) { return typeof v === 'string' ? v : JSON.stringify(v); }
  function el(tag, cls, txt) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (txt !== undefined && txt !== null) { e.textContent = String(txt); }
    return e;
  }
  function pairsText(pairs) {
    return pairs.map(function (p) { return p[0] + '=' + text(p[1]); }).join(', ');
  }
  function kvTable(pairs, keyCls, valCls) {
    if (!pairs.length) { return el('p', 'empty', 'none'); }
    var table = el('table', 'kv');
    var body = el('tbody');
    pairs.forEach(function (p) {
      var tr = el('tr');
      tr.appendChild(el('td', keyCls, p[0]));
      tr.appendChild(el('td', valCls, text(p[1])));
      body.appendChild(tr);
    });
    table.appendChild(body);
    return table;
  }
  function grid(head, items, rowCls, cells) {
    if (!items.length) { return el('p', 'empty', 'none'); }
    var table = el('table', 'kv');
    var thead = el('thead');
    var hr = el('tr');
    head.forEach(function (h) { hr.appendChild(el('th', null, h)); });
    thead.appendChild(hr);
    table.appendChild(thead);
    var body = el('tbody');
    items.forEach(function (item) {
      var tr = el('tr', rowCls);
      cells(item).forEach(function (c) { tr.appendChild(el('td', c[0], c[1])); });
      body.appendChild(tr);
    });
    table.appendChild(body);
    return table;
  }
  function section(panel, title, content) {
    panel.appendChild(el('h4', 'detail-title', title));
    panel.appendChild(content);
  }
  function buildDetail(panel, s) {
    var summary = el('dl', 'detail-summary');
    [['Service', s.service], ['Process', s.process], ['Duration', fmtDur(s.durationNanos)],
      ['Start', '+' + fmtDur(s.startOffsetNanos)], ['Span ID', s.id], ['Parent ID', s.parentId || '(root)'],
      ['Kind', s.kindName], ['Status', s.status + (s.statusMessage ? ': ' + s.statusMessage : '')],
      ['Critical path', s.criticalPath ? 'yes' : 'no']].forEach(function (kv) {
      var d = el('div');
      d.appendChild(el('dt', null, kv[0]));
      d.appendChild(el('dd', null, kv[1]));
      summary.appendChild(d);
    });
    panel.appendChild(summary);
    section(panel, 'Attributes (' + s.attributes.length + ')', kvTable(s.attributes, 'attr-key', 'attr-value'));
    section(panel, 'Resource (' + s.resource.length + ')', kvTable(s.resource, 'resource-key', 'resource-value'));
    section(panel, 'Events (' + s.events.length + ')', grid(['Time', 'Name', 'Attributes'], s.events,
      'event-row', function (e) {
        return [['event-time', '+' + fmtDur(e.offsetNanos)], ['event-name', e.name],
          ['event-attrs', pairsText(e.attributes)]];
      }));
    section(panel, 'Links (' + s.links.length + ')', grid(['Trace ID', 'Span ID', 'Target', 'Attributes'],
      s.links, 'link-row', function (l) {
        var target = l.target ? l.target.name + (l.target.step === null ? '' : ' (step ' + l.target.step + ')')
          + ', ' + l.target.process + ', ' + fmtDur(l.target.durationNanos) : 'missing from the run';
        return [['link-trace', l.traceId], ['link-span', l.spanId], ['link-target', target],
          ['link-attrs', pairsText(l.attributes)]];
      }));
  }
  function detailOf(row) {
    return document.getElementById('detail-' + row.getAttribute('data-span-id'));
  }
  function setDetail(row, open) {
    var panel = detailOf(row);
    if (!panel) { return; }
    if (open && !panel.hasAttribute('data-built')) {
      var s = spansById[row.getAttribute('data-span-id')];
      if (s) { buildDetail(panel, s); }
      panel.setAttribute('data-built', 'true');
    }
    panel.hidden = !open;
    row.classList.toggle('open', open);
    row.setAttribute('aria-expanded', open ? 'true' : 'false');
  }
  function setCollapsed(row, collapsed) {
    var toggle = row.querySelector('.toggle');
    if (!toggle) { return; }
    row.classList.toggle('collapsed', collapsed);
    toggle.textContent = collapsed ? RIGHT : DOWN;
    toggle.setAttribute('aria-expanded', collapsed ? 'false' : 'true');
  }
  var folds = Object.create(null);
  var items = Array.prototype.slice.call(waterfall.querySelectorAll('.span-row, .fold-row'));
  Array.prototype.forEach.call(waterfall.querySelectorAll('.fold-row'), function (f) {
    folds[f.getAttribute('data-fold-id')] = f;
  });
  function setFolded(fold, folded) {
    var button = fold.querySelector('.fold-toggle');
    fold.classList.toggle('unfolded', !folded);
    button.textContent = folded ? RIGHT : DOWN;
    button.setAttribute('aria-expanded', folded ? 'false' : 'true');
  }
  function refresh() {
    var cut = -1;
    items.forEach(function (row) {
      var depth = Number(row.getAttribute('data-depth'));
      if (cut >= 0 && depth <= cut) { cut = -1; }
      var hide = cut >= 0;
      var fold = folds[row.getAttribute('data-fold-id')];
      if (!hide && row.classList.contains('span-row') && fold && !fold.classList.contains('unfolded')) {
        hide = true;
      }
      row.hidden = hide;
      if (hide && row.classList.contains('open')) { setDetail(row, false); }
      if (!hide && row.classList.contains('collapsed')) { cut = depth; }
    });
  }
  waterfall.addEventListener('click', function (ev) {
    var target = ev.target;
    if (!(target instanceof Element)) { return; }
    var fold = target.closest('.fold-row');
    if (fold) {
      setFolded(fold, fold.classList.contains('unfolded'));
      refresh();
      return;
    }
    var row = target.closest('.span-row');
    if (!row) { return; }
    if (target.closest('.toggle')) {
      setCollapsed(row, !row.classList.contains('collapsed'));
      refresh();
      return;
    }
    setDetail(row, !row.classList.contains('open'));
  });
  waterfall.addEventListener('keydown', function (ev) {
    var row = ev.target;
    if (!(row instanceof Element) || !row.classList.contains('span-row')) { return; }
    if (ev.key === 'Enter' || ev.key === ' ') {
      ev.preventDefault();
      setDetail(row, !row.classList.contains('open'));
    } else if (ev.key === 'ArrowLeft' || ev.key === 'ArrowRight') {
      setCollapsed(row, ev.key === 'ArrowLeft');
      refresh();
    }
  });
  document.getElementById('expand-all').addEventListener('click', function () {
    rows.forEach(function (row) { setCollapsed(row, false); });
    Object.keys(folds).forEach(function (k) { setFolded(folds[k], false); });
    refresh();
  });
  document.getElementById('collapse-all').addEventListener('click', function () {
    rows.forEach(function (row) { setCollapsed(row, Number(row.getAttribute('data-depth')) > 0); });
    Object.keys(folds).forEach(function (k) { setFolded(folds[k], true); });
    refresh();
  });

  // ---------------------------------------------------------------- zoom on a time range
  var extent = Math.max(1, Number(data.traceDurationNanos)); // WaterfallModel.extentNanos
  var view = [0, extent];
  var ruler = waterfall.querySelector('.ruler');
  var ticks = Array.prototype.slice.call(ruler.querySelectorAll('.tick'));
  var tickText = ticks.map(function (t) { return t.textContent; });
  var selection = ruler.querySelector('.zoom-selection');
  var zoomFrom = document.getElementById('zoom-from');
  var zoomTo = document.getElementById('zoom-to');
  var zoomReset = document.getElementById('zoom-reset');
  var zoomRange = document.getElementById('zoom-range');
  var wholeText = zoomRange.textContent;
  function pct(x) { return (Math.max(0, x) * 100).toFixed(4); }
  /** The bar of a row from start to end (nanoseconds from the trace start) in the view, as HtmlWaterfall does. */
  function place(row, start, end) {
    var bar = row.querySelector('.bar');
    var label = row.querySelector('.dur-label');
    var span = view[1] - view[0];
    var left = Math.max(0, Math.min(1, (start - view[0]) / span));
    var width = Math.max(0, Math.min(1 - left, (end - Math.max(start, view[0])) / span));
    bar.style.left = pct(left) + '%';
    bar.style.width = pct(width) + '%';
    var right = left + width;
    label.style.left = '';
    label.style.right = '';
    label.classList.toggle('inside', right >= 0.75 && left <= 0.25);
    if (right < 0.75) {
      label.style.left = 'calc(' + pct(right) + '% + 4px)';
    } else if (left > 0.25) {
      label.style.right = 'calc(' + pct(1 - left) + '% + 4px)';
    } else {
      label.style.left = 'calc(' + pct(left) + '% + 4px)';
    }
    row.classList.toggle('out-of-range', end < view[0] || start > view[1]);
  }
  function ms(ns) { return String(Math.round(ns / 1e3) / 1e3); }
  function zoom(from, to) {
    from = Math.max(0, Math.min(extent, from));
    to = Math.max(0, Math.min(extent, to));
    if (!(to > from)) {
      zoomRange.textContent = 'cannot zoom: "from" must be before "to", within 0 to ' + ms(extent) + ' ms';
      return;
    }
    var whole = from === 0 && to === extent;
    view = [from, to];
    items.forEach(function (row) {
      place(row, Number(row.getAttribute('data-start-offset-nanos')), Number(row.getAttribute('data-end-offset-nanos')));
    });
    ticks.forEach(function (t, i) {
      t.textContent = whole ? tickText[i] : fmtDur(from + (to - from) * i / (ticks.length - 1));
    });
    if (whole) {
      waterfall.removeAttribute('data-zoom-from-nanos');
      waterfall.removeAttribute('data-zoom-to-nanos');
      zoomFrom.value = '';
      zoomTo.value = '';
      zoomRange.textContent = wholeText;
    } else {
      waterfall.setAttribute('data-zoom-from-nanos', String(Math.round(from)));
      waterfall.setAttribute('data-zoom-to-nanos', String(Math.round(to)));
      zoomFrom.value = ms(from);
      zoomTo.value = ms(to);
      zoomRange.textContent = 'showing ' + fmtDur(from) + ' to ' + fmtDur(to) + ' of ' + fmtDur(extent);
    }
    document.body.classList.toggle('zoomed', !whole);
    zoomReset.disabled = whole;
  }
  document.getElementById('zoom-form').addEventListener('submit', function (ev) {
    ev.preventDefault();
    var from = zoomFrom.value === '' ? 0 : Math.round(Number(zoomFrom.value) * 1e6);
    var to = zoomTo.value === '' ? extent : Math.round(Number(zoomTo.value) * 1e6);
    if (isFinite(from) && isFinite(to)) { zoom(from, to); }
  });
  zoomReset.addEventListener('click', function () { zoom(0, extent); });
  var drag = null;
  function dragX(ev) {
    var box = ruler.getBoundingClientRect();
    return Math.max(0, Math.min(box.width, ev.clientX - box.left));
  }
  ruler.addEventListener('mousedown', function (ev) {
    if (ev.button !== 0) { return; }
    ev.preventDefault();
    drag = {x0: dragX(ev), x1: dragX(ev), width: ruler.getBoundingClientRect().width};
    selection.style.left = drag.x0 + 'px';
    selection.style.width = '0px';
    selection.hidden = false;
  });
  document.addEventListener('mousemove', function (ev) {
    if (!drag) { return; }
    drag.x1 = dragX(ev);
    selection.style.left = Math.min(drag.x0, drag.x1) + 'px';
    selection.style.width = Math.abs(drag.x1 - drag.x0) + 'px';
  });
  document.addEventListener('mouseup', function (ev) {
    if (!drag) { return; }
    var d = drag;
    drag = null;
    d.x1 = dragX(ev);
    selection.hidden = true;
    if (Math.abs(d.x1 - d.x0) < 4 || !(d.width > 0)) { return; }
    var span = view[1] - view[0];
    zoom(view[0] + span * Math.min(d.x0, d.x1) / d.width, view[0] + span * Math.max(d.x0, d.x1) / d.width);
  });

  // ---------------------------------------------------------------- search by name or attribute
  var searchBox = document.getElementById('span-search');
  var searchCount = document.getElementById('search-count');
  function matches(s, q) {
    if (s.name.toLowerCase().indexOf(q) >= 0) { return true; }
    return s.attributes.some(function (p) { return (p[0] + '=' + text(p[1])).toLowerCase().indexOf(q) >= 0; });
  }
  function search() {
    var q = searchBox.value.trim().toLowerCase();
    var hits = 0;
    var inFold = Object.create(null);
    rows.forEach(function (row) {
      var s = spansById[row.getAttribute('data-span-id')];
      var hit = q !== '' && !!s && matches(s, q);
      row.classList.toggle('search-hit', hit);
      row.classList.toggle('search-miss', q !== '' && !hit);
      if (hit) {
        hits++;
        var f = row.getAttribute('data-fold-id');
        if (f) { inFold[f] = (inFold[f] || 0) + 1; }
      }
    });
    Object.keys(folds).forEach(function (k) {
      var fold = folds[k];
      var n = inFold[k] || 0;
      var badge = fold.querySelector('.fold-match');
      fold.classList.toggle('has-match', n > 0);
      fold.classList.toggle('search-miss', q !== '' && n === 0);
      badge.hidden = n === 0;
      badge.textContent = n === 0 ? '' : n + (n === 1 ? ' match' : ' matches');
    });
    document.body.classList.toggle('searching', q !== '');
    searchCount.textContent = q === '' ? '' : hits + (hits === 1 ? ' span matches' : ' spans match');
    if (q === '') {
      searchCount.removeAttribute('data-matches');
    } else {
      searchCount.setAttribute('data-matches', String(hits));
    }
  }
  searchBox.addEventListener('input', search);
  searchBox.addEventListener('search', search);
  refresh();
  search();
  var cpBox = document.getElementById('show-critical-path');
  cpBox.addEventListener('change', function () {
    document.body.classList.toggle('cp-on', cpBox.checked);
  });
}());
