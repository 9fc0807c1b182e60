//! A generator of large synthetic JUnit documents, for benchmarks and scale tests.

/// Writes a synthetic JUnit document with `cases` test cases spread over suites of 1,000,
/// for benchmarks and scale tests. Outcome of case `i` (0-based): `i % 10 == 3` failed
/// (with a multi-line CDATA body), `i % 10 == 7` errored, `i % 20 == 9` skipped, every
/// other case passed. The root `<testsuites>` declares the matching totals, so the
/// document parses as complete. Ids are `pkg.ClassN::test_i` (unique).
///
/// # Errors
/// Any error of the writer.
#[doc(hidden)]
pub fn synthetic_junit(cases: usize, w: &mut impl std::io::Write) -> std::io::Result<()> {
    let outcome = |i: usize| match (i % 10, i % 20) {
        (3, _) => 'f',
        (7, _) => 'e',
        (_, 9) => 's',
        _ => 'p',
    };
    let failures = (0..cases).filter(|&i| outcome(i) == 'f').count();
    let errors = (0..cases).filter(|&i| outcome(i) == 'e').count();
    writeln!(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>")?;
    writeln!(
        w,
        "<testsuites name=\"synthetic\" tests=\"{cases}\" failures=\"{failures}\" errors=\"{errors}\" time=\"1,234.5\">"
    )?;
    let per_suite = 1000;
    let mut start = 0;
    while start < cases {
        let end = (start + per_suite).min(cases);
        let class = start / per_suite;
        writeln!(
            w,
            "  <testsuite name=\"pkg.Class{class}\" tests=\"{}\">",
            end - start
        )?;
        for i in start..end {
            let open = format!(
                "    <testcase classname=\"pkg.Class{class}\" name=\"test_{i}\" time=\"0.001\""
            );
            match outcome(i) {
                'f' => writeln!(
                    w,
                    "{open}><failure message=\"expected {i} &lt; 0\" type=\"AssertionError\"><![CDATA[line one\n  at pkg.Class{class}.test_{i}(Class.java:{i})\n]]></failure><system-out>out {i}</system-out></testcase>"
                )?,
                'e' => writeln!(
                    w,
                    "{open}><error type=\"java.lang.IllegalStateException\">state {i}</error></testcase>"
                )?,
                's' => writeln!(w, "{open}><skipped message=\"disabled\"/></testcase>")?,
                _ => writeln!(w, "{open}/>")?,
            }
        }
        writeln!(w, "  </testsuite>")?;
        start = end;
    }
    writeln!(w, "</testsuites>")
}
