//! Integration tests: the public API as a user of the crate sees it.
use calc::{eval, CalcError};

#[test]
fn evaluates_a_realistic_expression() {
    assert_eq!(eval("12 * (30 - 4) / 2").unwrap(), 156);
}

#[test]
fn integer_division_truncates() {
    assert_eq!(eval("7 / 2").unwrap(), 3);
}

#[test]
fn division_by_zero_is_an_error_not_a_panic() {
    assert_eq!(eval("1 / 0"), Err(CalcError::DivisionByZero));
    assert_eq!(eval("5 / (3 - 3)"), Err(CalcError::DivisionByZero));
}

#[test]
fn trailing_garbage_is_rejected() {
    assert!(eval("1 2").is_err());
}
