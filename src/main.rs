fn main() -> std::process::ExitCode {
    fen::runtime::main()
}
