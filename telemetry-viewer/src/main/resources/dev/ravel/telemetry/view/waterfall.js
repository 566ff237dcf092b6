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
  function refresh() {
    var cut = -1;
    rows.forEach(function (row) {
      var depth = Number(row.getAttribute('data-depth'));
      if (cut >= 0 && depth <= cut) { cut = -1; }
      var hide = cut >= 0;
      row.hidden = hide;
      if (hide && row.classList.contains('open')) { setDetail(row, false); }
      if (!hide && row.classList.contains('collapsed')) { cut = depth; }
    });
  }
  waterfall.addEventListener('click', function (ev) {
    var target = ev.target;
    if (!(target instanceof Element)) { return; }
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
    refresh();
  });
  document.getElementById('collapse-all').addEventListener('click', function () {
    rows.forEach(function (row) { setCollapsed(row, Number(row.getAttribute('data-depth')) > 0); });
    refresh();
  });
  var cpBox = document.getElementById('show-critical-path');
  cpBox.addEventListener('change', function () {
    document.body.classList.toggle('cp-on', cpBox.checked);
  });
}());
