// The page of a sluice run: reads the run's data (the JSON document in
// #run-data, written by package htmlreport) and draws it. Everything is
// built with DOM calls and textContent, never from markup, so a record id
// or an error message is shown as text whatever it holds.
(function () {
  'use strict';
  try {
    draw();
  } catch (err) {
    var box = document.createElement('div');
    box.className = 'error-box';
    box.textContent = 'This report could not be drawn: ' + err;
    document.body.prepend(box);
    document.body.dataset.failed = '1';
    throw err;
  }
  document.body.dataset.renderMs = String(Math.round(performance.now()));
  document.body.dataset.ready = '1';

  function draw() {

    // ---- helpers
    function el(tag, cls, text) {
      var e = document.createElement(tag);
      if (cls) e.className = cls;
      if (text !== undefined && text !== null) e.textContent = String(text);
      return e;
    }
    function add(parent) {
      for (var i = 1; i < arguments.length; i++) {
        var c = arguments[i];
        if (c === null || c === undefined) continue;
        parent.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
      }
      return parent;
    }
    function fmt(n) { return Number(n).toLocaleString('en-US'); }
    function unfront(pre, suf) {
      var out = new Array(pre.length), prev = '';
      for (var i = 0; i < pre.length; i++) { prev = prev.slice(0, pre[i]) + suf[i]; out[i] = prev; }
      return out;
    }
    function undelta(a) {
      var out = new Int32Array(a.length), v = 0;
      for (var i = 0; i < a.length; i++) { v += a[i]; out[i] = v; }
      return out;
    }
    function cssWord(w) { return /^[a-z_]+$/.test(w) ? w : 'other'; }
    function lowerBound(a, x) {
      var lo = 0, hi = a.length;
      while (lo < hi) { var m = (lo + hi) >> 1; if (a[m] < x) lo = m + 1; else hi = m; }
      return lo;
    }
    function link(text, hash, cls) {
      var a = el('a', cls, text);
      a.href = '#' + hash;
      return a;
    }

    var D = JSON.parse(document.getElementById('run-data').textContent);

    // ---- records
    var R = D.recs, nrec = R.idp.length;
    var recId = unfront(R.idp, R.ids);
    var recLine = undelta(R.line), recInput = undelta(R.input);
    var expected = new Map(R.expect.map(function (p) { return [p[0], p[1]]; }));
    var idIndex = new Map(), cpRecord = new Map(); // cpRecord: the last record an id of the trace stands for
    for (var i0 = 0; i0 < nrec; i0++) idIndex.set(recId[i0], i0);
    function recKey(r) { return R.key[r] < 0 ? recId[r] : R.keys[R.key[r]]; }
    // A KPL user record: the Kinesis record it is of (the id the trace,
    // checkpoints and on-failure records name), its sub-sequence number.
    var userOf = new Map();
    R.user.forEach(function (u) { userOf.set(u[0], { of: D.strs[u[1]], sub: u[2] }); });
    function recName(r) {
      var s = recLine[r] > 0 ? 'line ' + recLine[r] : recInput[r] > 0 ? 'record ' + recInput[r] : recId[r];
      var u = userOf.get(r);
      if (u && (recLine[r] > 0 || recInput[r] > 0)) s += ':' + u.sub;
      if (R.pid[r]) s += ' (id ' + R.pid[r] + ')';
      return s;
    }
    // engineId is the id the trace names a record by.
    function engineId(r) { var u = userOf.get(r); return u ? u.of : recId[r]; }
    function fateWord(f) { return f >= 0 ? D.fates[f] : 'no fate'; }
    // A fate's colour: the known fates keep theirs whatever their order;
    // another fate takes one by its place.
    var FATE_COLOUR = { processed: 'fc-processed', skipped: 'fc-skipped', quarantined: 'fc-quarantined', 'dead-lettered': 'fc-dead-lettered',
      'on-failure': 'fc-on-failure', filtered: 'fc-filtered', left: 'fc-left' };
    function fateClass(f) { return f < 0 ? 'fc-left' : FATE_COLOUR[D.fates[f]] || 'f-' + (f % 10); }
    function fateBadge(f) { return el('span', 'fate ' + fateClass(f), fateWord(f)); }
    function recLink(r, text) { return link(text || recName(r), 'record=' + encodeURIComponent(recId[r])); }

    // ---- invocations
    var I = D.invs, ninv = I.n.length;
    var invReq = unfront(I.reqp, I.reqs);
    var FL_BISECT = 1, FL_DUP = 2, FL_FINAL = 4, FL_IGNORED = 8;
    function invRecs(i) {
      var out = [], rg = I.recs[i];
      for (var k = 0; k < rg.length; k += 2) for (var j = 0; j < rg[k + 1]; j++) out.push(rg[k] + j);
      return out;
    }
    function invCount(i) { var n = 0, rg = I.recs[i]; for (var k = 1; k < rg.length; k += 2) n += rg[k]; return n; }
    var reported = new Map(); // invocation -> Set of records
    I.rep.forEach(function (p) { if (!reported.has(p[0])) reported.set(p[0], new Set()); reported.get(p[0]).add(p[1]); });
    var TEXT = ['error', 'errorType', 'errorMessage', 'killed'];
    var texts = new Map();
    I.text.forEach(function (t) { if (!texts.has(t[0])) texts.set(t[0], {}); texts.get(t[0])[TEXT[t[1]]] = D.strs[t[2]]; });
    var kills = new Map();
    I.kill.forEach(function (p) { kills.set(p[0], D.kills[p[1]]); });
    var extras = new Map();
    I.extraI.forEach(function (inv, k) { extras.set(inv, I.extra[k]); });
    var invByN = new Map();
    for (var i1 = 0; i1 < ninv; i1++) invByN.set(I.n[i1], i1);

    // A crash is a function error whose process the runner killed; it is
    // drawn apart, as the report counts it apart.
    function category(i) {
      var k = kills.get(i);
      if (k && !k.timeout) return 'crash';
      return D.results[I.res[i]] || 'other';
    }
    function resultWord(w) { return w.replace(/_/g, ' '); }

    // Each record's invocations, as one index (CSR: start offsets, list).
    var recInvStart = new Int32Array(nrec + 1);
    for (var a = 0; a < ninv; a++) {
      var rg = I.recs[a];
      for (var k = 0; k < rg.length; k += 2) for (var j = 0; j < rg[k + 1]; j++) recInvStart[rg[k] + j + 1]++;
    }
    for (var r0 = 0; r0 < nrec; r0++) recInvStart[r0 + 1] += recInvStart[r0];
    var recInvList = new Int32Array(recInvStart[nrec]);
    (function () {
      var fill = recInvStart.slice(0, nrec);
      for (var a = 0; a < ninv; a++) {
        var rg = I.recs[a];
        for (var k = 0; k < rg.length; k += 2) for (var j = 0; j < rg[k + 1]; j++) recInvList[fill[rg[k] + j]++] = a;
      }
    })();
    function invsOf(r) { return recInvList.subarray(recInvStart[r], recInvStart[r + 1]); }

    // ---- lanes and marks
    var nl = D.lanes.length;
    var laneInvs = [];
    for (var l0 = 0; l0 < nl; l0++) laneInvs.push([]);
    for (var a1 = 0; a1 < ninv; a1++) I.lanes[a1].forEach(function (l) { laneInvs[l].push(a1); });
    var laneRecCount = new Int32Array(nl);
    for (var r1 = 0; r1 < nrec; r1++) laneRecCount[R.lane[r1]]++;
    for (var r3 = 0; r3 < nrec; r3++) cpRecord.set(engineId(r3), r3);
    var M = D.marks;
    // Marks on a bar, by "invocation:lane"; marks at a lane's edges.
    var barMarks = new Map(), laneStart = [];
    for (var l1 = 0; l1 < nl; l1++) laneStart.push([]);
    function mark(inv, lane, m) {
      var key = inv + ':' + lane;
      if (!barMarks.has(key)) barMarks.set(key, []);
      barMarks.get(key).push(m);
    }
    function slotMark(slot, lane, m) {
      if (slot < 0) { laneStart[lane].push(m); return; }
      m.side = slot % 2 === 0 ? 'before' : 'after';
      mark(slot >> 1, lane, m);
    }
    var splitOf = new Map();
    M.split.forEach(function (s) { mark(s[0], s[1], { t: 'split' }); splitOf.set(s[0] + ':' + s[1], true); });
    M.cp.forEach(function (c) { slotMark(c[0], c[1], { t: 'cp', rec: c[2] }); });
    var ofOfRec = new Map();
    M.of.forEach(function (o) {
      slotMark(o.s, o.l, { t: 'of', of: o });
      var rg = o.r;
      for (var k = 0; k < rg.length; k += 2) for (var j = 0; j < rg[k + 1]; j++) ofOfRec.set(rg[k] + j, o);
    });
    var fateAt = new Map(); // record -> invocation where a fate other than processed was settled
    M.fate.forEach(function (f) {
      fateAt.set(f[1], f[0]);
      I.lanes[f[0]].forEach(function (l) { if (R.lane[f[1]] === l) mark(f[0], l, { t: 'fate', rec: f[1], fate: f[2] }); });
    });
    var filtGroups = new Map();
    M.filt.forEach(function (f) {
      var key = f[0] + ':' + f[1];
      if (!filtGroups.has(key)) { var m = { t: 'filt', recs: [] }; filtGroups.set(key, m); slotMark(f[0], f[1], m); }
      filtGroups.get(key).recs.push(f[2]);
    });
    for (var a2 = 0; a2 < ninv; a2++) {
      var kl = kills.get(a2);
      if (kl) I.lanes[a2].forEach(function (l) { mark(a2, l, { t: 'kill', kill: kl }); });
    }

    // ---- counts (computed here from the data, so a test can hold them
    // against the report)
    var counts = { invocations: ninv, records: nrec, duplicate: 0, crash: 0, timeoutKill: 0, bisection: M.split.length,
      retry: D.retries, redelivered: 0, onFailure: D.onFailure.length, checkpoint: M.cp.length, unexpected: R.expect.length };
    var resultCount = {}, fateCount = {};
    D.results.forEach(function (w) { resultCount[w] = 0; });
    D.fates.forEach(function (w) { fateCount[w] = 0; });
    for (var a3 = 0; a3 < ninv; a3++) {
      var w = D.results[I.res[a3]] || 'other', dup = I.fl[a3] & FL_DUP;
      if (dup) counts.duplicate++;
      if (!(dup && w === 'success')) resultCount[w] = (resultCount[w] || 0) + 1;
      var kk = kills.get(a3);
      if (kk) { if (kk.timeout) counts.timeoutKill++; else counts.crash++; }
      if (I.retry[a3] > 0 && !dup) counts.redelivered++;
    }
    var noFate = 0;
    for (var r2 = 0; r2 < nrec; r2++) { if (R.fate[r2] >= 0) fateCount[D.fates[R.fate[r2]]]++; else noFate++; }

    var sqs = D.source === 'sqs' || D.source === 'sqs-fifo';

    // ---- header, invariants, counts
    var main = el('main');
    document.body.appendChild(main);

    function drawHeader() {
      var h = el('header');
      add(h, el('h1', null, D.title));
      var v = el('div', 'meta');
      add(v, el('span', 'verdict ' + (D.held ? 'pass' : 'fail'), D.held ? 'PASS' : 'FAIL'));
      add(v, el('span', null, D.held ? 'the run ended and every check held' : 'a check did not hold, or the run did not end'));
      add(h, v);
      var m = el('div', 'meta muted');
      add(m, el('span', null, 'source: ' + D.source), el('span', null, fmt(nrec) + ' records'), el('span', null, fmt(ninv) + ' invocations'),
        el('span', null, fmt(nl) + ' ' + D.laneKind + (nl === 1 ? '' : 's')));
      if (D.generated) add(m, el('span', null, 'ended ' + D.generated));
      add(h, m);
      if (D.failure) add(h, el('div', 'warn', 'The run could not test the function (' + D.failure.kind + '): ' + D.failure.reason));
      if (D.stopped) add(h, el('div', 'warn', 'Stopped early: ' + D.stopped));
      if (noFate) add(h, el('div', 'warn', fmt(noFate) + ' records have no fate in the report'));
      if (D.mapping) {
        var det = el('details');
        add(det, el('summary', null, 'mapping'), el('pre', null, JSON.stringify(D.mapping, null, 2)));
        add(h, det);
      }
      if (D.lastFailed) {
        var lf = el('details');
        add(lf, el('summary', null, 'last failed invocation #' + D.lastFailed.n), el('pre', null, JSON.stringify(D.lastFailed, null, 2)));
        add(h, lf);
      }
      add(main, h);
    }

    function drawInvariants() {
      var s = el('section');
      s.id = 'invariants';
      add(s, el('h2', null, 'Invariants'));
      if (!D.invariants || !D.invariants.length) add(s, el('p', 'muted', 'No checks ran.'));
      (D.invariants || []).forEach(function (iv) {
        var d = el('div', 'invariant');
        d.dataset.invariant = iv.name;
        d.dataset.status = iv.status;
        add(d, el('span', 'status ' + cssWord(iv.status.replace(/-/g, '_')).replace(/_/g, '-'), iv.status), el('b', null, iv.name));
        if (iv.reason) add(d, el('span', 'muted', ' — ' + iv.reason));
        if (iv.violations && iv.violations.length) {
          var ul = el('ul'), shown = 5;
          iv.violations.forEach(function (v, k) {
            var li = el('li', 'violation', v.text + ' ');
            (v.recs || []).forEach(function (r) { var a = recLink(r, 'path \u2192'); a.title = 'every invocation ' + recName(r) + ' was in'; add(li, a, ' '); });
            if (k >= shown) li.hidden = true;
            add(ul, li);
          });
          if (iv.violations.length > shown) {
            var more = el('li'), b = el('button', null, 'show all ' + iv.violations.length);
            b.type = 'button';
            b.addEventListener('click', function () { ul.querySelectorAll('li[hidden]').forEach(function (li) { li.hidden = false; }); more.remove(); });
            add(more, b);
            add(ul, more);
          }
          if (iv.name === 'fate-as-expected' && R.expect.length) {
            var all = el('li'), a = el('a', null, 'list every record not as expected (' + fmt(R.expect.length) + ')');
            a.href = '#records';
            a.addEventListener('click', function () { var cb = document.getElementById('rec-unexpected'); cb.checked = true; cb.dispatchEvent(new Event('change')); });
            add(all, a);
            add(ul, all);
          }
          add(d, ul);
        }
        add(s, d);
      });
      add(main, s);
    }

    function countRow(t, label, key, value, swatch) {
      var tr = el('tr'), th = el('th'), td = el('td');
      if (swatch) add(th, el('span', 'sw ' + swatch));
      add(th, label);
      td.textContent = fmt(value);
      td.dataset.count = key;
      add(tr, th, td);
      add(t, tr);
    }
    function drawCounts() {
      var s = el('section');
      s.id = 'counts';
      add(s, el('h2', null, 'What happened'));
      var box = el('div', 'counts');
      var t1 = el('table');
      add(t1, el('caption', null, 'Invocations'));
      countRow(t1, 'all', 'invocations', ninv);
      D.results.forEach(function (w) { countRow(t1, resultWord(w), 'result:' + w, resultCount[w] || 0, 'r-' + cssWord(w)); });
      countRow(t1, 'crashes injected (in function error)', 'crash', counts.crash, 'r-crash');
      countRow(t1, 'timeouts injected (in timeout)', 'timeout-kill', counts.timeoutKill);
      countRow(t1, 'duplicate deliveries', 'duplicate', counts.duplicate);
      var t2 = el('table');
      add(t2, el('caption', null, 'Lambda'));
      if (sqs) {
        countRow(t2, 'batches delivered again', 'redelivered', counts.redelivered);
      } else {
        countRow(t2, 'bisections', 'bisection', counts.bisection);
        countRow(t2, 'retries', 'retry', counts.retry);
        countRow(t2, 'checkpoint advances', 'checkpoint', counts.checkpoint);
      }
      countRow(t2, 'on-failure records', 'onfailure-records', counts.onFailure);
      countRow(t2, 'kills (crash or timeout)', 'kills', D.kills.length);
      var t3 = el('table');
      add(t3, el('caption', null, 'Records'));
      countRow(t3, 'all', 'records', nrec);
      D.fates.forEach(function (w, f) { countRow(t3, w, 'fate:' + w, fateCount[w], fateClass(f)); });
      countRow(t3, 'not as expected', 'unexpected', counts.unexpected);
      add(box, t1, t2, t3);
      add(s, box);
      if (D.totals) {
        var det = el('details');
        add(det, el('summary', null, 'the report\'s own totals (report.json)'), el('pre', null, JSON.stringify(D.totals, null, 2)));
        add(s, det);
      }
      add(main, s);
    }

    // ---- timeline
    var GLYPH = { split: '\u2702', retry: '\u21bb', of: '\u2691', kill: '\u2715', fate: '\u25c6', dup: '\u21c9', filt: '\u2298' };
    var view = { from: 0, to: ninv, mode: 'order', lanePage: 0, laneFilter: '', sel: -1, hl: null };
    var LANES_PER_PAGE = 20;
    var cum = new Float64Array(ninv + 1); // the run's invocations end to end, by duration
    for (var a4 = 0; a4 < ninv; a4++) cum[a4 + 1] = cum[a4] + Math.max(I.ms[a4], 1);
    var tlSection, tlBody, tlInfo, tlAxis, lanePager;

    function markTitle(m, i) {
      switch (m.t) {
        case 'split': return 'bisected: Lambda split this batch in two; the next invocations of the lane are its halves';
        case 'cp': return 'checkpoint moved to ' + recName(m.rec) + ' (' + engineId(m.rec) + ')';
        case 'of': {
          var of = D.onFailure[m.of.i] || {}, rc = of.requestContext || {};
          return 'on-failure record #' + (m.of.i + 1) + ': ' + (rc.condition || '') + ', ' + fmt(countRanges(m.of.r)) + ' records given up on' +
            (m.side === 'before' ? ' before this invocation' : ' after this invocation');
        }
        case 'kill': return (m.kill.timeout ? 'timeout: ' : 'crash: ') + (m.kill.what || m.kill.point);
        case 'fate': return recName(m.rec) + ': ' + fateWord(m.fate) + ' here';
        case 'filt': return fmt(m.recs.length) + ' filtered records (matched none of FilterCriteria) skipped here: ' +
          m.recs.slice(0, 5).map(recName).join(', ') + (m.recs.length > 5 ? ', ...' : '');
        case 'retry': return 'retry ' + I.retry[i] + (sqs ? ' (the first message was received ' + I.retry[i] + ' times before)' : ' of the head record');
        case 'dup': return 'an injected duplicate delivery of a batch that had succeeded';
      }
      return m.t;
    }
    function countRanges(rg) { var n = 0; for (var k = 1; k < rg.length; k += 2) n += rg[k]; return n; }

    // xScale places invocation i between x0(i) and x1(i) on a track W
    // wide, after a margin for the marks at the lane's start.
    var PAD = 12;
    function xScale(W) {
      var from = view.from, to = view.to;
      W -= PAD;
      if (view.mode === 'time') {
        var t0 = cum[from], span = Math.max(cum[to] - t0, 1);
        return { x0: function (i) { return PAD + (cum[i] - t0) / span * W; }, x1: function (i) { return PAD + (cum[i + 1] - t0) / span * W; } };
      }
      var n = Math.max(to - from, 1);
      return { x0: function (i) { return PAD + (i - from) / n * W; }, x1: function (i) { return PAD + (i + 1 - from) / n * W; } };
    }

    function visibleLanes() {
      var f = view.laneFilter.toLowerCase(), out = [];
      for (var l = 0; l < nl; l++) if (!f || D.lanes[l].toLowerCase().indexOf(f) >= 0) out.push(l);
      return out;
    }

    function drawTimeline() {
      tlSection = el('section');
      tlSection.id = 'timeline';
      add(tlSection, el('h2', null, 'Timeline, one row per ' + D.laneKind));
      var c = el('div', 'tl-controls');
      function btn(text, title, fn) { var b = el('button', null, text); b.type = 'button'; b.title = title; b.addEventListener('click', fn); add(c, b); return b; }
      btn('whole run', 'show every invocation', function () { view.from = 0; view.to = ninv; renderTimeline(); }).id = 'tl-all';
      btn('\u2212', 'zoom out', function () { zoom(2); });
      btn('+', 'zoom in', function () { zoom(0.5); });
      btn('\u25c0', 'earlier', function () { pan(-1); });
      btn('\u25b6', 'later', function () { pan(1); });
      var mode = el('select');
      [['order', 'x: invocation order'], ['time', 'x: duration, end to end']].forEach(function (o) {
        var op = el('option', null, o[1]); op.value = o[0]; add(mode, op);
      });
      mode.addEventListener('change', function () { view.mode = mode.value; renderTimeline(); });
      add(c, mode);
      var lf = el('input');
      lf.type = 'search'; lf.placeholder = 'filter ' + D.laneKind + 's';
      lf.addEventListener('input', function () { view.laneFilter = lf.value; view.lanePage = 0; renderTimeline(); });
      add(c, lf);
      lanePager = el('span', 'muted');
      add(c, lanePager);
      tlInfo = el('span', 'muted');
      tlInfo.id = 'tl-info';
      add(c, tlInfo);
      add(tlSection, c);
      var lg = el('div', 'legend');
      D.results.concat(['crash']).forEach(function (w) { add(lg, add(el('span'), el('span', 'sw r-' + cssWord(w)), resultWord(w))); });
      [['split', 'bisection split'], ['retry', 'retry'], ['of', 'on-failure record'], ['kill', 'process killed'], ['fate', 'quarantined, dead-lettered or another fate'],
        ['filt', 'filtered'], ['dup', 'duplicate delivery']].forEach(function (g) {
        add(lg, add(el('span'), el('span', 'g mk-' + g[0], GLYPH[g[0]]), g[1]));
      });
      add(lg, add(el('span'), el('span', 'sw', ''), 'checkpoint moved (green flag)'));
      lg.lastChild.firstChild.style.background = 'var(--cp)';
      add(tlSection, lg);
      tlBody = el('div', 'tl');
      add(tlSection, tlBody);
      tlAxis = el('div', 'axis');
      add(tlSection, tlAxis);
      add(tlSection, el('p', 'muted', 'Each bar is one invocation (its records, its result by colour, its duration in its tooltip and details); ' +
        'click one for what Lambda did with it. When the view holds more invocations than fit, bars are grouped: a group\'s colours are its ' +
        'results\' shares; click it to zoom in. The runner makes invocations one after another (several at once only for SQS MaximumConcurrency), ' +
        'so their order is the run\'s time; waits Lambda would make (retry delays, visibility timeouts) are skipped on the virtual clock.'));
      add(main, tlSection);
    }

    function zoom(f) {
      var n = view.to - view.from, mid = view.from + n / 2, half = Math.max(Math.round(n * f / 2), 5);
      view.from = Math.max(0, Math.round(mid - half));
      view.to = Math.min(ninv, view.from + 2 * half);
      view.from = Math.max(0, view.to - 2 * half);
      renderTimeline();
    }
    function pan(dir) {
      var n = view.to - view.from;
      view.from = Math.min(Math.max(0, view.from + dir * Math.round(n * 0.8)), Math.max(0, ninv - n));
      view.to = Math.min(ninv, view.from + n);
      renderTimeline();
    }
    function showRange(a, b) {
      var pad = Math.max(2, Math.round((b - a) * 0.1));
      view.from = Math.max(0, a - pad);
      view.to = Math.min(ninv, b + 1 + pad);
      renderTimeline();
    }

    function glyph(t, title) { var s = el('span', 'mk mk-' + t, GLYPH[t]); s.title = title; return s; }

    function renderTimeline() {
      tlBody.textContent = '';
      var lanes = visibleLanes(), pages = Math.max(1, Math.ceil(lanes.length / LANES_PER_PAGE));
      view.lanePage = Math.min(view.lanePage, pages - 1);
      lanePager.textContent = '';
      if (pages > 1) {
        var prev = el('button', null, '\u25b2'), next = el('button', null, '\u25bc');
        prev.type = next.type = 'button';
        prev.title = 'previous ' + D.laneKind + 's'; next.title = 'next ' + D.laneKind + 's';
        prev.addEventListener('click', function () { view.lanePage = Math.max(0, view.lanePage - 1); renderTimeline(); });
        next.addEventListener('click', function () { view.lanePage = Math.min(pages - 1, view.lanePage + 1); renderTimeline(); });
        add(lanePager, prev, ' ' + D.laneKind + 's ' + fmt(view.lanePage * LANES_PER_PAGE + 1) + '\u2013' +
          fmt(Math.min(lanes.length, (view.lanePage + 1) * LANES_PER_PAGE)) + ' of ' + fmt(lanes.length) + ' ', next);
      }
      lanes = lanes.slice(view.lanePage * LANES_PER_PAGE, (view.lanePage + 1) * LANES_PER_PAGE);
      var W = Math.max(200, (tlBody.clientWidth || 900) - 232);
      var n = view.to - view.from, sc = xScale(W);
      var maxBars = Math.floor(W / 4), size = 1;
      if (n > maxBars) size = Math.ceil(n / Math.floor(W / 8));
      tlInfo.textContent = 'invocations ' + fmt(view.from + (n ? 1 : 0)) + '\u2013' + fmt(view.to) + ' of ' + fmt(ninv) +
        (size > 1 ? ' (grouped by ' + fmt(size) + ')' : '');
      tlSection.dataset.grouped = size > 1 ? String(size) : '';
      var hl = view.hl;
      lanes.forEach(function (l) {
        var row = el('div', 'lane'), label = el('div', 'lane-label'), track = el('div', 'track');
        row.dataset.lane = D.lanes[l];
        add(label, el('span', 'mono', D.lanes[l]));
        var info = fmt(laneRecCount[l]) + ' records, ' + fmt(laneInvs[l].length) + ' invocations';
        add(label, el('small', null, info));
        if (D.checkpoints && D.checkpoints[D.lanes[l]] !== undefined) {
          var cpText = D.checkpoints[D.lanes[l]], cpRec = cpRecord.get(D.source === 'kafka' ? D.lanes[l] + '@' + cpText : cpText);
          var cs = el('small', null, 'checkpoint: ' + (cpText === '' ? 'none' : cpRec !== undefined ? recName(cpRec) : cpText));
          cs.title = 'the report\'s final checkpoint: ' + (cpText || 'none');
          add(label, cs);
        }
        add(row, label, track);
        var list = laneInvs[l], lo = lowerBound(list, view.from), hi = lowerBound(list, view.to);
        if (view.from === 0 && laneStart[l].length) {
          laneStart[l].forEach(function (m) {
            var e = el('span', 'edge mk-' + m.t, m.t === 'filt' ? GLYPH.filt : '');
            if (m.t === 'cp') { e = el('span', 'cp'); e.style.left = '0px'; }
            else e.style.left = '1px';
            e.title = markTitle(m, -1) + ' (before the lane\'s first invocation)';
            add(track, e);
          });
        }
        if (size === 1) {
          for (var k = lo; k < hi; k++) drawBar(track, list[k], l, sc, hl);
        } else {
          drawBuckets(track, list, lo, hi, l, size, sc, hl);
        }
        add(tlBody, row);
      });
      var ticks = el('div', 'ticks'), pad = el('div', 'pad');
      tlAxis.textContent = '';
      add(tlAxis, pad, ticks);
      if (n > 0) {
        for (var t = 0; t <= 6; t++) {
          var i = Math.min(view.to - 1, view.from + Math.round(t * (n - 1) / 6));
          var s = el('span', null, view.mode === 'time' ? fmtMs(cum[i] - cum[view.from]) : '#' + I.n[i]);
          s.style.left = sc.x0(i) + 'px';
          add(ticks, s);
        }
      }
    }
    function fmtMs(ms) { return ms < 1000 ? Math.round(ms) + ' ms' : (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s'; }

    function drawBar(track, i, l, sc, hl) {
      var x0 = sc.x0(i), x1 = sc.x1(i), w = Math.max(x1 - x0 - 1, 2);
      var cat = category(i), fl = I.fl[i];
      var b = el('div', 'bar inv r-' + cssWord(cat) + (fl & FL_DUP ? ' dup' : '') + (fl & FL_BISECT ? ' bis' : '') +
        (view.sel === i ? ' sel' : '') + (hl && hl.has(i) ? ' hl' : ''));
      b.dataset.n = I.n[i];
      b.dataset.result = cat;
      b.style.left = x0 + 'px';
      b.style.width = w + 'px';
      var nr = invCount(i);
      if (w >= 24) b.textContent = String(nr);
      b.title = '#' + I.n[i] + ' ' + resultWord(cat) + ', ' + fmt(nr) + ' records, ' + I.ms[i] + ' ms' + (I.retry[i] ? ', retry ' + I.retry[i] : '') +
        (fl & FL_BISECT ? ', half of a bisected batch' : '') + (fl & FL_DUP ? ', duplicate delivery' : '');
      b.addEventListener('click', function () { location.hash = 'invocation=' + I.n[i]; });
      add(track, b);
      var ms = el('div', 'marks');
      ms.style.left = x0 + 'px';
      if (I.retry[i] > 0 && !(fl & FL_DUP)) add(ms, glyph('retry', markTitle({ t: 'retry' }, i)));
      if (fl & FL_DUP) add(ms, glyph('dup', markTitle({ t: 'dup' }, i)));
      (barMarks.get(i + ':' + l) || []).forEach(function (m) {
        if (m.t === 'cp') {
          var c = el('span', 'cp');
          c.style.left = (m.side === 'before' ? x0 - 1 : x0 + w) + 'px';
          c.title = markTitle(m, i);
          c.dataset.mark = 'cp';
          add(track, c);
          return;
        }
        if (m.side === 'before') {
          var e = el('span', 'edge mk-' + m.t, GLYPH[m.t]);
          e.style.left = Math.max(0, x0 - 9) + 'px';
          e.title = markTitle(m, i) + ' (before #' + I.n[i] + ')';
          add(track, e);
          return;
        }
        add(ms, glyph(m.t, markTitle(m, i)));
      });
      if (ms.childNodes.length) add(track, ms);
    }

    function drawBuckets(track, list, lo, hi, l, size, sc, hl) {
      var k = lo;
      while (k < hi) {
        var start = view.from + Math.floor((list[k] - view.from) / size) * size, end = Math.min(view.to, start + size);
        var by = {}, nb = 0, marksIn = {}, first = list[k], last = first, hit = false;
        while (k < hi && list[k] < end) {
          var i = list[k], cat = category(i);
          by[cat] = (by[cat] || 0) + 1;
          nb++;
          last = i;
          if (hl && hl.has(i)) hit = true;
          (barMarks.get(i + ':' + l) || []).forEach(function (m) { marksIn[m.t] = (marksIn[m.t] || 0) + 1; });
          if (I.retry[i] > 0 && !(I.fl[i] & FL_DUP)) marksIn.retry = (marksIn.retry || 0) + 1;
          if (I.fl[i] & FL_DUP) marksIn.dup = (marksIn.dup || 0) + 1;
          k++;
        }
        var x0 = sc.x0(start), x1 = sc.x1(end - 1), w = Math.max(x1 - x0 - 1, 3);
        var b = el('div', 'bucket' + (hit ? ' hl' : ''));
        b.dataset.count = String(nb);
        b.dataset.from = I.n[first];
        b.dataset.to = I.n[last];
        b.style.left = x0 + 'px';
        b.style.width = w + 'px';
        // The group's colours: each result's share, left to right.
        var stops = [], acc = 0, order = D.results.concat(['crash', 'other']);
        order.forEach(function (c) {
          if (!by[c]) return;
          var a = acc / nb * 100;
          acc += by[c];
          stops.push('var(--' + (/^(success|partial|function_error|timeout|crash)$/.test(c) ? c : 'other') + ') ' + a + '% ' + (acc / nb * 100) + '%');
        });
        b.style.background = 'linear-gradient(to right, ' + stops.join(', ') + ')';
        var parts = Object.keys(by).map(function (c) { return fmt(by[c]) + ' ' + resultWord(c); });
        var mparts = Object.keys(marksIn).map(function (t) { return fmt(marksIn[t]) + ' ' + ({ split: 'splits', retry: 'retries', of: 'on-failure records',
          kill: 'kills', fate: 'records quarantined or dead-lettered', filt: 'filtered groups', dup: 'duplicates', cp: 'checkpoint advances' })[t]; });
        b.title = '#' + I.n[first] + '\u2013#' + I.n[last] + ': ' + fmt(nb) + ' invocations of this ' + D.laneKind + ' (' + parts.join(', ') + ')' +
          (mparts.length ? '; ' + mparts.join(', ') : '') + '. Click to zoom in.';
        (function (s, e) { b.addEventListener('click', function () { view.from = s; view.to = e; renderTimeline(); }); })(start, end);
        add(track, b);
        var ms = el('div', 'marks');
        ms.style.left = x0 + 'px';
        ['split', 'of', 'kill', 'fate'].forEach(function (t) { if (marksIn[t]) add(ms, glyph(t, fmt(marksIn[t]) + ' \u00d7 ' + t)); });
        if (ms.childNodes.length) add(track, ms);
      }
    }

    // ---- records table
    var tableState = { fate: -2, lane: -1, q: '', unexpected: false, order: 'source', page: 0 };
    var PAGE = 100, recTable, recInfo, recPager, sourceOrder = null;
    function drawRecords() {
      var s = el('section');
      s.id = 'records';
      add(s, el('h2', null, 'Records'));
      var c = el('div', 'rec-controls');
      var fs = el('select');
      fs.id = 'rec-fate';
      var all = el('option', null, 'every fate'); all.value = '-2'; add(fs, all);
      D.fates.forEach(function (w, f) { var o = el('option', null, w + ' (' + fmt(fateCount[w]) + ')'); o.value = String(f); add(fs, o); });
      fs.addEventListener('change', function () { tableState.fate = +fs.value; tableState.page = 0; renderRecords(); });
      var ls = el('select');
      var al = el('option', null, 'every ' + D.laneKind); al.value = '-1'; add(ls, al);
      if (nl <= 2000) D.lanes.forEach(function (name, l) { var o = el('option', null, name); o.value = String(l); add(ls, o); });
      ls.addEventListener('change', function () { tableState.lane = +ls.value; tableState.page = 0; renderRecords(); });
      var q = el('input');
      q.id = 'rec-search';
      q.type = 'search'; q.placeholder = 'id, payload id, key or line';
      q.addEventListener('input', function () { tableState.q = q.value.trim().toLowerCase(); tableState.page = 0; renderRecords(); });
      var un = el('input'); un.type = 'checkbox'; un.id = 'rec-unexpected';
      un.addEventListener('change', function () { tableState.unexpected = un.checked; tableState.page = 0; renderRecords(); });
      var unl = el('label', null, ' only those not as expected'); unl.prepend(un);
      var os = el('select');
      [['source', 'in source order'], ['lane', 'by ' + D.laneKind]].forEach(function (o) { var op = el('option', null, o[1]); op.value = o[0]; add(os, op); });
      os.addEventListener('change', function () { tableState.order = os.value; tableState.page = 0; renderRecords(); });
      recInfo = el('span', 'muted');
      recPager = el('span');
      add(c, fs, ls, q, unl, os, recInfo, recPager);
      add(s, c);
      recTable = el('table', 'data');
      recTable.id = 'record-table';
      add(s, recTable);
      add(main, s);
    }
    function matches(r) {
      var st = tableState;
      if (st.fate > -2 && R.fate[r] !== st.fate) return false;
      if (st.lane >= 0 && R.lane[r] !== st.lane) return false;
      if (st.unexpected && !expected.has(r)) return false;
      if (st.q) {
        var q = st.q;
        if (recId[r].toLowerCase().indexOf(q) < 0 && (R.pid[r] || '').toLowerCase().indexOf(q) < 0 &&
          recKey(r).toLowerCase().indexOf(q) < 0 && recName(r).toLowerCase().indexOf(q) < 0) return false;
      }
      return true;
    }
    function renderRecords() {
      var order;
      if (tableState.order === 'source') {
        if (!sourceOrder) {
          sourceOrder = new Int32Array(nrec);
          for (var r = 0; r < nrec; r++) sourceOrder[r] = r;
          var placeOf = function (r) { return recInput[r] > 0 ? recInput[r] : recLine[r] > 0 ? recLine[r] : 1e12 + r; };
          var keyed = Array.prototype.map.call(sourceOrder, function (r) { return [placeOf(r), r]; });
          keyed.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; });
          keyed.forEach(function (p, k) { sourceOrder[k] = p[1]; });
        }
        order = sourceOrder;
      } else {
        order = null;
      }
      var hits = [];
      for (var k = 0; k < nrec; k++) { var rr = order ? order[k] : k; if (matches(rr)) hits.push(rr); }
      var pages = Math.max(1, Math.ceil(hits.length / PAGE));
      tableState.page = Math.min(tableState.page, pages - 1);
      recInfo.textContent = '';
      var cnt = el('span', null, fmt(hits.length));
      cnt.dataset.count = 'table-matches';
      add(recInfo, cnt, ' records' + (pages > 1 ? ', page ' + (tableState.page + 1) + ' of ' + fmt(pages) : ''));
      recPager.textContent = '';
      if (pages > 1) {
        var p = el('button', null, 'previous'), n = el('button', null, 'next');
        p.type = n.type = 'button';
        p.addEventListener('click', function () { tableState.page = Math.max(0, tableState.page - 1); renderRecords(); });
        n.addEventListener('click', function () { tableState.page = Math.min(pages - 1, tableState.page + 1); renderRecords(); });
        add(recPager, p, ' ', n);
      }
      recTable.textContent = '';
      var head = el('tr');
      ['record', 'id in the source', 'payload id', 'key', D.laneKind, 'fate', 'invocations'].forEach(function (h) { add(head, el('th', null, h)); });
      add(recTable, head);
      hits.slice(tableState.page * PAGE, (tableState.page + 1) * PAGE).forEach(function (r) {
        var tr = el('tr', 'row');
        tr.dataset.record = recId[r];
        tr.addEventListener('click', function (e) { if (e.target.tagName !== 'A') location.hash = 'record=' + encodeURIComponent(recId[r]); });
        var fateCell = el('td');
        add(fateCell, fateBadge(R.fate[r]));
        if (expected.has(r)) add(fateCell, el('span', 'tag bad', 'expected ' + fateWord(expected.get(r))));
        add(tr, add(el('td'), recLink(r)), add(el('td', 'mono'), recLink(r, recId[r])), el('td', null, R.pid[r]), el('td', 'mono', recKey(r)),
          el('td', 'mono', D.lanes[R.lane[r]]), fateCell, el('td', 'num', fmt(invsOf(r).length)));
        add(recTable, tr);
      });
    }

    // ---- lists: on-failure records, kills
    function drawLists() {
      var s = el('section');
      s.id = 'lists';
      if (D.onFailure.length) {
        add(s, el('h2', null, 'On-failure records (' + fmt(D.onFailure.length) + ')'));
        var ofByIndex = new Map();
        M.of.forEach(function (o) { ofByIndex.set(o.i, o); });
        var t = el('table', 'data');
        add(t, add(el('tr'), el('th', null, '#'), el('th', null, 'condition'), el('th', null, 'invocations'), el('th', null, 'records'), el('th', null, 'after')));
        D.onFailure.slice(0, 500).forEach(function (of, k) {
          var rc = of.requestContext || {}, o = ofByIndex.get(k), tr = el('tr');
          var recs = el('td'), at = el('td');
          if (o) {
            var first = o.r[0];
            add(recs, recLink(first), o.r.length > 2 || o.r[1] > 1 ? ' and ' + fmt(countRanges(o.r) - 1) + ' more' : '');
            var i = o.s >> 1;
            if (o.s >= 0 && i < ninv) add(at, o.s % 2 ? 'after ' : 'before ', link('#' + I.n[i], 'invocation=' + I.n[i]));
          } else add(recs, el('span', 'muted', 'not placed'));
          var det = el('details');
          add(det, el('summary', null, 'JSON'), el('pre', null, JSON.stringify(of, null, 2)));
          add(tr, el('td', 'num', k + 1), add(el('td'), rc.condition || '', det), el('td', 'num', rc.approximateInvokeCount), recs, at);
          add(t, tr);
        });
        add(s, t);
      }
      if (D.kills.length) {
        add(s, el('h2', null, 'Kills (' + fmt(D.kills.length) + ')'));
        var kt = el('table', 'data');
        add(kt, add(el('tr'), el('th', null, 'invocation'), el('th', null, 'kind'), el('th', null, 'point'), el('th', null, 'effects left'), el('th', null, 'what')));
        D.kills.slice(0, 500).forEach(function (k) {
          add(kt, add(el('tr'), add(el('td'), link('#' + k.n, 'invocation=' + k.n)), el('td', null, k.timeout ? 'timeout' : 'crash'), el('td', null, k.point),
            el('td', 'num', k.effects < 0 ? 'unknown' : k.effects), el('td', null, k.what)));
        });
        add(s, kt);
      }
      add(main, s);
    }

    // ---- details panel: an invocation, or a record's path
    var panel = el('aside');
    panel.id = 'panel';
    panel.hidden = true;
    document.body.appendChild(panel);
    function openPanel(title) {
      panel.textContent = '';
      var x = el('button', 'close', 'close \u2715');
      x.type = 'button';
      x.addEventListener('click', closePanel);
      add(panel, x, el('h3', null, title));
      panel.hidden = false;
      panel.scrollTop = 0;
      return panel;
    }
    function closePanel() {
      panel.hidden = true;
      view.sel = -1; view.hl = null;
      if (location.hash) {
        try { history.replaceState(null, '', location.pathname + location.search); } catch (e) { location.hash = ''; }
      }
      renderTimeline();
    }
    function dl(rows) {
      var d = el('dl');
      rows.forEach(function (r) { if (r[1] === undefined || r[1] === null || r[1] === '') return; add(d, el('dt', null, r[0]), typeof r[1] === 'object' ? add(el('dd'), r[1]) : el('dd', null, r[1])); });
      return d;
    }

    function showInvocation(i) {
      var p = openPanel('Invocation #' + I.n[i]);
      panel.dataset.kind = 'invocation';
      panel.dataset.n = I.n[i];
      var cat = category(i), fl = I.fl[i], tx = texts.get(i) || {}, k = kills.get(i);
      var res = el('span');
      add(res, el('span', 'sw r-' + cssWord(cat)), resultWord(cat));
      var flags = [];
      if (fl & FL_BISECT) flags.push('half of a bisected batch');
      if (fl & FL_DUP) flags.push('duplicate delivery');
      if (fl & FL_FINAL) flags.push('final invoke of a tumbling window');
      if (fl & FL_IGNORED) flags.push('partial response ignored by Lambda');
      add(p, dl([['request id', invReq[i]], [D.laneKind + 's', I.lanes[i].map(function (l) { return D.lanes[l]; }).join(', ')], ['result', res],
        ['records', fmt(invCount(i))], ['duration', I.ms[i] + ' ms'], ['retry', I.retry[i] || ''], ['', flags.join('; ')],
        ['error', tx.error], ['errorType', tx.errorType], ['killed', tx.killed],
        ['kill', k ? (k.timeout ? 'timeout' : 'crash') + ' at ' + k.point + ', ' + k.afterMs + ' ms after the hand-over' + (k.effects >= 0 ? ', ' + k.effects + ' effects left' : '') : '']]));
      if (tx.errorMessage) add(p, el('pre', null, tx.errorMessage));
      var ex = extras.get(i);
      if (ex) add(p, dl(Object.keys(ex).map(function (key) { return [key, typeof ex[key] === 'string' ? ex[key] : JSON.stringify(ex[key])]; })));
      var notes = el('ul');
      I.lanes[i].forEach(function (l) {
        (barMarks.get(i + ':' + l) || []).forEach(function (m) {
          var li = el('li', null, markTitle(m, i));
          if (m.t === 'cp' || m.t === 'fate') add(li, ' ', recLink(m.rec, 'open'));
          if (m.t === 'of') add(li, el('pre', null, JSON.stringify(D.onFailure[m.of.i], null, 2)));
          add(notes, li);
        });
      });
      if (notes.childNodes.length) add(p, el('b', null, 'What Lambda did'), notes);
      var recs = invRecs(i), rep = reported.get(i), t = el('table', 'data');
      add(t, add(el('tr'), el('th', null, 'record'), el('th', null, D.laneKind), el('th', null, 'in this invocation'), el('th', null, 'fate')));
      recs.slice(0, 1000).forEach(function (r) {
        var tr = el('tr');
        tr.dataset.record = recId[r];
        add(tr, add(el('td'), recLink(r)), el('td', 'mono', D.lanes[R.lane[r]]), el('td', null, outcomeIn(i, r, rep)), add(el('td'), fateBadge(R.fate[r])));
        add(t, tr);
      });
      add(p, el('b', null, 'Records'), t);
      if (recs.length > 1000) add(p, el('p', 'muted', '... and ' + fmt(recs.length - 1000) + ' more'));
      view.sel = i;
      view.hl = null;
      if (i < view.from || i >= view.to) showRange(Math.max(0, i - 20), Math.min(ninv - 1, i + 20));
      else renderTimeline();
    }

    function outcomeIn(i, r, rep) {
      var w = D.results[I.res[i]];
      if (rep && rep.has(r)) return (I.fl[i] & FL_IGNORED) ? 'reported failed (ignored)' : 'reported failed';
      if (w === 'success') return I.fl[i] & FL_DUP ? 'delivered again' : 'succeeded';
      if (w === 'partial') return 'not reported';
      return 'failed with the whole batch';
    }

    function why(r) {
      var f = fateWord(R.fate[r]), list = invsOf(r), lastI = -1;
      for (var k = list.length - 1; k >= 0; k--) if (!(I.fl[list[k]] & FL_DUP)) { lastI = list[k]; break; }
      var at = lastI >= 0 ? '#' + I.n[lastI] : '';
      var out = el('div', 'why');
      switch (f) {
        case 'processed':
          add(out, list.length ? 'Processed: invocation ' + at + ' succeeded for it and Lambda acknowledged it (' +
            (sqs ? 'deleted the message' : 'moved the checkpoint past it') + ').' : 'Processed.');
          break;
        case 'quarantined':
          add(out, 'Quarantined: the function parked it in its own dead letters' + (at ? ' in invocation ' + at : '') + ' and reported it handled.');
          break;
        case 'on-failure': {
          var o = ofOfRec.get(r), of = o ? D.onFailure[o.i] : null, rc = of ? of.requestContext || {} : {};
          add(out, 'Lambda gave up on it' + (rc.condition ? ' (' + rc.condition + ', after ' + rc.approximateInvokeCount + ' invocations of its batch)' : '') +
            ' and sent on-failure record #' + (o ? o.i + 1 : '?') + ' to the mapping\'s destination' +
            (o && o.s >= 0 ? (o.s % 2 ? ' after invocation #' : ' before invocation #') + I.n[o.s >> 1] : '') + '.');
          break;
        }
        case 'dead-lettered':
          add(out, 'The queue\'s redrive policy moved it to the dead-letter queue after its last delivery' + (at ? ' (invocation ' + at + ')' : '') +
            ', received ' + list.length + ' times.');
          break;
        case 'skipped':
          add(out, 'Skipped: its handler acknowledged it without running the function (a duplicate whose idempotency key had completed, a test event)' +
            (at ? ' in invocation ' + at : '') + '; the report\'s skipped list says why and how the runner checked it.');
          break;
        case 'filtered':
          add(out, 'Filtered: it matched none of the mapping\'s FilterCriteria, and Lambda dropped it without invoking the function.');
          break;
        case 'left':
          add(out, 'Left: it was still in the source when the run ended' + (D.stopped ? ' (' + D.stopped + ')' : '') + '.');
          break;
        default:
          add(out, 'Its fate: ' + f + (at ? ', settled in invocation ' + at : '') + '.');
      }
      if (expected.has(r)) add(out, el('div', null, 'Not as expected: it was expected to end ' + fateWord(expected.get(r)) + '.'));
      return out;
    }

    function showRecord(r) {
      var p = openPanel(recName(r));
      panel.dataset.kind = 'record';
      panel.dataset.record = recId[r];
      var fb = el('span');
      add(fb, fateBadge(R.fate[r]));
      var u = userOf.get(r);
      add(p, dl([['fate', fb], ['id in the source', recId[r]], ['KPL user record of', u ? u.of + ', sub-sequence number ' + u.sub : ''],
        ['payload id', R.pid[r]], ['key', recKey(r)], [D.laneKind, D.lanes[R.lane[r]]]]));
      add(p, why(r));
      var list = invsOf(r), t = el('table', 'data');
      t.id = 'path';
      add(t, add(el('tr'), el('th', null, 'invocation'), el('th', null, 'result'), el('th', null, 'this record'), el('th', null, ''), el('th', null, 'ms')));
      Array.prototype.forEach.call(list, function (i) {
        var tr = el('tr'), tags = el('td'), cat = category(i);
        tr.dataset.n = I.n[i];
        if (I.fl[i] & FL_BISECT) add(tags, el('span', 'tag', 'bisect half'));
        if (I.retry[i]) add(tags, el('span', 'tag', 'retry ' + I.retry[i]));
        if (I.fl[i] & FL_DUP) add(tags, el('span', 'tag', 'duplicate'));
        if (kills.has(i)) add(tags, el('span', 'tag bad', kills.get(i).timeout ? 'timed out' : 'crashed'));
        if (splitOf.has(i + ':' + R.lane[r])) add(tags, el('span', 'tag', 'split after'));
        add(tr, add(el('td'), link('#' + I.n[i], 'invocation=' + I.n[i])), add(el('td'), el('span', 'sw r-' + cssWord(cat)), resultWord(cat)),
          el('td', null, outcomeIn(i, r, reported.get(i))), tags, el('td', 'num', I.ms[i]));
        add(t, tr);
      });
      add(p, el('b', null, 'Its path: ' + fmt(list.length) + ' invocation' + (list.length === 1 ? '' : 's')), t);
      view.sel = -1;
      view.hl = new Set(list);
      if (list.length) {
        var lane = R.lane[r], pos = visibleLanes().indexOf(lane);
        if (pos >= 0) view.lanePage = Math.floor(pos / LANES_PER_PAGE);
        showRange(list[0], list[list.length - 1]);
      } else renderTimeline();
    }

    function route() {
      var h = decodeURIComponent(location.hash.slice(1));
      if (h.indexOf('record=') === 0) {
        var r = idIndex.get(h.slice(7));
        if (r !== undefined) showRecord(r);
      } else if (h.indexOf('invocation=') === 0) {
        var i = invByN.get(+h.slice(11));
        if (i !== undefined) showInvocation(i);
      }
    }

    drawHeader();
    drawInvariants();
    drawCounts();
    drawTimeline();
    renderTimeline();
    drawRecords();
    renderRecords();
    drawLists();
    window.addEventListener('hashchange', route);
    window.addEventListener('keydown', function (e) { if (e.key === 'Escape' && !panel.hidden) closePanel(); });
    var resize = 0;
    window.addEventListener('resize', function () { clearTimeout(resize); resize = setTimeout(renderTimeline, 150); });
    route();
  }
})();
