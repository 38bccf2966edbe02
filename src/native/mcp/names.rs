//! Tool names as the model sees them: `mcp__SERVER__TOOL`, each part reduced to the characters
//! providers accept (`[A-Za-z0-9_-]`), at most 64 characters. A longer name keeps its head and
//! ends in `_` plus 8 hex digits of a hash of the full name, so it is the same on every run and
//! two long names that share their head still differ.

/// The most characters a tool name may have (OpenAI's and Anthropic's limit).
pub const MAX_LEN: usize = 64;

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitize(part: &str) -> String {
    part.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The prefix every tool of `server` has: `mcp__SERVER__`.
pub fn prefix(server: &str) -> String {
    format!("mcp__{}__", sanitize(server))
}

/// `mcp__SERVER__TOOL`, sanitized and at most [`MAX_LEN`] characters (stable: a hash suffix
/// of the unshortened name replaces the tail of a long one).
pub fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("{}{}", prefix(server), sanitize(tool));
    if full.len() <= MAX_LEN {
        return full;
    }
    // The hash is of the original (unsanitized) pair: `a.b` and `a_b` shortened differ too.
    let hash = xxhash_rust::xxh3::xxh3_64(format!("{server}\0{tool}").as_bytes());
    let suffix = format!("_{:08x}", hash as u32);
    // Sanitized names are ASCII, so any byte index is a char boundary.
    format!("{}{suffix}", &full[..MAX_LEN - suffix.len()])
}

/// Whether some tool of `server` could be named `fen_name`: it starts with the server's
/// prefix, or it is a shortened name (64 characters ending in `_` and 8 hex digits) whose kept
/// head agrees with the prefix as far as either goes (a long server name leaves its prefix cut).
pub fn could_produce(server: &str, fen_name: &str) -> bool {
    let prefix = prefix(server);
    if fen_name.starts_with(&prefix) {
        return true;
    }
    let head_len = MAX_LEN - 9;
    // Sanitized names are ASCII, so the byte indices below are char boundaries.
    let shortened = fen_name.len() == MAX_LEN
        && fen_name.is_ascii()
        && fen_name.as_bytes()[head_len] == b'_'
        && fen_name.as_bytes()[head_len + 1..]
            .iter()
            .all(u8::is_ascii_hexdigit);
    shortened && prefix.starts_with(&fen_name[..head_len])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shortened_name_leads_back_to_its_long_server() {
        let server = "a-server-with-a-name-much-longer-than-any-sane-person-would-pick";
        let name = tool_name(server, "echo");
        assert_eq!(name.len(), MAX_LEN);
        assert!(!name.starts_with(&prefix(server)));
        assert!(could_produce(server, &name));
        assert!(!could_produce("a-server", &name));
        assert!(!could_produce("other", &name));
        assert!(could_produce("fake", "mcp__fake__echo"));
        assert!(!could_produce("fake", "mcp__fak__echo"));
    }

    #[test]
    fn short_names_are_sanitized_and_long_ones_shortened_stably() {
        assert_eq!(tool_name("fake", "echo"), "mcp__fake__echo");
        assert_eq!(tool_name("my server", "a.b/c"), "mcp__my_server__a_b_c");
        let long = "a.b".repeat(27);
        let n = tool_name("fake", &long);
        assert_eq!(n.len(), MAX_LEN);
        assert_eq!(n, tool_name("fake", &long));
        assert!(n.starts_with("mcp__fake__a_b"));
        let other = tool_name("fake", &format!("{long}x"));
        assert_ne!(n, other);
        assert_eq!(other.len(), MAX_LEN);
        assert!(n
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
    }
}
