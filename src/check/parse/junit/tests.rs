//! Focused tests of the JUnit reader (the real samples are checked in `sample_tests`).

use super::*;
use crate::check::model::TestResult;

fn parse(s: &str) -> ParsedRun {
    parse_junit(s.as_bytes()).expect("parses")
}

fn find<'a>(run: &'a ParsedRun, id: &str) -> &'a TestResult {
    run.tests
        .iter()
        .find(|t| t.id == id)
        .unwrap_or_else(|| panic!("no id {id} in {:?}", run.tests))
}

#[test]
fn bom_and_odd_time_attributes_are_accepted() {
    let run = parse("\u{feff}<?xml version=\"1.0\"?><testsuite name=\"S\" time=\"1,234.5\"><testcase classname=\"C\" name=\"a\" time=\"0,5\"/></testsuite>");
    assert!(run.complete);
    assert_eq!(find(&run, "C::a").outcome, Outcome::Passed);
}

#[test]
fn cdata_split_and_entities_are_decoded() {
    let run = parse(
        r#"<testsuites><testsuite name="s"><testcase classname="m" name="t[&lt;a&gt; &amp; &quot;q&quot;]"><failure><![CDATA[got ]]]]><![CDATA[> here]]></failure></testcase></testsuite></testsuites>"#,
    );
    let t = find(&run, "m::t[<a> & \"q\"]");
    assert_eq!(t.outcome, Outcome::Failed);
    assert_eq!(t.message.as_deref(), Some("got ]]> here"));
}

#[test]
fn several_failures_make_one_failing_test_and_skip_plus_failure_fails() {
    let run = parse(
        r#"<testsuite name="s" failures="2" errors="1">
        <testcase classname="c" name="two"><failure message="first"/><failure message="second"/></testcase>
        <testcase classname="c" name="mayfail"><skipped/><failure message="x"/></testcase>
        <testcase classname="c" name="err"><error/></testcase>
        <testcase classname="c" name="empty"><failure message=""></failure></testcase>
        </testsuite>"#,
    );
    assert_eq!(run.tests.len(), 4);
    assert_eq!(find(&run, "c::two").message.as_deref(), Some("first"));
    assert_eq!(find(&run, "c::mayfail").outcome, Outcome::Failed);
    assert_eq!(find(&run, "c::err").outcome, Outcome::Errored);
    assert_eq!(find(&run, "c::empty").outcome, Outcome::Failed);
    assert!(run.complete);
    assert!(!run.unattributed_failure);
}

#[test]
fn missing_classname_uses_enclosing_suite_and_same_names_stay_distinct() {
    let run = parse(
        r#"<testsuites><testsuite name="Outer"><testcase name="top"/>
        <testsuite name="Inner"><testcase name="deep"/></testsuite>
        <testcase classname="A" name="same"/><testcase classname="B" name="same"><failure/></testcase>
        </testsuite></testsuites>"#,
    );
    assert_eq!(find(&run, "Outer::top").outcome, Outcome::Passed);
    assert_eq!(find(&run, "Inner::deep").outcome, Outcome::Passed);
    assert_eq!(find(&run, "A::same").outcome, Outcome::Passed);
    assert_eq!(find(&run, "B::same").outcome, Outcome::Failed);
}

#[test]
fn surefire_flaky_and_rerun_children() {
    let run = parse(
        r#"<testsuite name="T" failures="1" errors="1">
        <testcase classname="T" name="flaky"><flakyFailure message="m"><stackTrace>s</stackTrace></flakyFailure></testcase>
        <testcase classname="T" name="fails"><failure message="boom"/><rerunFailure message="boom"/></testcase>
        <testcase classname="T" name="throws"><error message="npe"/><rerunError message="npe"/></testcase>
        </testsuite>"#,
    );
    assert_eq!(find(&run, "T::flaky").outcome, Outcome::FlakyPassed);
    assert_eq!(find(&run, "T::fails").outcome, Outcome::Failed);
    assert_eq!(find(&run, "T::throws").outcome, Outcome::Errored);
    assert!(run.complete);
}

#[test]
fn retries_in_one_suite_last_attempt_wins() {
    // pytest-rerunfailures: tests="2" but 5 elements -> attempts of 2 tests.
    let run = parse(
        r#"<testsuites><testsuite name="pytest" tests="2" failures="1">
        <testcase classname="m" name="flaky"/><testcase classname="m" name="flaky"/>
        <testcase classname="m" name="bad"/><testcase classname="m" name="bad"/>
        <testcase classname="m" name="bad"><failure message="no"/></testcase>
        </testsuite></testsuites>"#,
    );
    assert_eq!(run.tests.len(), 2);
    assert_eq!(find(&run, "m::flaky").outcome, Outcome::Passed);
    assert_eq!(find(&run, "m::bad").outcome, Outcome::Failed);
    // Gradle: failed attempt then a pass, counted in `tests` -> one flaky test.
    let run = parse(
        r#"<testsuite name="C" tests="2" failures="1"><testcase classname="C" name="t"><failure/></testcase><testcase classname="C" name="t"/></testsuite>"#,
    );
    assert_eq!(run.tests.len(), 1);
    assert_eq!(find(&run, "C::t").outcome, Outcome::FlakyPassed);
}

#[test]
fn same_names_counted_by_the_suite_are_distinct_tests() {
    let run = parse(
        r#"<testsuite name="f" tests="3" failures="1"><testcase classname="f" name="p"/><testcase classname="f" name="p"><failure/></testcase><testcase classname="f" name="p"/></testsuite>"#,
    );
    assert_eq!(run.tests.len(), 3);
    assert_eq!(find(&run, "f::p").outcome, Outcome::Passed);
    assert_eq!(find(&run, "f::p#2").outcome, Outcome::Failed);
    assert_eq!(find(&run, "f::p#3").outcome, Outcome::Passed);
}

#[test]
fn same_id_in_two_suite_elements_is_two_tests() {
    let run = parse(
        r#"<testsuites><testsuite name="undefined"><testcase classname=" passes" name=" passes"/></testsuite><testsuite name="undefined"><testcase classname=" passes" name=" passes"/></testsuite></testsuites>"#,
    );
    let ids: Vec<_> = run.tests.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["undefined::passes", "undefined::passes#2"]);
}

#[test]
fn truncated_document_keeps_complete_cases_and_is_never_green() {
    let run = parse(
        r#"<?xml version="1.0"?><testsuite name="T"><testcase classname="T" name="a"/><testcase classname="T" name="b"><failure>x</failure></testcase><testcase classname="T" name="c">"#,
    );
    assert!(!run.complete);
    assert!(run.unattributed_failure);
    assert_eq!(run.tests.len(), 2);
    assert!(!run.diagnostics.is_empty());
    // Cut inside a tag: an XML error inside the root, same treatment.
    let run = parse(r#"<testsuite name="T"><testcase classname="T" name="a"/><testcase classn"#);
    assert!(!run.complete);
    assert_eq!(find(&run, "T::a").outcome, Outcome::Passed);
    // Only passes before the cut: the synthetic member keeps the run red.
    assert_eq!(run.failing().len(), 1);
}

#[test]
fn unreadable_before_any_root_is_an_error() {
    assert!(matches!(
        parse_junit(&b""[..]),
        Err(StructuredError::Xml { position: 0, .. })
    ));
    assert!(parse_junit(&b"<testsuite name=\"x\" <<<"[..]).is_err());
    assert!(matches!(
        parse_junit(&b"<html><body/></html>"[..]),
        Err(StructuredError::NotRecognised)
    ));
}

#[test]
fn junk_around_the_document_is_ignored() {
    let run = parse("running tests\n<?xml version=\"1.0\"?><testsuites><testcase classname=\"test\" name=\"x\"/></testsuites>\ndone\n");
    assert!(run.complete);
    assert_eq!(find(&run, "test::x").outcome, Outcome::Passed);
}

#[test]
fn declared_failures_missing_from_cases_are_unattributed() {
    let run = parse(
        r#"<testsuites tests="1" failures="1" errors="1"><testsuite name="p" tests="1" failures="1"><testcase classname="p" name="T"><failure message="Failed"/></testcase></testsuite></testsuites>"#,
    );
    assert!(run.unattributed_failure);
    assert!(!run.complete);
    assert_eq!(run.failing().len(), 1);
}

#[test]
fn ctest_status_and_phpunit_risky() {
    let run = parse(
        r#"<testsuite name="(empty)" failures="0"><testcase name="nf" classname="nf" status="notrun"><skipped message="Unable to find executable"/></testcase>
        <testcase name="sk" classname="sk" status="notrun"><skipped message="SKIP_RETURN_CODE=77"/></testcase>
        <testcase name="dis" classname="dis" status="disabled"/></testsuite>"#,
    );
    assert_eq!(find(&run, "(empty)::nf").outcome, Outcome::Errored);
    assert_eq!(find(&run, "(empty)::sk").outcome, Outcome::Skipped);
    assert_eq!(find(&run, "(empty)::dis").outcome, Outcome::Skipped);
    let run = parse(
        r#"<testsuite name="D" errors="1"><testcase classname="D" name="risky"><error type="PHPUnit\Framework\RiskyTestError">no assertions</error></testcase></testsuite>"#,
    );
    assert_eq!(find(&run, "D::risky").outcome, Outcome::Passed);
    assert!(run.complete);
}

#[test]
fn jest_junit_template_with_file_attribute() {
    let run = parse(
        r#"<testsuites><testsuite name="undefined"><testcase classname="" name="passes" file="a.test.js"/><testcase classname="outer" name="inner" file="a.test.js"/></testsuite></testsuites>"#,
    );
    assert_eq!(find(&run, "a.test.js::passes").outcome, Outcome::Passed);
    assert_eq!(find(&run, "outer::inner").outcome, Outcome::Passed);
}

#[test]
fn two_documents_on_one_stream() {
    let run = parse(
        r#"<?xml version="1.0"?><testsuites><testsuite name="a"><testcase classname="x" name="t"/></testsuite></testsuites>
<?xml version="1.0"?><testsuites><testsuite name="b"><testcase classname="y" name="t"><failure/></testcase></testsuite></testsuites>"#,
    );
    assert!(run.complete);
    assert_eq!(run.tests.len(), 2);
    assert_eq!(find(&run, "y::t").outcome, Outcome::Failed);
}

#[test]
fn synthetic_document_of_100k_cases_parses_with_right_counts() {
    let n = 100_000;
    let mut doc = Vec::new();
    synthetic_junit(n, &mut doc).expect("writes");
    let run = parse_junit(doc.as_slice()).expect("parses");
    let count = |o: Outcome| run.tests.iter().filter(|t| t.outcome == o).count();
    let expect = |pred: &dyn Fn(usize) -> bool| (0..n).filter(|&i| pred(i)).count();
    assert_eq!(run.tests.len(), n);
    assert!(run.complete);
    assert!(!run.unattributed_failure);
    assert_eq!(count(Outcome::Failed), expect(&|i| i % 10 == 3));
    assert_eq!(count(Outcome::Errored), expect(&|i| i % 10 == 7));
    assert_eq!(
        count(Outcome::Skipped),
        expect(&|i| i % 20 == 9 && i % 10 != 3 && i % 10 != 7)
    );
    assert_eq!(
        count(Outcome::Passed)
            + count(Outcome::Failed)
            + count(Outcome::Errored)
            + count(Outcome::Skipped),
        n
    );
    assert!(run.tests[3]
        .message
        .as_deref()
        .unwrap_or("")
        .contains("expected 3 < 0"));
}

#[test]
fn suite_counts_stand_for_a_root_without_counts_per_document() {
    // First document: root declares nothing, its suite declares 2 failures, 1 found.
    // Second document: root declares its own (consistent) counts.
    let run = parse(
        r#"<testsuites><testsuite name="a" failures="2"><testcase classname="a" name="t"><failure/></testcase></testsuite></testsuites>
<testsuites failures="0"><testsuite name="b" failures="5"/></testsuites>"#,
    );
    assert!(run.unattributed_failure);
    assert!(run
        .diagnostics
        .iter()
        .any(|d| d.contains("declares 2 failures/errors")));
    let run = parse(r#"<testsuites/><testsuite name="e" tests="0" failures="0"/>"#);
    assert!(run.complete);
    assert!(run.tests.is_empty());
}

/// The attributes read by hand equal what the reader's own iterator reads (first of
/// each name, an unprefixed name before a prefixed one, local names, entities
/// decoded, a bad entity kept raw), and anything
/// that is not plain `name="value"` is left to that iterator.
#[test]
fn attributes_read_by_hand_equal_the_readers() {
    let keys: [&[u8]; 4] = [b"name", b"classname", b"file", b"status"];
    for (element, plain) in [
        (r#"<testcase classname="C" name="a" time="0.1"/>"#, true),
        (r#"<testcase name = 'a b' classname	=	"C"/>"#, true),
        ("<testcase\n name=\"a\"\r\n file=\"f.py\"/>", true),
        (r#"<testcase name="x &amp; y &#x41;" status="run"/>"#, true),
        (r#"<testcase name="bad &nope; entity"/>"#, true),
        (r#"<testcase x:name="ns" name="second"/>"#, true),
        (r#"<testcase x:name="ns" y:classname="C"/>"#, true),
        (r#"<testcase name="first" x:name="ns"/>"#, true),
        (r#"<testcase name="first" name="twice"/>"#, true),
        (r#"<testcase name="it's" classname='say "hi"'/>"#, true),
        (r#"<testcase name="a > b" classname=""/>"#, true),
        (r#"<testcase name="a"classname="glued"/>"#, false),
        (r#"<testcase name=unquoted classname="C"/>"#, false),
        (r#"<testcase name classname="C"/>"#, false),
        (r#"<testcase name="a" ="x"/>"#, false),
    ] {
        let mut reader = quick_xml::Reader::from_str(element);
        let event = reader.read_event().expect("an element");
        let (quick_xml::events::Event::Empty(e) | quick_xml::events::Event::Start(e)) = event
        else {
            panic!("not an element: {element}");
        };
        assert_eq!(
            plain_attributes(e.attributes_raw(), |_, _| {}),
            plain,
            "{element}"
        );
        // the reader's iterator, an unprefixed name first
        let mut want: [Option<String>; 4] = Default::default();
        for unprefixed in [true, false] {
            for a in e.attributes().with_checks(false).flatten() {
                let local = a.key.local_name();
                if (a.key.prefix().is_none()) != unprefixed {
                    continue;
                }
                if let Some(j) = keys.iter().position(|k| *k == local.as_ref()) {
                    if want[j].is_none() {
                        want[j] = Some(match a.unescape_value() {
                            Ok(v) => v.into_owned(),
                            Err(_) => String::from_utf8_lossy(&a.value).into_owned(),
                        });
                    }
                }
            }
        }
        let got = attrs(&e, keys).map(|v| v.map(Cow::into_owned));
        assert_eq!(got, want, "{element}");
    }
}
