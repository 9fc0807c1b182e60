//! The `loopexec` binary: everything lives in the library.

fn main() -> std::process::ExitCode {
    loopexec::cli::main()
}
