//! Integration tests: the real binary in temp dirs against real child processes.
