"use strict";
/* What every flakewarden page shares: elements built with DOM calls (text is always
   textContent, never markup), safe links, formats, and a filterable, sortable table. */
const FW = (() => {
  const SVG = "http://www.w3.org/2000/svg";

  function safeHref(url) {
    const text = String(url);
    if (/^https:\/\/[^\s]+$/.test(text)) return text;
    if (/^#[A-Za-z0-9_-]+$/.test(text)) return text;
    // A relative path inside the report (attempts/2/output.log): no scheme, not absolute.
    if (/^[A-Za-z0-9._-][^:\s]*$/.test(text) && !text.startsWith("//")) return text;
    return null;
  }

  function append(node, children) {
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      if (Array.isArray(child)) append(node, child);
      else if (child instanceof Node) node.appendChild(child);
      else node.appendChild(document.createTextNode(String(child)));
    }
    return node;
  }

  // el("a", {href: url, cls: "x", text: "t"}, ...children): attributes from a fixed list only.
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    const p = props || {};
    if (p.cls) node.className = p.cls;
    if (p.text !== undefined) node.textContent = String(p.text);
    if (p.title !== undefined) node.title = String(p.title);
    if (p.id) node.id = p.id;
    if (p.href !== undefined) {
      const href = safeHref(p.href);
      if (href !== null) {
        node.setAttribute("href", href);
        if (href.startsWith("https://")) node.setAttribute("rel", "noopener noreferrer");
      }
    }
    if (p.type) node.setAttribute("type", p.type);
    if (p.colspan) node.colSpan = p.colspan;
    if (p.pressed !== undefined) node.setAttribute("aria-pressed", p.pressed ? "true" : "false");
    if (p.label) node.setAttribute("aria-label", String(p.label));
    if (p.open) node.open = true;
    if (p.onclick) node.addEventListener("click", p.onclick);
    return append(node, children);
  }

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (/^on/i.test(key) || key === "href" || key === "style") continue;
      node.setAttribute(key, String(value));
    }
    for (const child of children) {
      if (child instanceof Node) node.appendChild(child);
      else if (child !== null && child !== undefined) node.appendChild(document.createTextNode(String(child)));
    }
    return node;
  }

  function data() {
    return JSON.parse(document.getElementById("fw-data").textContent);
  }

  function seconds(s) {
    if (s === null || s === undefined) return "";
    if (s < 1) return (s * 1000).toFixed(0) + " ms";
    if (s < 120) return s.toFixed(2) + " s";
    const m = Math.floor(s / 60);
    return m + " min " + Math.round(s - m * 60) + " s";
  }

  function percent(rate, digits) {
    return (rate * 100).toFixed(digits === undefined ? 1 : digits) + "%";
  }

  function plural(n, word, many) {
    return n.toLocaleString("en") + " " + (n === 1 ? word : (many || word + "s"));
  }

  function badge(outcome, text) {
    return el("span", {cls: "badge o-" + outcome, text: text || outcome});
  }

  function dots(word) {
    return el("span", {cls: "dots", title: word.split("").join(" ")},
      word.split("").map((letter) => el("span", {cls: "dot dot-" + letter})));
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  /* A table over `rows` (plain objects): columns [{key, label, num, sort(row), cell(row, i)}],
     a text filter over `text(row)`, outcome chips over `kind(row)`, a page of `page` rows
     at a time, and `open(row, index, td)` for the detail row a click on `toggle` shows. */
  function table(opts) {
    const rows = opts.rows;
    const page = opts.page || 500;
    const texts = rows.map((row) => opts.text(row).toLowerCase());
    const hidden = new Set(opts.hiddenKinds || []);
    let order = rows.map((_, i) => i);
    let sortKey = null;
    let sortDir = 1;
    let filtered = order;
    let limit = page;
    const opened = new Set();
    const head = clear(document.getElementById(opts.columnsId));
    const body = document.getElementById(opts.bodyId);
    const more = document.getElementById(opts.moreId);
    const shown = document.getElementById(opts.shownId);
    const input = document.getElementById(opts.filterId);
    const buttons = [];

    for (const column of opts.columns) {
      const th = el("th", {cls: column.num ? "num" : ""});
      if (column.sort) {
        const button = el("button", {type: "button", text: column.label});
        button.addEventListener("click", () => sortBy(column, button));
        buttons.push(button);
        th.appendChild(button);
      } else {
        th.textContent = column.label;
      }
      head.appendChild(th);
    }

    function sortBy(column, button) {
      sortDir = sortKey === column.key ? -sortDir : (column.firstDir || 1);
      sortKey = column.key;
      for (const b of buttons) b.removeAttribute("aria-sort");
      button.setAttribute("aria-sort", sortDir > 0 ? "ascending" : "descending");
      const keys = rows.map(column.sort);
      order = rows.map((_, i) => i).sort((a, b) => {
        const x = keys[a], y = keys[b];
        return (x < y ? -1 : x > y ? 1 : a - b) * sortDir;
      });
      apply();
    }

    function apply() {
      const needle = input.value.trim().toLowerCase();
      filtered = order.filter((i) => !hidden.has(opts.kind(rows[i])) &&
        (!needle || texts[i].includes(needle)));
      limit = page;
      render();
    }

    function toggle(i, tr) {
      const next = tr.nextSibling;
      if (next && next.classList && next.classList.contains("detail")) {
        next.remove();
        opened.delete(i);
        return;
      }
      const td = el("td", {colspan: opts.columns.length});
      const detail = el("tr", {cls: "detail"}, td);
      opts.open(rows[i], i, td);
      tr.after(detail);
      opened.add(i);
    }

    function render() {
      clear(body);
      const fragment = document.createDocumentFragment();
      const count = Math.min(limit, filtered.length);
      for (let n = 0; n < count; n++) {
        const i = filtered[n];
        const tr = el("tr", {cls: opts.rowClass ? opts.rowClass(rows[i]) : ""});
        tr.dataset.index = String(i);
        for (const column of opts.columns) {
          const td = el("td", {cls: column.num ? "num" : ""});
          append(td, [column.cell(rows[i], i, () => toggle(i, tr))]);
          tr.appendChild(td);
        }
        fragment.appendChild(tr);
        if (opened.has(i)) {
          const td = el("td", {colspan: opts.columns.length});
          opts.open(rows[i], i, td);
          fragment.appendChild(el("tr", {cls: "detail"}, td));
        }
      }
      body.appendChild(fragment);
      shown.textContent = count === rows.length ? plural(rows.length, opts.noun) :
        count.toLocaleString("en") + " of " + filtered.length.toLocaleString("en") + " shown (" +
        plural(rows.length, opts.noun) + " in all)";
      more.hidden = count >= filtered.length;
      more.textContent = "Show " + Math.min(page, filtered.length - count).toLocaleString("en") + " more";
    }

    more.addEventListener("click", () => { limit += page; render(); });
    let timer = null;
    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(apply, rows.length > 2000 ? 120 : 0);
    });

    const chips = opts.chipsId ? document.getElementById(opts.chipsId) : null;
    if (chips) {
      const counts = {};
      for (const row of rows) counts[opts.kind(row)] = (counts[opts.kind(row)] || 0) + 1;
      for (const kind of opts.kinds) {
        if (!counts[kind]) continue;
        const chip = el("button", {type: "button", cls: "chip o-" + kind, pressed: !hidden.has(kind),
          text: kind + " " + counts[kind].toLocaleString("en")});
        chip.dataset.kind = kind;
        chip.addEventListener("click", () => {
          if (hidden.has(kind)) hidden.delete(kind); else hidden.add(kind);
          chip.setAttribute("aria-pressed", hidden.has(kind) ? "false" : "true");
          apply();
        });
        chips.appendChild(chip);
      }
    }

    // Open row `i`: make it visible whatever the filter, show its detail, scroll to it.
    function reveal(i) {
      if (!filtered.includes(i)) {
        input.value = "";
        hidden.clear();
        if (chips) for (const chip of chips.children) chip.setAttribute("aria-pressed", "true");
        filtered = order.slice();
      }
      const at = filtered.indexOf(i);
      if (at >= limit) limit = at + 1;
      opened.add(i);
      render();
      const tr = body.querySelector('tr[data-index="' + i + '"]');
      if (tr) tr.scrollIntoView({block: "start"});
    }

    apply();
    return {reveal};
  }

  return {el, svg, data, seconds, percent, plural, badge, dots, clear, table, safeHref, append};
})();
