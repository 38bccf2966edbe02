//! Embeds the first-party Lua extensions (`extensions/`) into the binary, so `fen` runs from a
//! single file: per file its path relative to `extensions/`, its source, and its Lua 5.4
//! bytecode compiled here (start-up loads the bytecode instead of lexing and parsing ~90 KB of
//! Lua on every run). The bytecode keeps its debug information (chunk name, line numbers, local
//! names), so errors and tracebacks read exactly as when the source is loaded.
use std::ffi::{c_int, c_void, CString};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn collect(dir: &Path, base: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, base, out);
        } else if path.extension().is_some_and(|e| e == "lua") {
            let rel = path
                .strip_prefix(base)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, path));
        }
    }
}

/// Converts `contracts/*.toml` to JSON once, at build time: the binary parses JSON at start-up,
/// which is several times faster than TOML (the contracts are needed on every boot).
fn contracts_to_json(manifest_dir: &Path, out_dir: &Path) {
    for name in [
        "events",
        "types",
        "register-kinds",
        "interfaces",
        "protocols",
    ] {
        let src = manifest_dir.join("contracts").join(format!("{name}.toml"));
        println!("cargo:rerun-if-changed={}", src.display());
        let text = std::fs::read_to_string(&src)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", src.display()));
        let value: toml::Value =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{} is malformed: {e}", src.display()));
        let json =
            serde_json::to_string(&value).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        let out = out_dir.join(format!("contracts-{name}.json"));
        std::fs::write(&out, json)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
    }
}

/// `fen --version`'s build facts as compile-time variables: `FEN_GIT_COMMIT` (the short commit,
/// `unknown` outside a git checkout) and `FEN_BUILD_DATE` (UTC, `YYYY-MM-DD`; from
/// `SOURCE_DATE_EPOCH` when set, for reproducible builds). The script reruns when HEAD moves.
fn version_info(manifest_dir: &Path) {
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(manifest_dir)
            .output()
            .ok()?;
        let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !s.is_empty()).then_some(s)
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    // HEAD and the branch it points to (a worktree's git dir holds its own HEAD).
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let dir = PathBuf::from(dir);
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            let common = git(&["rev-parse", "--git-common-dir"])
                .map(|c| manifest_dir.join(c))
                .unwrap_or(dir.clone());
            println!("cargo:rerun-if-changed={}", common.join(&r).display());
            println!(
                "cargo:rerun-if-changed={}",
                common.join("packed-refs").display()
            );
        }
    }
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0)
        });
    println!("cargo:rustc-env=FEN_GIT_COMMIT={commit}");
    println!(
        "cargo:rustc-env=FEN_BUILD_DATE={}",
        civil_date(secs.div_euclid(86_400))
    );
}

/// Days since 1970-01-01 as `YYYY-MM-DD` (proleptic Gregorian; Howard Hinnant's algorithm).
fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The chunk name a first-party file is loaded under (and shown in errors and tracebacks):
/// must match `Location::display_file` of the embedded set.
fn chunk_name(rel: &str) -> String {
    format!("@<embedded>/extensions/{rel}")
}

/// Compiles one Lua source to bytecode with the Lua the binary embeds (same version and
/// configuration, via `mlua-sys`). `None` when it does not compile: the binary then loads the
/// source, which reports the syntax error at run time exactly as before.
fn compile_lua(chunkname: &str, source: &[u8]) -> Option<Vec<u8>> {
    unsafe extern "C-unwind" fn writer(
        _l: *mut mlua_sys::lua_State,
        p: *const c_void,
        sz: usize,
        ud: *mut c_void,
    ) -> c_int {
        // SAFETY: `ud` is the `Vec<u8>` passed to `lua_dump` below; `p` points at `sz` bytes.
        unsafe {
            let out = &mut *(ud as *mut Vec<u8>);
            out.extend_from_slice(std::slice::from_raw_parts(p as *const u8, sz));
        }
        0
    }
    let name = CString::new(chunkname).ok()?;
    // SAFETY: a fresh state, used and closed here; the buffers outlive the calls.
    unsafe {
        let l = mlua_sys::luaL_newstate();
        if l.is_null() {
            return None;
        }
        let status = mlua_sys::luaL_loadbufferx(
            l,
            source.as_ptr().cast(),
            source.len(),
            name.as_ptr(),
            c"t".as_ptr(),
        );
        let mut out = Vec::new();
        let ok = status == mlua_sys::LUA_OK
            && mlua_sys::lua_dump(l, writer, (&mut out as *mut Vec<u8>).cast(), 0) == 0;
        mlua_sys::lua_close(l);
        ok.then_some(out)
    }
}

/// Release builds link fen's start-up functions first and together (link/startup-order.txt,
/// made by link/startup-order.sh): packed, they fault in a few hundred KB of code instead of
/// 64 KB (the kernel's fault-around) in each of ~200 places spread over the whole binary, which
/// was most of a short run's peak RSS. The list becomes a linker script that puts their
/// sections (one per function, `.text.NAME` or `.text.unlikely.NAME` for cold ones) in an
/// output section before `.text`. Patterns, not lld's
/// `--symbol-ordering-file`: ThinLTO suffixes local functions with `.llvm.<hash of their
/// module>`, which every edit of that module (and every commit, through the version string)
/// changes, so the names are matched with any such suffix. Only where the linker is rustc's
/// default lld (x86_64 Linux since Rust 1.90) and nobody chose another.
fn startup_order(manifest_dir: &Path, out_dir: &Path) {
    let file = manifest_dir.join("link/startup-order.txt");
    println!("cargo:rerun-if-changed={}", file.display());
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let rustflags = env("CARGO_ENCODED_RUSTFLAGS");
    let minor = std::process::Command::new(std::env::var_os("RUSTC").unwrap_or("rustc".into()))
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            let v = String::from_utf8_lossy(&o.stdout).into_owned();
            let v = v.split_whitespace().nth(1)?.to_owned();
            v.split('.').nth(1)?.parse::<u32>().ok()
        });
    let default_lld = env("TARGET") == "x86_64-unknown-linux-gnu"
        && minor.is_some_and(|m| m >= 90)
        && std::env::var_os("RUSTC_LINKER").is_none()
        && !rustflags.contains("linker")
        && !rustflags.contains("fuse-ld");
    if env("PROFILE") != "release" || !default_lld {
        return;
    }
    let Ok(list) = std::fs::read_to_string(&file) else {
        return;
    };
    let mut seen = std::collections::HashSet::new();
    let mut script = String::from("SECTIONS {\n  .text.fen_startup : {\n");
    for line in list.lines() {
        let name = line.trim();
        let name = name.split(".llvm.").next().unwrap_or(name);
        // Glob characters would make a pattern of a name; such names are left where they are.
        let plain = |c: char| !c.is_whitespace() && !"*?[]\\\"(){};".contains(c);
        if name.is_empty() || !name.chars().all(plain) || !seen.insert(name) {
            continue;
        }
        // Cold functions (`#[cold]`, gcc's split-off parts) have sections of their own prefix.
        let _ = writeln!(
            script,
            "    *(.text.{name} .text.{name}.llvm.* .text.unlikely.{name} \
             .text.unlikely.{name}.llvm.* .text.startup.{name} .text.hot.{name})"
        );
    }
    script.push_str("  }\n} INSERT BEFORE .text;\n");
    let out = out_dir.join("startup-order.ld");
    if std::fs::write(&out, script).is_ok() {
        println!("cargo:rustc-link-arg-bin=fen=-Wl,-T,{}", out.display());
    }
}

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
    let root = manifest_dir.join("extensions");
    println!("cargo:rerun-if-changed=extensions");
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into()));
    let copies = out_dir.join("embedded");
    let mut src = String::from("&[\n");
    for (i, (rel, path)) in files.iter().enumerate() {
        // Every directory must be watched for added files, not only the top one.
        if let Some(parent) = path.parent() {
            println!("cargo:rerun-if-changed={}", parent.display());
        }
        println!("cargo:rerun-if-changed={}", path.display());
        // Source and bytecode both come from this one read (never out of step), so the binary
        // includes the copies written here rather than the files under extensions/.
        let source =
            std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        if let Err(e) = std::str::from_utf8(&source) {
            panic!("{} is not UTF-8: {e}", path.display());
        }
        let bytecode = compile_lua(&chunk_name(rel), &source).unwrap_or_default();
        let source_copy = copies.join(format!("{i}.lua"));
        let bytecode_copy = copies.join(format!("{i}.luac"));
        for (file, bytes) in [(&source_copy, &source), (&bytecode_copy, &bytecode)] {
            if let Some(dir) = file.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            std::fs::write(file, bytes)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
        }
        let _ = writeln!(
            src,
            "    EmbeddedFile {{ path: {rel:?}, source: include_str!({:?}), bytecode: include_bytes!({:?}) }},",
            source_copy.display().to_string(),
            bytecode_copy.display().to_string()
        );
    }
    src.push(']');
    contracts_to_json(&manifest_dir, &out_dir);
    version_info(&manifest_dir);
    startup_order(&manifest_dir, &out_dir);
    let out = out_dir.join("embedded_extensions.rs");
    if let Err(e) = std::fs::write(&out, src) {
        panic!("cannot write {}: {e}", out.display());
    }
}
