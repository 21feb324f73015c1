/* The flake dashboard: drawn from the JSON block with DOM calls only. */
(() => {
  const {el, svg, data, percent, plural, badge, table, append, clear} = FW;
  const d = data();
  const STATES = ["broken", "flaky", "new", "healthy", "quarantined"];
  const CELL = {p: "passed", x: "flaky (failed, then passed)", f: "failed every attempt",
    q: "failed while quarantined", s: "skipped", n: "not run"};
  const byId = new Map(d.tests.map((t, i) => [t.i, i]));

  function header() {
    const w = d.window;
    append(document.getElementById("head"), [
      el("h1", {}, "Flake dashboard", d.repository ? ": " + d.repository : ""),
      el("div", {cls: "meta"},
        el("span", {}, "branch ", el("b", {text: d.branch || "(none)"})),
        el("span", {}, "window ", el("b", {text: w.description})),
        el("span", {}, "history ", el("b", {text: plural(d.counts.runs, "run") + ", " + plural(d.counts.tests, "test")})),
        el("span", {}, "built ", el("b", {text: d.generated_at}))),
    ]);
  }

  function overview() {
    const count = (state) => d.tests.filter((t) => t.state === state).length;
    const quarantined = d.tests.filter((t) => t.quarantined).length;
    const wide = d.groups.filter((g) => g.tests_total > 1).length;
    const cards = [["runs scored", d.window.runs, ""], ["flaky tests", count("flaky"), "o-flaky"],
      ["broken tests", count("broken"), "o-failed"], ["quarantined now", quarantined, "o-quarantined"],
      ["failure groups", d.groups.length, ""], ["groups over 2+ tests", wide, "o-error"]];
    const box = el("div", {cls: "cards"});
    for (const [key, value, cls] of cards) {
      box.appendChild(el("div", {cls: "card"}, el("span", {cls: "n " + cls, text: String(value)}), el("span", {cls: "k", text: key})));
    }
    document.getElementById("overview").appendChild(box);
  }

  function chart() {
    const weeks = d.weeks;
    const host = document.getElementById("chart");
    if (!weeks.length) { host.appendChild(el("p", {cls: "muted", text: "No runs with a start time yet."})); return; }
    const W = 900, H = 200, left = 34, bottom = 22, top = 8;
    const max = Math.max(1, ...weeks.map((w) => w.runs));
    const step = (W - left) / weeks.length;
    const bar = Math.min(36, Math.max(2, step * 0.7));
    const y = (v) => top + (H - top - bottom) * (1 - v / max);
    const chartSvg = svg("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, cls: "svgchart", role: "img",
      "aria-label": "runs per week, and the runs with a flaky test"});
    chartSvg.setAttribute("class", "svgchart");
    chartSvg.appendChild(svg("line", {x1: left, x2: W, y1: H - bottom, y2: H - bottom, class: "chart-axis"}));
    for (const v of [0, Math.round(max / 2), max]) {
      chartSvg.appendChild(svg("text", {x: left - 4, y: y(v) + 4, "text-anchor": "end"}, String(v)));
    }
    const every = Math.max(1, Math.ceil(weeks.length / 12));
    weeks.forEach((w, n) => {
      const x = left + n * step + (step - bar) / 2;
      const g = svg("g", {class: "week"});
      g.appendChild(svg("title", {}, "week of " + w.week + ": " + plural(w.runs, "run") + ", " +
        w.flaky_runs + " with a flaky test (" + plural(w.flaky_tests, "flaky test") + "), " + w.fell_over + " where the suite fell over"));
      g.appendChild(svg("rect", {x, width: bar, y: y(w.runs), height: Math.max(0, y(0) - y(w.runs)), class: "chart-runs"}));
      g.appendChild(svg("rect", {x, width: bar, y: y(w.flaky_runs), height: Math.max(0, y(0) - y(w.flaky_runs)), class: "chart-flaky"}));
      if (w.fell_over) g.appendChild(svg("rect", {x, width: bar, y: y(w.fell_over) , height: Math.max(0, y(0) - y(w.fell_over)), class: "chart-fell"}));
      chartSvg.appendChild(g);
      if (n % every === 0) chartSvg.appendChild(svg("text", {x: x + bar / 2, y: H - 6, "text-anchor": "middle"}, w.week.slice(5)));
    });
    host.appendChild(chartSvg);
    host.appendChild(el("div", {cls: "legend"}, el("span", {cls: "l-runs", text: "runs"}),
      el("span", {cls: "l-flaky", text: "runs with a flaky test"}), el("span", {cls: "l-fell", text: "runs where the suite fell over (not scored)"})));
  }

  function sparkline(trend, width, height) {
    const w = width || 90, h = height || 20;
    const s = svg("svg", {width: w, height: h, viewBox: "0 0 " + w + " " + h, class: "spark", role: "img"});
    const points = [];
    trend.forEach(([fails, runs], n) => {
      if (!runs) return;
      const x = trend.length > 1 ? 2 + (w - 4) * n / (trend.length - 1) : w / 2;
      points.push([x, h - 2 - (h - 4) * (fails / runs), fails, runs, n]);
    });
    s.appendChild(svg("line", {x1: 0, x2: w, y1: h - 2, y2: h - 2}));
    s.appendChild(svg("title", {}, "first-attempt failure rate per week, oldest first: " +
      trend.map(([f, r]) => r ? f + "/" + r : "-").join(", ")));
    if (points.length > 1) s.appendChild(svg("polyline", {points: points.map((p) => p[0].toFixed(1) + "," + p[1].toFixed(1)).join(" ")}));
    for (const p of points) if (p[2]) s.appendChild(svg("circle", {cx: p[0].toFixed(1), cy: p[1].toFixed(1), r: 1.8}));
    return s;
  }

  function strip(letters, big, last) {
    const runs = d.strip_runs;
    const start = last ? Math.max(0, letters.length - last) : 0;
    const box = el("span", {cls: "strip" + (big ? " big" : ""), label: "runs, oldest first"});
    for (let n = start; n < letters.length; n++) {
      const run = runs[n] || {};
      const text = (run.at || "") + (run.commit ? " " + run.commit : "") + ": " + CELL[letters[n]] +
        (run.fell_over ? " (the suite fell over)" : "");
      const cell = big && run.url ? el("a", {href: run.url, title: text}) : el("span", {title: text});
      cell.className = "c-" + letters[n];
      box.appendChild(cell);
    }
    return box;
  }

  function panel(t, i, td) {
    const box = el("div", {cls: "panel"});
    box.appendChild(el("h3", {}, el("code", {text: t.i})));
    const kv = el("dl", {cls: "kv"});
    const add = (k, ...v) => { kv.appendChild(el("dt", {text: k})); kv.appendChild(el("dd", {}, ...v)); };
    if (t.state) {
      add("state", badge(t.state));
      add("failure rate", percent(t.rate) + " of first attempts (" + t.fa + " of " + t.runs + " runs), 95% interval " +
        percent(t.lo) + " to " + percent(t.hi) + (t.rose ? "; higher than the window before" : ""));
      add("flaky runs", String(t.flaky) + " failed, then passed; " + t.hard + " failed every attempt");
      add("pull requests", t.pr[1] ? t.pr[0] + " of " + t.pr[1] + " runs failed a first attempt (scored apart)" : "none in the window");
      add("seen", (t.first_seen || "?") + " to " + (t.last_seen || "?"));
    }
    add("quarantine", t.quarantined ? el("span", {}, badge("quarantined"), " for the last " + plural(t.quarantined.runs, "run") + ", since " + t.quarantined.since)
      : "not quarantined in the newest run");
    const verdicts = (d.verdicts || {})[t.i] || [];
    add("stress verdicts", verdicts.length ? el("ul", {cls: "notes"}, verdicts.map((v) => el("li", {},
      el("b", {text: v.verdict}), " (" + v.failures + " of " + v.runs + " runs failed; quarantine " +
      (v.allowed ? "allowed" : "refused") + ") " + v.at + ": " + v.reason,
      (v.where || []).length ? el("ul", {cls: "notes"}, v.where.map((w) => el("li", {},
        "where: ", el("code", {text: w.at}), " " + w.text))) : ""))) : "none known");
    if (t.issue) add("flake issue", el("a", {href: t.issue, text: "search the repository's flaky-test issues"}));
    box.appendChild(kv);
    box.appendChild(el("h3", {text: "Last " + plural(t.strip.length, "run") + " of " + (d.branch || "the branch") + ", oldest first"}));
    box.appendChild(strip(t.strip, true));
    box.appendChild(el("h3", {text: "First-attempt failure rate per week"}));
    box.appendChild(sparkline(t.trend, 360, 60));
    box.appendChild(el("div", {cls: "muted", text: d.trend_weeks.length ? "weeks of " + d.trend_weeks[0] + " to " + d.trend_weeks[d.trend_weeks.length - 1] : ""}));
    const mine = [];
    d.groups.forEach((g, n) => { for (const [id, count] of g.tests) if (id === t.i) mine.push([n, count]); });
    box.appendChild(el("h3", {text: "How it fails"}));
    if (!mine.length) box.appendChild(el("p", {cls: "muted", text: "No failure text kept for this test (runs ingested before the history kept it, or none failed)."}));
    else box.appendChild(el("ul", {cls: "notes"}, mine.map(([n, count]) => el("li", {},
      el("a", {href: "#group-" + n, text: d.groups[n].key}), " · " + plural(count, "failure") +
      (d.groups[n].tests_total > 1 ? " · shared with " + plural(d.groups[n].tests_total - 1, "other test") : "")))));
    td.appendChild(box);
  }

  function testsTable() {
    const rows = d.tests.map((t) => Object.assign({kind: t.quarantined ? "quarantined" : (t.state || "healthy")}, t));
    document.getElementById("tests-note").textContent = rows.length ?
      "Tests that failed a first attempt in the window (" + d.window.description + "), flakiest first; the rate is first-attempt failures over runs, with its exact 95% interval." :
      "No test failed a first attempt in the window (" + d.window.description + ").";
    const tbl = table({
      rows, noun: "test", page: 200, kinds: STATES,
      columnsId: "columns", bodyId: "rows", moreId: "more", shownId: "shown", filterId: "filter", chipsId: "states",
      text: (t) => t.i, kind: (t) => t.kind, open: panel,
      columns: [
        {key: "state", label: "State", sort: (t) => STATES.indexOf(t.kind), cell: (t) => badge(t.kind)},
        {key: "i", label: "Test", sort: (t) => t.i, cell: (t, i, toggle) => {
          const b = el("button", {cls: "test-name", type: "button", text: t.i, title: "show its runs, trend and failures"});
          b.addEventListener("click", () => { history.replaceState(null, "", "#test-" + i); toggle(); });
          return b;
        }},
        {key: "rate", label: "Rate", num: true, firstDir: -1, sort: (t) => t.rate || 0, cell: (t) => t.state ? percent(t.rate) : "-"},
        {key: "ci", label: "95% interval", num: true, firstDir: -1, sort: (t) => t.hi || 0,
          cell: (t) => t.state ? percent(t.lo) + " – " + percent(t.hi) : "-"},
        {key: "flaky", label: "Flaky", num: true, firstDir: -1, sort: (t) => t.flaky || 0, cell: (t) => String(t.flaky || 0)},
        {key: "hard", label: "Hard", num: true, firstDir: -1, sort: (t) => t.hard || 0, cell: (t) => String(t.hard || 0)},
        {key: "runs", label: "Runs", num: true, firstDir: -1, sort: (t) => t.runs || 0, cell: (t) => String(t.runs || 0)},
        {key: "trend", label: "Trend", cell: (t) => sparkline(t.trend)},
        {key: "strip", label: "Last 30 runs", cell: (t) => strip(t.strip, false, 30)},
      ],
    });
    document.documentElement.dataset.firstTableRender = performance.now().toFixed(1);
    const fromHash = () => {
      const m = /^#test-(\d+)$/.exec(location.hash);
      if (m && Number(m[1]) < rows.length) tbl.reveal(Number(m[1]));
    };
    window.addEventListener("hashchange", fromHash);
    fromHash();
  }

  function groups() {
    const host = document.getElementById("groups");
    document.getElementById("groups-note").textContent = d.groups.length ?
      "Failures of every test in the history, grouped by signature: the exception, its message with numbers, ids, paths and temporary names masked, and the innermost frame of the project's code. One cause, one group, every test it hits." :
      "No failure text in the history yet: runs ingested by this version keep it.";
    d.groups.forEach((g, n) => {
      const details = el("details", {cls: "group", id: "group-" + n, open: n < 3 && g.tests_total > 1});
      details.appendChild(el("summary", {}, el("b", {text: plural(g.tests_total, "test")}), " · " +
        plural(g.failures, "failure") + " in " + plural(g.runs, "run") + " · " + (g.trend_text ? g.trend_text + " · " : "") +
        (g.environment ? "the environment · " : ""), el("span", {cls: "sig", text: g.key})));
      const body = el("div");
      body.appendChild(el("div", {cls: "meta"}, el("span", {}, "first ", el("b", {text: g.first || "?"})),
        el("span", {}, "last ", el("b", {text: g.last || "?"})),
        g.frame ? el("span", {}, "frame ", el("code", {text: g.frame})) : null));
      body.appendChild(el("ul", {cls: "notes"}, g.tests.map(([id, count]) => {
        const at = byId.get(id);
        const name = at === undefined ? el("code", {text: id}) : el("a", {href: "#test-" + at, text: id});
        return el("li", {}, name, " · " + plural(count, "failure"));
      }), g.tests_total > g.tests.length ? el("li", {cls: "muted", text: "and " + (g.tests_total - g.tests.length) + " more tests"}) : null));
      if (g.messages.length) {
        body.appendChild(el("div", {cls: "muted", text: "as the failures read:"}));
        body.appendChild(el("ul", {cls: "notes"}, g.messages.map((m) => el("li", {}, el("code", {text: m})))));
      }
      if (g.recent.length) {
        body.appendChild(el("div", {cls: "meta"}, "recent runs: ", g.recent.map(([at, url]) => url ?
          el("a", {href: url, text: at}) : el("span", {text: at}))));
      }
      body.appendChild(el("details", {}, el("summary", {text: "example traceback"}), el("pre", {text: g.example})));
      details.appendChild(body);
      host.appendChild(details);
    });
  }

  header();
  overview();
  chart();
  testsTable();
  groups();
  document.body.appendChild(el("footer", {text: "flakewarden dashboard: " + plural(d.failures_kept, "failure") +
    " kept in the history; built " + d.generated_at + "."}));
})();
