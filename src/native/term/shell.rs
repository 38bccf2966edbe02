//! Shell command highlighting for `bash` tool rows, with the tree-sitter bash grammar the
//! permission analyser already links (synchronous: a command line parses in microseconds, so
//! the row is coloured when it is first drawn). Colours follow the code highlighting's: the
//! command name blue, keywords and operators magenta, strings green, expansions cyan, flags
//! and numbers yellow, comments bright black. Newlines show as `↵`.

use super::style::{Color, Span, Style};
use std::cell::RefCell;
use tree_sitter::{Node, Parser};

/// Commands longer than this are shown plain (a row shows a line's worth anyway).
const MAX_BYTES: usize = 16 * 1024;

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

fn style_of(node: &Node, src: &[u8]) -> Option<Style> {
    let kind = node.kind();
    let st = match kind {
        "comment" => Style::fg(Color::BrightBlack).italic(),
        "string" | "raw_string" | "ansi_c_string" | "heredoc_body" | "translated_string" => {
            Style::fg(Color::Green)
        }
        "simple_expansion" | "expansion" | "command_substitution" | "variable_name" => {
            Style::fg(Color::Cyan)
        }
        "command_name" => Style::fg(Color::Blue).bold(),
        "number" | "file_descriptor" => Style::fg(Color::Yellow),
        "word" if src.get(node.start_byte()) == Some(&b'-') => Style::fg(Color::Yellow),
        _ if !node.is_named() => match kind {
            "&&" | "||" | "|" | "|&" | ";" | ";;" | "&" | ">" | ">>" | "<" | "<<" | "<<<"
            | ">&" | "&>" | "&>>" | "2>" | "if" | "then" | "else" | "elif" | "fi" | "for"
            | "in" | "do" | "done" | "while" | "until" | "case" | "esac" | "function"
            | "select" | "!" => Style::fg(Color::Magenta),
            _ => return None,
        },
        _ => return None,
    };
    Some(st)
}

/// Byte ranges with their style, outermost match wins (a string's inner expansion stays green
/// except a `$(...)`, which is cyan as a whole).
fn walk(node: Node, src: &[u8], out: &mut Vec<(usize, usize, Style)>) {
    if let Some(st) = style_of(&node, src) {
        out.push((node.start_byte(), node.end_byte(), st));
        return;
    }
    let mut c = node.walk();
    for child in node.children(&mut c) {
        walk(child, src, out);
    }
}

fn push(out: &mut Vec<Span>, text: &str, style: Style) {
    if text.is_empty() {
        return;
    }
    let text = text
        .replace("\r\n", "↵")
        .replace('\n', "↵")
        .replace('\t', " ");
    match out.last_mut() {
        Some(last) if last.style == style => last.text.push_str(&text),
        _ => out.push(Span::new(text, style)),
    }
}

/// The command as styled spans (plain when it does not parse or is too long).
pub fn highlight(command: &str) -> Vec<Span> {
    let mut out = Vec::new();
    if command.len() > MAX_BYTES {
        push(&mut out, command, Style::PLAIN);
        return out;
    }
    // tree-sitter-bash can crash on some non-ASCII input (see policy::shell): parse an ASCII
    // stand-in of the same length and take the text from the original.
    let ascii: Vec<u8> = command
        .bytes()
        .map(|b| if b.is_ascii() { b } else { b'a' })
        .collect();
    let tree = PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut p = Parser::new();
            p.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
            *slot = Some(p);
        }
        slot.as_mut()?.parse(&ascii, None)
    });
    let Some(tree) = tree else {
        push(&mut out, command, Style::PLAIN);
        return out;
    };
    let mut ranges = Vec::new();
    walk(tree.root_node(), &ascii, &mut ranges);
    ranges.sort_by_key(|r| r.0);
    let mut at = 0;
    for (s, e, st) in ranges {
        if s < at || !command.is_char_boundary(s) || !command.is_char_boundary(e) {
            continue;
        }
        push(&mut out, &command[at..s], Style::PLAIN);
        push(&mut out, &command[s..e], st);
        at = e;
    }
    push(&mut out, &command[at..], Style::PLAIN);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn style(spans: &[Span], text: &str) -> Option<Style> {
        spans.iter().find(|s| s.text == text).map(|s| s.style)
    }

    #[test]
    fn names_operators_strings_and_flags() {
        let s = highlight("grep -n \"fn main\" src/*.rs && echo $HOME | wc -l # count");
        let text: String = s.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            text,
            "grep -n \"fn main\" src/*.rs && echo $HOME | wc -l # count"
        );
        assert_eq!(style(&s, "grep"), Some(Style::fg(Color::Blue).bold()));
        assert_eq!(style(&s, "-n"), Some(Style::fg(Color::Yellow)));
        assert_eq!(style(&s, "\"fn main\""), Some(Style::fg(Color::Green)));
        assert_eq!(style(&s, "&&"), Some(Style::fg(Color::Magenta)));
        assert_eq!(style(&s, "$HOME"), Some(Style::fg(Color::Cyan)));
        assert_eq!(
            style(&s, "# count"),
            Some(Style::fg(Color::BrightBlack).italic())
        );
    }

    #[test]
    fn multi_line_and_non_ascii_commands_keep_their_text() {
        let s = highlight("for f in *; do\n  echo \"é $f\"\ndone");
        let text: String = s.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(text, "for f in *; do↵  echo \"é $f\"↵done");
        assert_eq!(style(&s, "for"), Some(Style::fg(Color::Magenta)));
    }
}
