//! The styles native draws with on its own: markdown (headings, inline code, links, ...) and
//! code highlighting (keywords, strings, ...), by semantic name. The defaults use the 16 base
//! colours; a user theme (settings.json `tui.theme`, through the TUI presenter) replaces any
//! of them with [`set`]. Every change bumps [`epoch`], so rendered markdown and highlighted
//! code are drawn again in the new styles.

use super::style::{Color, Style};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

/// One style native draws with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Heading,
    InlineCode,
    CodeBlock,
    Link,
    Bullet,
    Gutter,
    Comment,
    Str,
    Escape,
    Number,
    Keyword,
    Function,
    Type,
    Tag,
    Attribute,
    Builtin,
    Property,
}

/// Every role with its semantic name and default style.
const ROLES: [(Role, &str, Style); 17] = {
    use Color::*;
    let fg = Style::fg;
    [
        (Role::Heading, "markdown.heading", fg(Magenta).bold()),
        (Role::InlineCode, "markdown.code", fg(Cyan)),
        (Role::CodeBlock, "markdown.code_block", fg(Cyan)),
        (Role::Link, "markdown.link", fg(Blue).underline()),
        (Role::Bullet, "markdown.bullet", fg(Yellow)),
        (Role::Gutter, "markdown.gutter", Style::PLAIN.dim()),
        (Role::Comment, "code.comment", fg(BrightBlack).italic()),
        (Role::Str, "code.string", fg(Green)),
        (Role::Escape, "code.escape", fg(Cyan)),
        (Role::Number, "code.number", fg(Yellow)),
        (Role::Keyword, "code.keyword", fg(Magenta)),
        (Role::Function, "code.function", fg(Blue)),
        (Role::Type, "code.type", fg(Cyan)),
        (Role::Tag, "code.tag", fg(Blue)),
        (Role::Attribute, "code.attribute", fg(Yellow)),
        (Role::Builtin, "code.builtin", fg(Red)),
        (Role::Property, "code.property", fg(Blue)),
    ]
};

/// The styles of every role, indexed by `Role as usize`.
pub type Palette = [Style; ROLES.len()];

static CURRENT: RwLock<Option<Palette>> = RwLock::new(None);
static EPOCH: AtomicU64 = AtomicU64::new(0);

fn defaults() -> Palette {
    ROLES.map(|(_, _, style)| style)
}

/// The defaults with the roles named in `styles` replaced.
fn build(styles: &HashMap<String, Style>) -> Result<Palette, String> {
    let mut next = defaults();
    for (name, style) in styles {
        let i = ROLES
            .iter()
            .position(|(_, n, _)| n == name)
            .ok_or_else(|| {
                let known: Vec<&str> = names().collect();
                format!("unknown style {name:?} (known: {})", known.join(", "))
            })?;
        next[i] = *style;
    }
    Ok(next)
}

/// A copy of the current styles (cheap: a highlighter takes one per block).
pub fn snapshot() -> Palette {
    let current = *CURRENT.read().unwrap_or_else(|e| e.into_inner());
    current.unwrap_or_else(defaults)
}

/// The current style of `role`.
pub fn get(role: Role) -> Style {
    let current = CURRENT.read().unwrap_or_else(|e| e.into_inner());
    match &*current {
        Some(p) => p[role as usize],
        None => ROLES[role as usize].2,
    }
}

/// Bumped on every change: what was drawn in the old styles is drawn again.
pub fn epoch() -> u64 {
    EPOCH.load(Ordering::Acquire)
}

/// The semantic names, in order.
pub fn names() -> impl Iterator<Item = &'static str> {
    ROLES.iter().map(|(_, name, _)| *name)
}

/// Sets the styles: every role named in `styles` takes its style, every other role its
/// default. An unknown name is an error naming the known ones (nothing changes then).
pub fn set(styles: &HashMap<String, Style>) -> Result<(), String> {
    let next = build(styles)?;
    let mut current = CURRENT.write().unwrap_or_else(|e| e.into_inner());
    if current.unwrap_or_else(defaults) != next {
        *current = Some(next);
        EPOCH.fetch_add(1, Ordering::AcqRel);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // The palette is global and other tests draw with it: only the pure part is tested here
    // (tests/tui_inline.rs sets a theme end to end).
    #[test]
    fn roles_are_in_index_order_and_a_theme_replaces_only_what_it_names() {
        for (i, (role, _, _)) in ROLES.iter().enumerate() {
            assert_eq!(*role as usize, i);
        }
        let red = Style::fg(Color::Red);
        let p = build(&HashMap::from([("code.keyword".to_string(), red)])).unwrap();
        assert_eq!(p[Role::Keyword as usize], red);
        assert_eq!(p[Role::Str as usize], Style::fg(Color::Green));
        let err = build(&HashMap::from([("code.keywrd".to_string(), red)])).unwrap_err();
        assert!(
            err.contains("code.keywrd") && err.contains("code.keyword"),
            "{err}"
        );
    }
}
