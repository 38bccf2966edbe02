//! Embeds the first-party Lua extensions (`extensions/`) into the binary as a table of
//! `(relative path, contents)` pairs, so `fen` runs from a single file.
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
    for name in ["events", "types", "register-kinds", "interfaces"] {
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

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
    let root = manifest_dir.join("extensions");
    println!("cargo:rerun-if-changed=extensions");
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    let mut src = String::from("&[\n");
    for (rel, path) in &files {
        // Every directory must be watched for added files, not only the top one.
        if let Some(parent) = path.parent() {
            println!("cargo:rerun-if-changed={}", parent.display());
        }
        println!("cargo:rerun-if-changed={}", path.display());
        let _ = writeln!(
            src,
            "    ({rel:?}, include_str!({:?})),",
            path.display().to_string()
        );
    }
    src.push(']');
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into()));
    contracts_to_json(&manifest_dir, &out_dir);
    let out = out_dir.join("embedded_extensions.rs");
    if let Err(e) = std::fs::write(&out, src) {
        panic!("cannot write {}: {e}", out.display());
    }
}
