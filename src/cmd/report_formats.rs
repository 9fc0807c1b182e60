//! `report`'s other renderings of the same [`ReportBody`]: markdown (for
//! `$GITHUB_STEP_SUMMARY`), JUnit XML (one test case per iteration, for CI test tabs)
//! and one self-contained HTML page (the |F_i| trajectory and spend as inline SVG).

use crate::cmd::bodies::{IterationRow, ReportBody};

fn verdict(r: &IterationRow) -> &str {
    r.verdict.as_deref().unwrap_or("-")
}

fn failing(r: &IterationRow) -> Option<usize> {
    r.check.as_ref().and_then(|c| c.failing)
}

fn names(r: &IterationRow) -> Vec<String> {
    r.check
        .as_ref()
        .and_then(|c| c.failing_names.clone())
        .unwrap_or_default()
}

fn usd(r: &IterationRow) -> String {
    match (r.cost_usd, &r.exec) {
        (Some(c), _) => format!("${c:.4}"),
        (None, Some(e)) if !e.command.is_empty() => "unknown".into(),
        _ => "-".into(),
    }
}

/// The run as GitHub-flavoured markdown.
#[must_use]
pub fn markdown(b: &ReportBody) -> String {
    let f = &b.run;
    let mut s = format!("## loopexec run `{}`\n\n", b.run_id);
    match (&f.halt_reason, f.exit_code) {
        (Some(r), Some(c)) => s.push_str(&format!(
            "**Halted: `{r}`** (exit {c}, {}) at iteration {}",
            f.halt_class.as_deref().unwrap_or("-"),
            shown(f.iteration)
        )),
        _ => s.push_str(&format!("**Running** (iteration {})", shown(f.iteration))),
    }
    if let Some(d) = f.duration_ms {
        s.push_str(&format!(" after {:.1}s", d as f64 / 1000.0));
    }
    s.push_str(&format!(
        "; spend {}.\n\n",
        f.spend
            .usd
            .map_or("unknown".to_string(), |u| format!("${u:.4}"))
    ));
    s.push_str("| it | verdict | failing | collected | exec ms | check ms | spend | model |\n");
    s.push_str("|---:|---|---:|---:|---:|---:|---:|---|\n");
    for r in &b.iterations {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.iteration,
            verdict(r),
            failing(r).map_or("-".into(), |x| x.to_string()),
            r.check
                .as_ref()
                .and_then(|c| c.collected)
                .map_or("-".into(), |x| x.to_string()),
            r.exec
                .as_ref()
                .map_or("-".into(), |e| e.duration_ms.to_string()),
            r.check
                .as_ref()
                .map_or("-".into(), |e| e.duration_ms.to_string()),
            usd(r),
            r.model.as_deref().unwrap_or("-"),
        ));
    }
    if let Some(last) = b.iterations.iter().rev().find(|r| r.check.is_some()) {
        let n = names(last);
        if !n.is_empty() {
            s.push_str(&format!(
                "\nStill failing at iteration {}: {}\n",
                last.iteration,
                n.iter()
                    .map(|x| format!("`{x}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    if let Some(t) = &b.stderr_tail {
        s.push_str(&format!(
            "\nThe work step's stderr ended with (the rest: `{}`):\n\n```text\n{}\n```\n",
            t.file, t.text
        ));
    }
    s.push_str(&format!(
        "\nExplain: `loopexec explain-halt --run-id {}`\n",
        b.run_id
    ));
    s
}

/// XML text escaping (element text and attribute values).
fn esc(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&apos;".to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// The run as a JUnit XML test suite: one test case per iteration; a red or rejected
/// iteration is a failure naming its failing tests; the halt is the suite's property.
#[must_use]
pub fn junit(b: &ReportBody) -> String {
    // One case per iteration; a CI test reporter reads failures as the job's outcome,
    // so only the iteration the run ended at fails, and only when the run did not
    // converge. A red iteration the loop went on from is told in its `system-out`.
    let converged = b.run.exit_code == Some(10);
    let last = b.iterations.last().map(|r| r.iteration);
    let ended_here = |r: &IterationRow| !converged && Some(r.iteration) == last;
    let failures = b.iterations.iter().filter(|r| ended_here(r)).count();
    let secs = b.run.duration_ms.unwrap_or(0) as f64 / 1000.0;
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    s.push_str(&format!(
        "<testsuites><testsuite name=\"loopexec {}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{secs:.3}\">\n",
        esc(&b.run_id),
        b.iterations.len()
    ));
    let reason = b.run.halt_reason.as_deref().unwrap_or("");
    let code = b.run.exit_code.map_or(String::new(), |c| c.to_string());
    s.push_str(&format!(
        "  <properties><property name=\"halt_reason\" value=\"{}\"/><property name=\"exit_code\" value=\"{code}\"/></properties>\n",
        esc(reason),
    ));
    for r in &b.iterations {
        let t = r.duration_ms as f64 / 1000.0;
        s.push_str(&format!(
            "  <testcase classname=\"loopexec.{}\" name=\"iteration {}\" time=\"{t:.3}\">",
            esc(&b.run_id),
            r.iteration
        ));
        let red = matches!(verdict(r), "red" | "rejected");
        let n = names(r);
        if ended_here(r) {
            s.push_str(&format!(
                "<failure message=\"{} (exit {code}){}\">{}</failure>",
                esc(reason),
                if red {
                    format!(": {} failing ({})", n.len(), verdict(r))
                } else {
                    String::new()
                },
                esc(&n.join("\n"))
            ));
        } else if red {
            s.push_str(&format!(
                "<system-out>{} failing ({}); the loop went on\n{}</system-out>",
                n.len(),
                verdict(r),
                esc(&n.join("\n"))
            ));
        }
        s.push_str("</testcase>\n");
    }
    s.push_str("</testsuite></testsuites>\n");
    s
}

/// An SVG polyline chart of `ys` (one point per iteration), 480×120.
fn chart(title: &str, ys: &[f64], colour: &str) -> String {
    let (w, h, pad) = (480.0, 120.0, 20.0);
    let max = ys.iter().copied().fold(0.0_f64, f64::max).max(1e-9);
    let n = ys.len().max(2) as f64 - 1.0;
    let pts: Vec<String> = ys
        .iter()
        .enumerate()
        .map(|(i, y)| {
            let x = pad + (w - 2.0 * pad) * (i as f64) / n;
            let yy = h - pad - (h - 2.0 * pad) * (y / max);
            format!("{x:.1},{yy:.1}")
        })
        .collect();
    format!(
        "<figure><figcaption>{}</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\"><rect width=\"{w}\" height=\"{h}\" fill=\"#fafafa\"/><polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/><text x=\"2\" y=\"14\" font-size=\"11\">max {max:.4}</text></svg></figure>",
        esc(title),
        pts.join(" ")
    )
}

/// The run as one self-contained HTML page.
#[must_use]
pub fn html(b: &ReportBody) -> String {
    let failing_counts: Vec<f64> = b
        .iterations
        .iter()
        .filter_map(|r| failing(r).map(|f| f as f64))
        .collect();
    let mut acc = 0.0;
    let spend: Vec<f64> = b
        .iterations
        .iter()
        .map(|r| {
            acc += r.cost_usd.unwrap_or(0.0);
            acc
        })
        .collect();
    let mut s = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>loopexec run {}</title><style>body{{font-family:sans-serif;max-width:60em;margin:1em auto}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 6px}}</style></head><body>",
        esc(&b.run_id)
    );
    s.push_str(&format!(
        "<h1>loopexec run {}</h1><p>Halt: <b>{}</b> (exit {}, {}) at iteration {}.</p>",
        esc(&b.run_id),
        esc(b.run.halt_reason.as_deref().unwrap_or("running")),
        b.run.exit_code.map_or("-".into(), |c| c.to_string()),
        esc(b.run.halt_class.as_deref().unwrap_or("-")),
        shown(b.run.iteration)
    ));
    s.push_str(&chart(
        "|F_i|: failing tests per iteration",
        &failing_counts,
        "#c0392b",
    ));
    s.push_str(&chart("cumulative spend (USD)", &spend, "#2c3e50"));
    s.push_str("<table><tr><th>it</th><th>verdict</th><th>failing</th><th>spend</th><th>failing tests</th></tr>");
    for r in &b.iterations {
        s.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            r.iteration,
            esc(verdict(r)),
            failing(r).map_or("-".into(), |x| x.to_string()),
            esc(&usd(r)),
            esc(&names(r).join(", "))
        ));
    }
    s.push_str("</table>");
    if let Some(h) = &b.halt {
        let contributors: String = h
            .contributors
            .iter()
            .map(|c| format!("<li>{}</li>", esc(c)))
            .collect();
        s.push_str(&format!("<h2>Why it halted</h2><ul>{contributors}</ul>"));
    }
    s.push_str(&format!(
        "<p>Explain: <code>loopexec explain-halt --run-id {}</code></p></body></html>\n",
        esc(&b.run_id)
    ));
    s
}

/// An iteration as the reports print it: `-` before iteration 0 started.
fn shown(iteration: Option<u32>) -> String {
    iteration.map_or_else(|| "-".to_string(), |i| i.to_string())
}
