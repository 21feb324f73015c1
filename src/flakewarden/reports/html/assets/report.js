/* report.html: the run's evidence, drawn from the JSON block with DOM calls only. */
(() => {
  const {el, data, seconds, plural, badge, dots, table, append} = FW;
  const d = data();
  const run = d.run;
  const ctx = run.context || {};
  const KINDS = ["flaky", "failed", "error", "quarantined", "passed", "skipped"];
  const WORDS = {p: "passed", f: "failed", e: "error", s: "skipped", c: "crashed"};

  function header() {
    const t = d.totals;
    const notes = [];
    if (t.flaky) notes.push(t.flaky + " flaky");
    if (t.failed + t.error) notes.push((t.failed + t.error) + " failed");
    if (t.quarantined) notes.push(t.quarantined + " quarantined");
    const head = document.getElementById("head");
    append(head, [
      el("h1", {},
        "flakewarden: ",
        el("span", {cls: "state-" + d.state.replace(/ /g, "-"), text: d.state}),
        notes.length ? " (" + notes.join(", ") + ")" : ""),
      el("div", {cls: "meta"},
        meta("started", run.started_at), meta("took", seconds(run.duration)),
        meta("exit code", String(run.exit_code)),
        ctx.repository ? meta("repository", ctx.repository) : null,
        ctx.branch ? meta("branch", ctx.branch) : null,
        ctx.commit ? metaLink("commit", ctx.commit.slice(0, 12), ctx.commit_url) : null,
        ctx.pr_number ? metaLink("pull request", "#" + ctx.pr_number, ctx.pr_url) : null,
        ctx.run_url ? metaLink("workflow run", (ctx.workflow || "run") + " " + (ctx.run_id || ""), ctx.run_url) : null,
        ctx.job_name || ctx.job ? meta("job", ctx.job_name || ctx.job) : null,
        run.shard ? meta("shard", run.shard) : null,
        ctx.python ? meta("python", ctx.python) : null,
        ctx.os ? meta("os", ctx.os) : null,
        meta("flakewarden", run.version)),
    ]);
  }

  function meta(key, value) {
    return el("span", {}, key + " ", el("b", {text: value}));
  }

  function metaLink(key, text, url) {
    return el("span", {}, key + " ", url ? el("a", {href: url, text}) : el("b", {text}));
  }

  // Why the build is red, first: the tests that failed every attempt, linked to their evidence.
  function problems(rows) {
    const section = document.getElementById("problems");
    const items = [];
    const failing = [];
    rows.forEach((row, i) => { if (row.o === "failed" || row.o === "error") failing.push(i); });
    if (failing.length) {
      items.push(el("li", {}, el("b", {text: plural(failing.length, "test") + " failed every attempt: "}),
        failing.slice(0, 10).map((i, n) => [n ? ", " : "", el("a", {href: "#test-" + i, text: rows[i].i})]),
        failing.length > 10 ? " and " + (failing.length - 10) + " more" : ""));
    }
    if (run.cutoff) items.push(el("li", {text: "More than " + run.max_failures + " tests failed, so none were rerun (--max-failures)."}));
    if (run.interrupted) items.push(el("li", {text: "The run was interrupted."}));
    for (const p of d.problems) items.push(el("li", {text: p}));
    for (const a of d.attempts) {
      if (a.crash) items.push(el("li", {text: "Attempt " + a.n + " crashed: " + a.crash}));
      for (const p of a.problems) items.push(el("li", {text: "Attempt " + a.n + ": " + p}));
    }
    if (d.coverage && d.coverage.gate) items.push(el("li", {text: "Coverage gate: " + d.coverage.gate}));
    if (!items.length) return;
    section.hidden = false;
    section.appendChild(el("div", {cls: "alarm"}, el("ul", {}, items)));
  }

  function totals() {
    const t = d.totals;
    const cards = [["tests", t.tests, ""]];
    for (const kind of KINDS) cards.push([kind, t[kind], "o-" + kind]);
    if (d.coverage && d.coverage.percent !== null) cards.push(["coverage", d.coverage.percent + "%", ""]);
    cards.push(["attempts", d.attempts.length, ""]);
    const box = el("div", {cls: "cards"});
    for (const [key, value, cls] of cards) {
      box.appendChild(el("div", {cls: "card"}, el("span", {cls: "n " + cls, text: String(value)}),
        el("span", {cls: "k", text: key})));
    }
    document.getElementById("totals").appendChild(box);
  }

  // One thing that failed several tests, said once, before the tests one by one.
  function causes() {
    if (!d.causes.length) return;
    const section = document.getElementById("causes");
    section.hidden = false;
    section.appendChild(el("h2", {text: "Causes"}));
    section.appendChild(el("ul", {}, d.causes.map((c) => el("li", {},
      el("b", {text: c.text}), " (cause ", el("code", {text: c.id}), "): ",
      c.tests.join(", ") + (c.more ? " and " + c.more + " more" : "") + "."))));
  }

  function pre(title, text, open) {
    return el("details", {open}, el("summary", {text: title}), el("pre", {text}));
  }

  function attemptBox(a) {
    const failed = a.o === "failed" || a.o === "error" || a.o === "crashed";
    const box = el("div", {cls: "attempt " + (failed ? "failed" : a.o === "passed" ? "passed" : "")},
      el("h4", {}, "Attempt " + a.n + " ", badge(a.o), " ", el("span", {cls: "muted", text: seconds(a.d) + (a.phase ? " · in " + a.phase : "")})));
    if (a.m) box.appendChild(el("div", {cls: "m", text: a.m}));
    if (a.raised) box.appendChild(el("div", {cls: "muted", text: "raised " + a.raised}));
    if (a.sub) {
      box.appendChild(el("ul", {cls: "notes"}, a.sub.map(([name, msg]) => el("li", {}, el("code", {text: name}), " " + msg))));
    }
    if (a.retries) box.appendChild(el("ul", {cls: "notes"}, a.retries.map((r) => el("li", {text: "retried inside: " + r}))));
    if (a.tb) box.appendChild(pre("Traceback", a.tb, true));
    if (a.out) box.appendChild(pre("Captured stdout (" + a.out.length.toLocaleString("en") + " chars)", a.out, failed && a.out.length < 4000));
    if (a.err) box.appendChild(pre("Captured stderr (" + a.err.length.toLocaleString("en") + " chars)", a.err, failed && a.err.length < 4000));
    if (!a.m && !a.tb && !a.out && !a.err) box.appendChild(el("div", {cls: "muted", text: "nothing captured"}));
    return box;
  }

  function detail(row, i, td) {
    const info = d.details[String(i)] || {attempts: [], notes: []};
    const where = (row.f || row.i.split("::")[0]) + (row.l !== undefined ? ":" + row.l : "");
    td.appendChild(el("div", {cls: "meta"}, el("span", {}, "id ", el("code", {text: row.i})),
      el("span", {}, "location ", el("code", {text: where})),
      el("span", {}, "attempts ", el("b", {text: row.w.split("").map((c) => WORDS[c] || c).join(", ")}))));
    if (info.notes.length) td.appendChild(el("ul", {cls: "notes"}, info.notes.map((n) => el("li", {text: n}))));
    if (info.attempts.length) td.appendChild(el("div", {cls: "attempts"}, info.attempts.map(attemptBox)));
    else if (row.m) td.appendChild(el("div", {cls: "m", text: row.m}));
  }

  function attemptsCell(row) {
    const failed = row.w.split("").filter((c) => c === "f" || c === "e" || c === "c").length;
    return el("span", {cls: "nowrap"}, dots(row.w), " ", el("span", {cls: "muted", text: failed ? failed + " of " + row.w.length + " failed" : String(row.w.length)}));
  }

  const RANK = {flaky: 0, failed: 1, error: 2, quarantined: 3, passed: 4, skipped: 5};
  function testsTable() {
    const rows = d.tests;
    problems(rows);
    const t = table({
      rows, noun: "test", page: 500, kinds: KINDS,
      columnsId: "columns", bodyId: "rows", moreId: "more", shownId: "shown", filterId: "filter", chipsId: "outcomes",
      text: (row) => row.i + "\n" + (row.m || ""),
      kind: (row) => row.o,
      rowClass: (row) => "row-" + row.o,
      open: detail,
      columns: [
        {key: "o", label: "Outcome", sort: (row) => RANK[row.o] * 10 + (row.q ? 0 : 1),
          cell: (row) => [badge(row.o), row.q && row.o !== "quarantined" ? [" ", badge("quarantined")] : null]},
        {key: "i", label: "Test", sort: (row) => row.i,
          cell: (row, i, toggle) => {
            const button = el("button", {cls: "test-name", type: "button", text: row.i, title: "show the attempts"});
            button.addEventListener("click", () => { history.replaceState(null, "", "#test-" + i); toggle(); });
            return button;
          }},
        {key: "w", label: "Attempts", sort: (row) => row.w.length * 100 + row.w.replace(/[ps]/g, "").length, firstDir: -1,
          cell: attemptsCell},
        {key: "d", label: "Duration", num: true, sort: (row) => row.d, firstDir: -1, cell: (row) => seconds(row.d)},
        {key: "m", label: "First failure", sort: (row) => row.m || "", cell: (row) => el("span", {cls: "msg", text: row.m || ""})},
      ],
    });
    document.documentElement.dataset.firstTableRender = performance.now().toFixed(1);
    const fromHash = () => {
      const m = /^#test-(\d+)$/.exec(location.hash);
      if (m && Number(m[1]) < rows.length) t.reveal(Number(m[1]));
    };
    window.addEventListener("hashchange", fromHash);
    fromHash();
    const lim = d.limits;
    if (lim.clipped || lim.dropped) {
      document.getElementById("tests-section").appendChild(el("p", {cls: "muted",
        text: "To keep this page small, " + plural(lim.clipped, "long text") + " were shortened and " +
          plural(lim.dropped, "text") + " left out; each says where the whole text is (report.json, attempts/)."}));
    }
  }

  function coverage() {
    const c = d.coverage;
    if (!c) return;
    const section = document.getElementById("coverage");
    section.hidden = false;
    section.appendChild(el("h2", {text: "Coverage"}));
    section.appendChild(el("p", {},
      c.percent !== null ? ["Total ", el("b", {text: c.percent + "%"})] : "No total was measured",
      c.fail_under !== null ? " (fail under " + c.fail_under + "%)" : "",
      c.branch ? ", branch coverage on" : "",
      c.xml ? [". Per file, from ", el("a", {href: c.xml, text: c.xml})] : "", "."));
    for (const e of c.errors) section.appendChild(el("p", {cls: "notice", text: e}));
    if (!c.files.length) return;
    const body = el("tbody");
    for (const [path, statements, missing, lineRate, branchRate, lines] of c.files) {
      const bar = el("span", {cls: "bar"}, el("span"));
      bar.firstChild.style.width = Math.max(0, Math.min(100, lineRate)) + "%";
      body.appendChild(el("tr", {}, el("td", {}, el("code", {text: path})),
        el("td", {cls: "num", text: String(statements)}), el("td", {cls: "num", text: String(missing)}),
        el("td", {cls: "num"}, bar, " " + lineRate.toFixed(1) + "%"),
        c.branch ? el("td", {cls: "num", text: branchRate.toFixed(1) + "%"}) : null,
        el("td", {cls: "msg mono", text: lines})));
    }
    const head = el("tr", {}, el("th", {text: "File"}), el("th", {cls: "num", text: "Statements"}),
      el("th", {cls: "num", text: "Missing"}), el("th", {cls: "num", text: "Lines"}),
      c.branch ? el("th", {cls: "num", text: "Branches"}) : null, el("th", {text: "Missing lines"}));
    section.appendChild(el("details", {open: c.files.length <= 50},
      el("summary", {text: plural(c.files.length, "file") + ", least covered first" +
        (c.files_left_out ? " (" + c.files_left_out + " best covered left out)" : "")}),
      el("table", {}, el("thead", {}, head), body)));
  }

  function commands() {
    const section = document.getElementById("commands");
    section.appendChild(el("h2", {text: "Commands"}));
    section.appendChild(el("p", {}, "The test command: ", el("code", {text: run.command}),
      run.rootdir ? [" in ", el("code", {text: run.rootdir})] : "",
      ". Failed tests rerun up to " + run.reruns + " times, each in a fresh process."));
    const body = el("tbody");
    for (const a of d.attempts) {
      body.appendChild(el("tr", {},
        el("td", {cls: "num", text: String(a.n)}),
        el("td", {}, el("pre", {text: a.command}),
          a.continuations.length ? el("ul", {cls: "notes"}, a.continuations.map((c) => el("li", {}, "continued: ", el("code", {text: c})))) : null),
        el("td", {text: a.reason}),
        el("td", {cls: "num", text: a.exit === null ? "-" : String(a.exit)}),
        el("td", {cls: "num", text: seconds(a.d)}),
        el("td", {}, a.dir ? el("a", {href: a.dir + "/output.log", text: a.dir + "/"}) : "")));
    }
    section.appendChild(el("table", {},
      el("thead", {}, el("tr", {}, ["Attempt", "Command", "Why", "Exit", "Took", "Raw output"].map((h) => el("th", {text: h})))),
      body));
    if (run.merged_from.length) section.appendChild(el("p", {cls: "muted", text: "Merged from: " + run.merged_from.join(", ")}));
    if (run.junit_from.length) section.appendChild(el("p", {cls: "muted", text: "Read from JUnit XML: " + run.junit_from.join(", ")}));
  }

  header();
  totals();
  causes();
  testsTable();
  coverage();
  commands();
  document.body.appendChild(el("footer", {}, "report.json, junit.xml and summary.md beside this page hold the same evidence. ",
    el("a", {href: "report.json", text: "report.json"})));
})();
