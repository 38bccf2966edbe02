fn main() -> std::process::ExitCode {
    fen::cmd::main()
}
