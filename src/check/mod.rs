//! The check artifact: what one check run printed and wrote, and the tests it names.
pub mod idsort;
pub mod model;
pub mod parse;
pub mod postparse;
pub mod witness;
