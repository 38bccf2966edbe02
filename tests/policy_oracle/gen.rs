//! Deterministic generation of candidate commands for the oracle: known read-only programs and
//! payloads (a write, an unnamed program, a secret read, the network) inside wrappers, quoting,
//! redirects, substitutions, heredocs, `bash -c`/`eval` nesting, xargs, find -exec, lists,
//! function definitions, coproc, arithmetic, prompt expansion, environment assignments and
//! code-running options. Every candidate carries the class of what was done to it, so a
//! violation can be reported by class.

/// A candidate: the command line and where it came from.
#[derive(Debug, Clone)]
pub struct Cand {
    pub cmd: String,
    /// `lossy`, `construct`, `option`, `redirect`, `secret`, `fen-files`, `wrapper`, `list`,
    /// `corpus`, or several joined by `+` for compositions.
    pub class: String,
    /// What produced it (`nest:bash-c-dq-newline`, `probe`, `corpus:safe_readonly.txt`, ...).
    pub origin: String,
}

/// Known read-only programs, as argv.
pub const READ_ONLY: &[&[&str]] = &[
    &["ls"],
    &["ls", "-la", "src"],
    &["cat", "README.md"],
    &["grep", "-rn", "fn", "src"],
    &["grep", "-c", "hello", "README.md"],
    &["git", "log", "--oneline", "-3"],
    &["git", "diff"],
    &["git", "diff", "--stat"],
    &["git", "status", "--short"],
    &["git", "show", "--stat", "HEAD"],
    &["find", ".", "-name", "*.rs"],
    &["sed", "-n", "1,2p", "README.md"],
    &["awk", "{print $1}", "README.md"],
    &["head", "-n", "2", "README.md"],
    &["echo", "hello world"],
    &["printf", "%s\\n", "a", "b"],
    &["jq", ".name", "data.json"],
    &["sort", "README.md"],
    &["less", "README.md"],
    &["man", "-w", "ls"],
    &["tar", "-tf", "archive.tar"],
    &["base64", "README.md"],
    &["od", "-c", "README.md"],
    &["wc", "-l", "README.md"],
];

/// Things that must never run unnoticed, as argv.
pub const PAYLOADS: &[&[&str]] = &[
    &["touch", "pwned"],
    &["./payload.sh"],
    &["rm", "-f", "README.md"],
    &["mkdir", "newdir"],
    &["cp", "README.md", "pwned"],
    &["chmod", "+x", "README.md"],
    &["python3", "-c", "open('pwned','w')"],
    &["curl", "-s", "http://127.0.0.1:9/"],
    &["cat", ".env"],
    &["od", "-c", "~/.ssh/id_rsa"],
];

/// Payloads written as shell text.
pub const PAYLOAD_TEXT: &[&str] = &[
    "echo x > pwned",
    "echo '{}' > .fen/settings.local.json",
    "printf x >> ~/.bashrc",
];

/// How words are quoted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Plain,
    Single,
    Double,
    AnsiC,
    Adjacent,
    Backslash,
}

pub const STYLES: &[Style] = &[
    Style::Plain,
    Style::Single,
    Style::Double,
    Style::AnsiC,
    Style::Adjacent,
    Style::Backslash,
];

fn safe_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-_./=,:+@%^".contains(c)
}

/// `'...'`, a single quote written `'\''`.
pub fn sq(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The inside of a double-quoted string: `\ " $ `` ` escaped.
pub fn dq_escape(s: &str) -> String {
    let mut o = String::new();
    for c in s.chars() {
        if matches!(c, '\\' | '"' | '$' | '`') {
            o.push('\\');
        }
        o.push(c);
    }
    o
}

pub fn dq(s: &str) -> String {
    format!("\"{}\"", dq_escape(s))
}

/// The inside of `$'...'`: backslash, quote and newline escaped, letters sometimes as `\xNN`.
pub fn ansi_escape(s: &str) -> String {
    let mut o = String::new();
    for (i, c) in s.chars().enumerate() {
        match c {
            '\\' => o.push_str("\\\\"),
            '\'' => o.push_str("\\'"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            c if c.is_ascii_lowercase() && i % 3 == 1 => {
                o.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => o.push(c),
        }
    }
    o
}

pub fn ansi(s: &str) -> String {
    format!("$'{}'", ansi_escape(s))
}

/// Two adjacent parts, single- then double-quoted: one word.
pub fn adjacent(s: &str) -> String {
    let k = s
        .char_indices()
        .nth(s.chars().count() / 2)
        .map_or(0, |x| x.0);
    if k == 0 {
        return sq(s);
    }
    format!("{}{}", sq(&s[..k]), dq(&s[k..]))
}

/// Every character backslash-escaped (a newline single-quoted: `\<newline>` is a continuation).
pub fn backslash(s: &str) -> String {
    let mut o = String::new();
    for c in s.chars() {
        if c == '\n' {
            o.push_str("'\n'");
        } else {
            o.push('\\');
            o.push(c);
        }
    }
    o
}

pub fn quote(s: &str, style: Style) -> String {
    if s.is_empty() {
        return "''".into();
    }
    match style {
        Style::Plain if s.chars().all(safe_char) => s.to_string(),
        Style::Plain | Style::Single => sq(s),
        Style::Double => dq(s),
        Style::AnsiC => ansi(s),
        Style::Adjacent => adjacent(s),
        Style::Backslash => backslash(s),
    }
}

/// A word in a style; a leading `~/` stays bare so it still expands.
pub fn word(w: &str, style: Style) -> String {
    if let Some(rest) = w.strip_prefix("~/") {
        return format!("~/{}", quote(rest, style));
    }
    quote(w, style)
}

pub fn render(argv: &[&str], style: Style) -> String {
    argv.iter()
        .map(|w| word(w, style))
        .collect::<Vec<_>>()
        .join(" ")
}

fn render_mixed(argv: &[&str], rng: &mut fastrand::Rng) -> String {
    argv.iter()
        .map(|w| word(w, STYLES[rng.usize(..STYLES.len())]))
        .collect::<Vec<_>>()
        .join(" ")
}

type Tf = fn(&str) -> String;

/// `git OPT rest` for a command that starts with `git `; anything else unchanged.
fn git_opt(x: &str, opt: &str) -> String {
    match x.strip_prefix("git ") {
        Some(rest) => format!("git {opt} {rest}"),
        None => x.to_string(),
    }
}

/// Transforms of a command text X into a command that runs X: (origin, class, function).
pub fn transforms() -> Vec<(&'static str, &'static str, Tf)> {
    vec![
        // Wrappers.
        ("wrap:env", "wrapper", |x| format!("env {x}")),
        ("wrap:env-assign", "wrapper", |x| format!("env A=1 {x}")),
        ("wrap:timeout", "wrapper", |x| format!("timeout 5 {x}")),
        ("wrap:timeout-s", "wrapper", |x| {
            format!("timeout -s KILL 5 {x}")
        }),
        ("wrap:nice", "wrapper", |x| format!("nice -n 5 {x}")),
        ("wrap:nohup", "wrapper", |x| format!("nohup {x}")),
        ("wrap:command", "wrapper", |x| format!("command {x}")),
        ("wrap:exec", "wrapper", |x| format!("exec {x}")),
        ("wrap:time", "wrapper", |x| format!("time {x}")),
        ("wrap:stdbuf", "wrapper", |x| format!("stdbuf -oL {x}")),
        ("wrap:xargs", "wrapper", |x| format!("xargs {x}")),
        ("wrap:env-S", "option", |x| format!("env -S {}", sq(x))),
        ("wrap:usr-bin-time-o", "option", |x| {
            format!("/usr/bin/time -o pwned {x}")
        }),
        ("wrap:flock", "option", |x| format!("flock lockfile {x}")),
        // Environment that names a program, over every base.
        ("env:git-pager", "option", |x| {
            format!("GIT_PAGER=./payload.sh {x}")
        }),
        ("env:pager", "option", |x| format!("PAGER=./payload.sh {x}")),
        ("env:lessopen", "option", |x| {
            format!("LESSOPEN='|./payload.sh %s' {x}")
        }),
        ("env:ld-preload", "option", |x| {
            format!("LD_PRELOAD=./evil.so {x}")
        }),
        ("env:bash-env", "option", |x| {
            format!("BASH_ENV=./payload.sh {x}")
        }),
        ("env:git-external-diff", "option", |x| {
            format!("GIT_EXTERNAL_DIFF=./payload.sh {x}")
        }),
        ("env:git-dir", "option", |x| {
            format!("GIT_DIR=.evil-git {x}")
        }),
        ("env:git-config", "option", |x| {
            format!("GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=./payload.sh {x}")
        }),
        ("env:path", "option", |x| format!("PATH=bin:$PATH {x}")),
        // git's own options that name a program (git bases only; others are unchanged).
        ("gitc:fsmonitor", "option", |x| {
            git_opt(x, "-c core.fsmonitor=./payload.sh")
        }),
        ("gitc:diff-external", "option", |x| {
            git_opt(x, "-c diff.external=./payload.sh")
        }),
        ("gitc:textconv", "option", |x| {
            git_opt(x, "-c diff.conv.textconv=./payload.sh")
        }),
        ("gitc:pager", "option", |x| {
            git_opt(x, "-c core.pager=./payload.sh -p")
        }),
        ("gitc:git-dir", "option", |x| {
            git_opt(x, "--git-dir=.evil-git")
        }),
        ("gitc:config-env", "option", |x| {
            format!(
                "P=./payload.sh {}",
                git_opt(x, "--config-env=core.fsmonitor=P")
            )
        }),
        // Redirects.
        ("redir:out", "redirect", |x| format!("{x} > out.txt")),
        ("redir:append", "redirect", |x| format!("{x} >> out.txt")),
        ("redir:stderr", "redirect", |x| format!("{x} 2> err.txt")),
        ("redir:null", "redirect", |x| format!("{x} > /dev/null")),
        ("redir:null-2", "redirect", |x| format!("{x} 2>/dev/null")),
        ("redir:null-both", "redirect", |x| {
            format!("{x} &> /dev/null")
        }),
        ("redir:null-dup", "redirect", |x| {
            format!("{x} > /dev/null 2>&1")
        }),
        ("redir:in", "redirect", |x| format!("{x} < README.md")),
        ("redir:clobber", "redirect", |x| format!("{x} >| out.txt")),
        ("redir:rw", "redirect", |x| format!("{x} 1<> rw.txt")),
        ("redir:both-append", "redirect", |x| {
            format!("{x} &>> out.txt")
        }),
        ("redir:fd3", "redirect", |x| format!("{x} 3> out.txt")),
        ("redir:tmp", "redirect", |x| format!("{x} > /tmp/out.txt")),
        ("redir:tee", "redirect", |x| {
            format!("{x} 2>&1 | tee out.txt")
        }),
        ("redir:tee-null", "redirect", |x| {
            format!("{x} | tee /dev/null")
        }),
        ("redir:fen-settings", "fen-files", |x| {
            format!("{x} > .fen/settings.local.json")
        }),
        ("redir:fen-user", "fen-files", |x| {
            format!("{x} > ~/.config/fen/settings.json")
        }),
        ("redir:bashrc", "redirect", |x| {
            format!("{x} > \"$HOME/.bashrc\"")
        }),
        ("redir:exec", "redirect", |x| format!("exec > out.txt; {x}")),
        ("redir:group", "redirect", |x| {
            format!("{{ {x}; }} > out.txt")
        }),
        // Substitutions.
        ("subst:dq", "list", |x| format!("echo \"$({x})\"")),
        ("subst:backtick", "list", |x| format!("echo `{x}`")),
        ("subst:assign", "list", |x| format!("v=$({x})")),
        ("subst:nested", "list", |x| format!("echo $(echo $({x}))")),
        ("subst:proc-in", "list", |x| format!("cat <({x})")),
        ("subst:proc-diff", "list", |x| {
            format!("diff <({x}) README.md")
        }),
        ("subst:proc-out", "list", |x| {
            format!("echo hi | tee >({x})")
        }),
        ("subst:colon", "list", |x| format!(": \"$({x})\"")),
        ("subst:test", "list", |x| format!("[ -n \"$({x})\" ]")),
        ("subst:default", "list", |x| {
            format!("echo \"${{v:-$({x})}}\"")
        }),
        // Heredocs and here-strings fed to a shell.
        ("heredoc:quoted", "lossy", |x| {
            format!("bash <<'EOF'\n{x}\nEOF")
        }),
        ("heredoc:plain", "lossy", |x| {
            format!("bash <<EOF\n{x}\nEOF")
        }),
        ("heredoc:dash", "lossy", |x| {
            format!("sh <<-EOF\n\t{x}\n\tEOF")
        }),
        ("heredoc:cat-pipe", "lossy", |x| {
            format!("cat <<'EOF' | bash\n{x}\nEOF")
        }),
        ("heredoc:subst", "lossy", |x| {
            format!("cat <<EOF\n$({x})\nEOF")
        }),
        ("herestring:sq", "lossy", |x| format!("sh -s <<< {}", sq(x))),
        ("herestring:dq", "lossy", |x| format!("bash <<< {}", dq(x))),
        ("herestring:stdin", "lossy", |x| {
            format!("bash /dev/stdin <<< {}", sq(x))
        }),
        ("herestring:source", "lossy", |x| {
            format!("source /dev/stdin <<< {}", sq(x))
        }),
        ("pipe:echo-bash", "lossy", |x| {
            format!("echo {} | bash", sq(x))
        }),
        ("pipe:printf-sh", "lossy", |x| {
            format!("printf '%s\\n' {} | sh", sq(x))
        }),
        ("pipe:procsub-bash", "lossy", |x| {
            format!("bash < <(echo {})", sq(x))
        }),
        ("pipe:dot-procsub", "lossy", |x| {
            format!(". <(echo {})", sq(x))
        }),
        // Nesting, with every quoting form bash decodes.
        ("nest:bash-c-sq", "lossy", |x| format!("bash -c {}", sq(x))),
        ("nest:sh-c-dq", "lossy", |x| format!("sh -c {}", dq(x))),
        ("nest:dash-c", "lossy", |x| format!("dash -c {}", sq(x))),
        ("nest:eval-sq", "lossy", |x| format!("eval {}", sq(x))),
        ("nest:eval-dq", "lossy", |x| format!("eval {}", dq(x))),
        ("nest:eval-bare", "lossy", |x| format!("eval {x}")),
        ("nest:bash-c-ansi", "lossy", |x| {
            format!("bash -c {}", ansi(x))
        }),
        ("nest:bash-c-adjacent", "lossy", |x| {
            format!("bash -c {}", adjacent(x))
        }),
        ("nest:bash-c-backslash", "lossy", |x| {
            format!("bash -c {}", backslash(x))
        }),
        ("nest:bash-c-args", "lossy", |x| {
            format!("bash -c {} _ a b", sq(x))
        }),
        ("nest:sh-ec", "lossy", |x| format!("sh -ec {}", sq(x))),
        ("nest:dq-newline", "lossy", |x| {
            format!("bash -c \"echo ok\n{}\"", dq_escape(x))
        }),
        ("nest:sq-newline", "lossy", |x| {
            format!("bash -c 'echo ok\n{}'", x.replace('\'', "'\\''"))
        }),
        ("nest:eval-dq-newline", "lossy", |x| {
            format!("eval \"echo ok\n{}\"", dq_escape(x))
        }),
        ("nest:ansi-newline", "lossy", |x| {
            format!("bash -c $'echo ok\\n{}'", ansi_escape(x))
        }),
        ("nest:dq-escaped-subst", "lossy", |x| {
            format!("bash -c \"echo \\$({})\"", dq_escape(x))
        }),
        ("nest:dq-escaped-backtick", "lossy", |x| {
            format!("bash -c \"echo \\`{}\\`\"", dq_escape(x))
        }),
        ("nest:dq-continuation", "lossy", |x| {
            format!("bash -c \"echo ok;\\\n{}\"", dq_escape(x))
        }),
        ("nest:sq-adjacent-quote", "lossy", |x| {
            format!("bash -c 'echo '\\''ok'\\''; {}'", x.replace('\'', "'\\''"))
        }),
        ("nest:escaped-semicolon", "lossy", |x| {
            format!("bash -c \"echo ok\"\\;\" {}\"", dq_escape(x))
        }),
        ("nest:backslash-spaces", "lossy", |x| {
            format!("bash -c {}", backslash(&format!("echo ok; {x}")))
        }),
        // xargs and find -exec.
        ("xargs:arg", "wrapper", |x| {
            format!("echo README.md | xargs {x}")
        }),
        ("xargs:sh-c", "lossy", |x| {
            format!("echo . | xargs -I{{}} sh -c {}", sq(x))
        }),
        ("xargs:n1-bash", "lossy", |x| {
            format!("printf 'a\\n' | xargs -n1 bash -c {} _", sq(x))
        }),
        ("find:exec", "wrapper", |x| {
            format!("find . -maxdepth 0 -exec {x} \\;")
        }),
        ("find:exec-plus", "wrapper", |x| {
            format!("find . -name README.md -exec {x} {{}} +")
        }),
        ("find:exec-sh", "lossy", |x| {
            format!("find . -maxdepth 0 -exec sh -c {} \\;", sq(x))
        }),
        ("find:execdir-bash", "lossy", |x| {
            format!("find . -maxdepth 0 -execdir bash -c {} _ {{}} \\;", sq(x))
        }),
        // Lists and compound commands.
        ("list:pipe-in", "list", |x| format!("ls | {x}")),
        ("list:pipe-out", "list", |x| format!("{x} | head -5")),
        ("list:seq", "list", |x| format!("{x}; echo done")),
        ("list:and", "list", |x| format!("true && {x}")),
        ("list:or", "list", |x| format!("false || {x}")),
        ("list:subshell", "list", |x| format!("({x})")),
        ("list:group", "list", |x| format!("{{ {x}; }}")),
        ("list:background", "list", |x| format!("{x} & wait")),
        ("list:if", "list", |x| format!("if true; then {x}; fi")),
        ("list:for", "list", |x| format!("for i in 1; do {x}; done")),
        ("list:case", "list", |x| format!("case a in a) {x};; esac")),
        ("list:not", "list", |x| format!("! {x}")),
        ("list:pipe-both", "list", |x| format!("{x} |& cat")),
        ("list:newline-after", "list", |x| format!("ls\n{x}")),
        ("list:until", "list", |x| {
            format!("until {x}; do break; done")
        }),
        // Constructs: functions, coproc, traps, arithmetic, prompt expansion, aliases.
        ("construct:function", "construct", |x| {
            format!("f(){{ {x}; }}; f")
        }),
        ("construct:function-kw", "construct", |x| {
            format!("function f {{ {x}; }}; f")
        }),
        ("construct:function-subshell", "construct", |x| {
            format!("f() ( {x} ); f")
        }),
        ("construct:function-chain", "construct", |x| {
            format!("f(){{ {x}; }}; g(){{ f; }}; g")
        }),
        ("construct:function-in-subst", "construct", |x| {
            format!("f(){{ {x}; }}; echo \"$(f)\"")
        }),
        ("construct:function-named-ls", "construct", |x| {
            format!("ls(){{ unset -f ls; {x}; }}; ls")
        }),
        ("construct:function-named-git", "construct", |x| {
            format!("git(){{ unset -f git; {x}; }}; git status")
        }),
        ("construct:coproc", "construct", |x| format!("coproc {x}")),
        ("construct:coproc-named", "construct", |x| {
            format!("coproc c {{ {x}; }}; wait")
        }),
        ("construct:trap-exit", "construct", |x| {
            format!("trap {} EXIT; echo ok", sq(x))
        }),
        ("construct:trap-err", "construct", |x| {
            format!("trap {} ERR; false", sq(x))
        }),
        ("construct:trap-debug", "construct", |x| {
            format!("trap {} DEBUG; :", sq(x))
        }),
        ("construct:arith", "construct", |x| {
            format!("echo $(( $({x}) + 1 ))")
        }),
        ("construct:arith-cmd", "construct", |x| {
            format!("(( $({x}) 1 ))")
        }),
        ("construct:subscript-assign", "construct", |x| {
            format!("a[$({x})]=1")
        }),
        ("construct:subscript-expand", "construct", |x| {
            format!("echo \"${{a[$({x})]}}\"")
        }),
        ("construct:dbracket", "construct", |x| {
            format!("[[ $({x}) == y ]]")
        }),
        ("construct:dbracket-v", "construct", |x| {
            format!("[[ -v a[$({x})] ]]")
        }),
        ("construct:arith-indirect", "construct", |x| {
            format!("v={}; echo $(( v ))", sq(&format!("a[$({x})]")))
        }),
        ("construct:printf-v", "construct", |x| {
            format!("printf -v {} x", sq(&format!("a[$({x})]")))
        }),
        ("construct:read-subscript", "construct", |x| {
            format!("read {} <<< x", sq(&format!("a[$({x})]")))
        }),
        ("construct:unset-subscript", "construct", |x| {
            format!("unset {}", sq(&format!("a[$({x})]")))
        }),
        ("construct:prompt-P", "construct", |x| {
            format!("x={}; echo \"${{x@P}}\"", sq(&format!("$({x})")))
        }),
        ("construct:prompt-P-backtick", "construct", |x| {
            format!("x={}; echo ${{x@P}}", sq(&format!("`{x}`")))
        }),
        ("construct:indirect", "construct", |x| {
            format!("x={}; echo ${{!x}}", sq(&format!("a[$({x})]")))
        }),
        ("construct:ps4", "construct", |x| {
            format!("PS4={} bash -xc ls", sq(&format!("$({x})")))
        }),
        ("construct:mapfile-callback", "construct", |x| {
            format!("mapfile -C {} -c 1 < README.md", sq(&format!("{x};:")))
        }),
        ("construct:alias", "construct", |x| {
            format!("shopt -s expand_aliases\nalias ls={}\nls", sq(x))
        }),
        ("construct:declare-subscript", "construct", |x| {
            format!("declare -i n={}", sq(&format!("a[$({x})]")))
        }),
    ]
}

/// Probes: code-running and writing options of read-only programs, environment variables that
/// name programs, secrets, fen's own files, PATH tricks.
pub const PROBES: &[(&str, &str)] = &[
    // git: config that names a program, environment, other git dirs.
    ("option", "git -c core.pager=./payload.sh -p log"),
    ("option", "git -c core.pager='touch pwned' --paginate log --oneline"),
    ("option", "git -c pager.log=./payload.sh -p log"),
    ("option", "git -c alias.l='!./payload.sh' l"),
    ("option", "git -c alias.st='!touch pwned' st"),
    ("option", "git -c diff.external=./payload.sh diff"),
    ("option", "git -c diff.external=./payload.sh show HEAD"),
    ("option", "git -c core.fsmonitor=./payload.sh status"),
    ("option", "git -c diff.conv.textconv=./payload.sh diff"),
    ("option", "git -c diff.conv.textconv=./payload.sh log -p -2"),
    ("option", "git -c core.sshCommand=./payload.sh ls-remote ssh://h/r"),
    ("option", "git -c protocol.ext.allow=always ls-remote 'ext::sh -c touch% pwned'"),
    ("option", "git -c include.path=\"$PWD/.evil-git/config\" diff"),
    ("option", "PAYLOAD=./payload.sh git --config-env=core.pager=PAYLOAD -p log"),
    ("option", "git --git-dir=.evil-git diff"),
    ("option", "git --git-dir .evil-git status"),
    ("option", "git --git-dir=.evil-git -p log --oneline"),
    ("option", "git --exec-path=bin status"),
    ("option", "git log --output=pwned"),
    ("option", "git diff --output=pwned"),
    ("option", "git show --output=pwned HEAD"),
    ("option", "git diff --ext-diff"),
    ("option", "git format-patch -1"),
    ("option", "git archive -o pwned.tar HEAD"),
    ("option", "git archive --output=pwned.tar HEAD"),
    ("option", "git bundle create pwned.bundle HEAD"),
    ("option", "git branch newb"),
    ("option", "git tag newtag"),
    ("option", "git branch -D feature"),
    ("option", "git tag -d v1"),
    ("option", "git stash"),
    ("option", "git config a.b c"),
    ("option", "git config --file pwned a.b c"),
    ("option", "git remote add o x"),
    ("option", "git update-ref refs/heads/x HEAD"),
    ("option", "git checkout feature"),
    ("option", "git restore README.md"),
    ("option", "git ls-remote http://127.0.0.1:9/r"),
    ("option", "git fetch"),
    ("option", "git gc"),
    ("option", "git clean -n"),
    ("option", "git worktree list"),
    ("option", "git status --ignored"),
    ("option", "git blame --contents=.env README.md"),
    ("secret", "git diff --no-index README.md ~/.ssh/id_rsa"),
    ("secret", "git diff --no-index .env .env.example"),
    ("secret", "git grep -f .env"),
    ("option", "GIT_PAGER=./payload.sh git -p log"),
    ("option", "PAGER=./payload.sh git -p log"),
    ("option", "GIT_EXTERNAL_DIFF=./payload.sh git diff"),
    ("option", "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=diff.external GIT_CONFIG_VALUE_0=./payload.sh git diff"),
    ("option", "GIT_CONFIG_PARAMETERS=\"'core.fsmonitor'='./payload.sh'\" git status"),
    ("option", "GIT_CONFIG_GLOBAL=.evil-git/config git diff"),
    ("option", "GIT_DIR=.evil-git git diff"),
    ("option", "GIT_DIR=.evil-git git status"),
    ("option", "GIT_SSH_COMMAND=./payload.sh git ls-remote ssh://h/r"),
    ("option", "GIT_ASKPASS=./payload.sh git ls-remote https://127.0.0.1:9/r"),
    ("option", "GIT_TRACE=\"$PWD/trace.txt\" git status"),
    ("option", "GIT_TRACE2_EVENT=\"$PWD/trace.txt\" git log -1"),
    ("option", "GIT_INDEX_FILE=idx git status"),
    ("option", "HOME=\"$PWD/.evil-home\" git diff"),
    ("option", "XDG_CONFIG_HOME=.evil-xdg git diff"),
    ("option", "export GIT_EXTERNAL_DIFF=./payload.sh; git diff"),
    // The dynamic loader and the shell's own start-up files.
    ("option", "LD_PRELOAD=./evil.so ls"),
    ("option", "LD_PRELOAD=\"$PWD/evil.so\" cat README.md"),
    ("option", "LD_AUDIT=./evil.so ls"),
    ("option", "export LD_PRELOAD=$PWD/evil.so; git status"),
    ("option", "BASH_ENV=./payload.sh bash -c ls"),
    ("option", "BASH_ENV=./payload.sh ls"),
    ("option", "ENV=./payload.sh sh -c ls"),
    ("option", "SHELLOPTS=xtrace PS4='$(touch pwned)' bash -c ls"),
    // PATH and the command hash.
    ("construct", "PATH=bin:$PATH ls"),
    ("construct", "PATH=./bin git status"),
    ("construct", "export PATH=bin:$PATH; ls"),
    ("construct", "hash -p ./payload.sh ls; ls"),
    ("construct", "BASH_CMDS[ls]=./payload.sh; ls"),
    ("construct", "source ./payload.sh"),
    ("construct", ". ./payload.sh"),
    ("construct", "enable -n echo; echo hi"),
    ("construct", "command_not_found_handle(){ touch pwned; }; zzz-nonexistent"),
    ("construct", "cd bin && ls"),
    ("construct", "x(){ touch pwned; }; x & wait"),
    ("construct", "f(){ rm -f README.md; }; f"),
    ("construct", "foo='$(touch pwned)'; echo ${foo@P}"),
    ("construct", "coproc touch pwned"),
    // Programs' own code-running and writing options.
    ("option", "sed -n '1e touch pwned' README.md"),
    ("option", "sed -n 'e ./payload.sh' README.md"),
    ("option", "sed -n '1w pwned' README.md"),
    ("option", "sed -n 'w pwned' README.md"),
    ("option", "sed -n 's/.*/touch pwned/ep' README.md"),
    ("option", "sed -n 's/hello/x/w pwned' README.md"),
    ("option", "sed -ni 1p README.md"),
    ("option", "sed -n -i 1p README.md"),
    ("option", "sed -n --in-place=.bak 1p README.md"),
    ("option", "sed -n -e 1p -e '2e touch pwned' README.md"),
    ("option", "sed -n -f script.sed README.md"),
    ("option", "awk 'BEGIN{system(\"touch pwned\")}'"),
    ("option", "awk 'BEGIN{print > \"pwned\"}'"),
    ("option", "awk 'BEGIN{\"touch pwned\" | getline}'"),
    ("option", "awk '{print | \"sh\"}' README.md"),
    ("option", "awk 'BEGIN { printf \"x\" >> \"pwned\" }'"),
    ("option", "awk -v x=1 'BEGIN{system(\"./payload.sh\")}'"),
    ("option", "find . -maxdepth 0 -fprint pwned"),
    ("option", "find . -maxdepth 0 -fprintf pwned '%p'"),
    ("option", "find . -maxdepth 0 -fls pwned"),
    ("option", "find . -maxdepth 0 -exec touch pwned \\;"),
    ("option", "find . -name README.md -delete"),
    ("option", "find . -maxdepth 0 -execdir ./payload.sh \\;"),
    ("option", "find . -maxdepth 0 -ok touch pwned \\;"),
    ("option", "sort -o pwned README.md"),
    ("option", "sort --output=pwned README.md"),
    ("option", "sort README.md -o pwned"),
    ("option", "sort -S 1 --compress-program=./payload.sh README.md"),
    ("option", "uniq README.md pwned"),
    ("option", "split README.md pwned"),
    ("option", "tar -tf archive.tar --checkpoint=1 --checkpoint-action=exec=./payload.sh"),
    ("option", "tar -tf archive.tar -I ./payload.sh"),
    ("option", "tar -tf archive.tar --use-compress-program=./payload.sh"),
    ("option", "tar -tf archive.tar --to-command=./payload.sh"),
    ("option", "tar -tvf archive.tar --index-file=pwned"),
    ("option", "TAR_OPTIONS='--checkpoint=1 --checkpoint-action=exec=./payload.sh' tar -tf archive.tar"),
    ("option", "tar -xf archive.tar"),
    ("option", "tar xf archive.tar"),
    ("option", "tar -tf archive.tar -f pwned.tar"),
    ("option", "LESSOPEN='|./payload.sh %s' less README.md"),
    ("option", "LESSOPEN='||touch pwned' less README.md"),
    ("option", "LESSCLOSE='touch pwned %s %s' LESSOPEN='cat %s' less README.md"),
    ("option", "less -o pwned README.md"),
    ("option", "cat README.md | less -o pwned"),
    ("option", "cat README.md | less --log-file=pwned"),
    ("option", "man -P ./payload.sh ls"),
    ("option", "man --pager=./payload.sh ls"),
    ("option", "MANPAGER=./payload.sh man ls"),
    ("option", "PAGER=./payload.sh man ls"),
    ("option", "MANOPT='-P ./payload.sh' man ls"),
    ("option", "man -H./payload.sh ls"),
    ("option", "BROWSER=./payload.sh man -H ls"),
    ("option", "man ls"),
    ("option", "man -l README.md"),
    ("option", "jq -n 'input' README.md"),
    ("option", "jq . data.json > out.json"),
    ("option", "base64 -d README.md"),
    ("option", "base64 -o pwned README.md"),
    ("option", "od -w8 README.md"),
    ("option", "xxd README.md pwned"),
    ("option", "file -C -m README.md"),
    ("option", "date -s 2020-01-01"),
    ("option", "tree -o pwned"),
    ("option", "rg --pre ./payload.sh hello"),
    ("option", "script -qc ls pwned"),
    ("option", "env -S'sh -c \"touch pwned\"'"),
    ("option", "env --chdir=/ ls"),
    ("option", "timeout 5 ./payload.sh"),
    ("option", "nice ./payload.sh"),
    ("option", "xargs -a README.md echo"),
    ("option", "xargs -I{} touch {} < README.md"),
    ("option", "head -n 1 README.md > /dev/stdout"),
    ("option", "echo x > /dev/fd/1"),
    ("option", "echo x > /proc/self/fd/1"),
    ("option", "cat README.md /dev/null > /dev/null"),
    ("option", "printf '%s' x > pwned"),
    ("option", "echo x | tee pwned"),
    ("option", "echo x | tee -a README.md"),
    ("option", "echo x | tee >(cat)"),
    ("option", "wc --files0-from=README.md"),
    ("option", "ls --dired -R . > ls.txt"),
    ("option", "grep -r hello . --include=*.md"),
    // Secrets, by every spelling.
    ("secret", "cat .env"),
    ("secret", "cat ./.env"),
    ("secret", "cat src/../.env"),
    ("secret", "cat .e''nv"),
    ("secret", "cat .en?"),
    ("secret", "cat .e*v"),
    ("secret", "cat ~/.s*/id_rsa"),
    ("secret", "cat ~/.ssh/*"),
    ("secret", "cat ~+/.env"),
    ("secret", "cat $HOME/.ssh/id_rsa"),
    ("secret", "cat ${HOME}/.ssh/id_rsa"),
    ("secret", "cat \"$HOME\"/.aws/credentials"),
    ("secret", "cat -- .env"),
    ("secret", "cat < .env"),
    ("secret", "cat certs/server.pem"),
    ("secret", "cat certs/*.pem"),
    ("secret", "head -c 100 ~/.ssh/id_ed25519"),
    ("secret", "tail ~/.aws/credentials"),
    ("secret", "od -c ~/.ssh/id_rsa"),
    ("secret", "base64 .env"),
    ("secret", "xxd .env"),
    ("secret", "strings .env"),
    ("secret", "file .env"),
    ("secret", "wc -c .env"),
    ("secret", "nl .env"),
    ("secret", "tac .env"),
    ("secret", "rev .env"),
    ("secret", "cut -c1- .env"),
    ("secret", "fold .env"),
    ("secret", "paste .env"),
    ("secret", "uniq .env"),
    ("secret", "column .env"),
    ("secret", "diff .env .env.example"),
    ("secret", "cmp .env .env.example"),
    ("secret", "comm .env .env.example"),
    ("secret", "sort .env"),
    ("secret", "awk 1 .env"),
    ("secret", "sed -n p .env"),
    ("secret", "less .env"),
    ("secret", "grep KEY .env"),
    ("secret", "grep -r FAKE ~/.ssh"),
    ("secret", "grep -rn FAKE ."),
    ("secret", "grep -r FAKE ~/.aws"),
    ("secret", "jq . ~/.config/fen/auth.json"),
    ("secret", "jq -n --rawfile x .env '$x'"),
    ("secret", "jq -n --slurpfile x ~/.config/fen/auth.json '$x'"),
    ("secret", "date -f .env"),
    ("secret", "xargs -a .env echo"),
    ("secret", "tar -tf .env"),
    ("secret", "echo $(< .env)"),
    ("secret", "echo \"$(cat .env)\""),
    ("secret", "read -r x < .env; echo $x"),
    ("secret", "mapfile a < .env; echo $a"),
    ("secret", "while read l; do echo $l; done < .env"),
    ("secret", "source .env"),
    ("secret", ". ./.env"),
    ("secret", "f=.env; cat \"$f\""),
    ("secret", "cat $(echo .env)"),
    ("secret", "cd ~/.ssh && cat id_rsa"),
    ("secret", "cd .. && cat proj/.env"),
    ("secret", "cat /proc/self/cwd/.env"),
    ("secret", "find ~/.ssh -type f -exec cat {} +"),
    ("secret", "find . -name .env -exec cat {} \\;"),
    ("secret", "ls -la ~/.ssh"),
    ("secret", "git show HEAD:README.md ~/.ssh/id_rsa"),
    ("secret", "head -n1 ~/.config/fen/auth.json"),
    ("secret", "cp .env /dev/stdout"),
    // fen's own files.
    ("fen-files", "echo '{}' > .fen/settings.local.json"),
    ("fen-files", "echo '{}' > ~/.config/fen/settings.json"),
    ("fen-files", "rm .fen/settings.json"),
    ("fen-files", "mv .fen/settings.json .fen/old.json"),
    ("fen-files", ": > ~/.config/fen/trusted.json"),
    ("fen-files", "truncate -s 0 .fen/settings.json"),
    ("fen-files", "sed -i s/x/y/ .fen/settings.json"),
    ("fen-files", "cp README.md ~/.config/fen/approved.json"),
    ("fen-files", "tee .fen/settings.local.json < README.md"),
    ("fen-files", "cat .fen/settings.json"),
];

/// Nesting used by compositions: (origin, function).
fn nesters() -> Vec<(&'static str, Tf)> {
    transforms()
        .into_iter()
        .filter(|(o, _, _)| {
            o.starts_with("nest:") || o.starts_with("heredoc:") || o.starts_with("herestring:")
        })
        .map(|(o, _, f)| (o, f))
        .collect()
}

/// Every base command: read-only programs in each quoting style, payloads plain.
pub fn bases() -> Vec<(String, &'static str)> {
    let mut out = Vec::new();
    for argv in READ_ONLY {
        out.push((render(argv, Style::Plain), "read-only"));
    }
    for argv in PAYLOADS {
        out.push((render(argv, Style::Plain), "payload"));
    }
    for t in PAYLOAD_TEXT {
        out.push(((*t).to_string(), "payload"));
    }
    out
}

/// All candidates, deterministically from `seed`: each base in every quoting style, each base
/// under each single transform, each probe, then `random` compositions of 2-4 transforms
/// (1-3 levels of shell nesting) over bases with mixed quoting.
pub fn generate(seed: u64, random: usize) -> Vec<Cand> {
    let mut out = Vec::new();
    let push = |out: &mut Vec<Cand>, cmd: String, class: &str, origin: String| {
        out.push(Cand {
            cmd,
            class: class.to_string(),
            origin,
        });
    };
    // Quoting alone.
    for argv in READ_ONLY.iter().chain(PAYLOADS) {
        for style in &STYLES[1..] {
            push(
                &mut out,
                render(argv, *style),
                "lossy",
                format!("quote:{style:?}"),
            );
        }
    }
    // One transform over each base.
    let tfs = transforms();
    for (base, kind) in bases() {
        for (origin, class, f) in &tfs {
            push(&mut out, f(&base), class, format!("{origin} over {kind}"));
        }
    }
    for (class, cmd) in PROBES {
        push(&mut out, (*cmd).to_string(), class, "probe".into());
    }
    // Compositions.
    let mut rng = fastrand::Rng::with_seed(seed);
    let nest = nesters();
    let all_bases: Vec<&[&str]> = READ_ONLY.iter().chain(PAYLOADS).copied().collect();
    for _ in 0..random {
        let argv = all_bases[rng.usize(..all_bases.len())];
        let mut cmd = render_mixed(argv, &mut rng);
        let mut classes: Vec<&str> = vec!["lossy"];
        let mut origins: Vec<&str> = vec!["quote:mixed"];
        let steps = rng.usize(2..=4);
        let mut levels = 0;
        for _ in 0..steps {
            if levels < 3 && rng.bool() {
                let (o, f) = nest[rng.usize(..nest.len())];
                cmd = f(&cmd);
                origins.push(o);
                levels += 1;
            } else {
                let (o, c, f) = tfs[rng.usize(..tfs.len())];
                cmd = f(&cmd);
                origins.push(o);
                if !classes.contains(&c) {
                    classes.push(c);
                }
            }
        }
        push(&mut out, cmd, &classes.join("+"), origins.join(" > "));
    }
    // The same command twice is run once (the first origin names it).
    let mut seen = std::collections::HashSet::new();
    out.retain(|c| seen.insert(c.cmd.clone()));
    out
}
