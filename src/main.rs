fn main() -> std::process::ExitCode {
    // The persistent sandbox's launcher is fen's own executable started with a marker
    // argument inside bwrap; it must run before anything starts a thread (it forks).
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).take(2).collect();
    if let Some(code) = fen::native::sandbox::launcher::dispatch(&args) {
        return std::process::ExitCode::from(code.clamp(0, 255) as u8);
    }
    if let Ok(exe) = std::env::current_exe() {
        fen::native::sandbox::launcher::set_program(exe);
    }
    fen::cmd::main()
}
