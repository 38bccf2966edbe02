//! Unit tests of the analyser's parts; the corpora live in tests/policy_corpus.rs.

use std::path::PathBuf;

use super::*;

fn ctx() -> ShellContext {
    ShellContext {
        cwd: PathBuf::from("/w"),
        home: PathBuf::from("/home/u"),
    }
}

#[test]
fn dump() {
    let Ok(cmds) = std::env::var("POLICY_DUMP") else { return };
    for c in cmds.split("\n") {
        let a = analyze(c, &ctx());
        println!("== {c}  (parse_error={})", a.parse_error);
        for s in &a.segments {
            println!("   argv={:?} wr={:?} via={:?} cwd={:?} opaque={:?} dyn={} paths={:?}", s.argv, s.wrappers, s.via, s.cwd, s.opaque, s.dynamic,
                s.paths.iter().map(|p| format!("{:?}:{}:{:?}{}", p.access, p.raw, p.path, if p.contents {"/*"} else {""})).collect::<Vec<_>>());
        }
    }
}

#[test]
fn sexp() {
    let Ok(c) = std::env::var("POLICY_SEXP") else { return };
    let mut p = tree_sitter::Parser::new();
    p.set_language(&tree_sitter_bash::LANGUAGE.into()).unwrap();
    let t = p.parse(&c, None).unwrap();
    println!("{}", t.root_node().to_sexp());
}
