//! HTML for the model: Markdown through `htmd` (Apache-2.0; turndown's rules) or plain text,
//! with `<script>`, `<style>` and other non-content elements dropped.

/// Elements whose content is never shown to the model.
const DROPPED: [&str; 6] = ["script", "style", "noscript", "template", "iframe", "svg"];

/// HTML converted to Markdown.
pub fn to_markdown(html: &str) -> std::io::Result<String> {
    htmd::HtmlToMarkdown::builder()
        .skip_tags(DROPPED.to_vec())
        .build()
        .convert(html)
}

/// Elements that end a line of text.
const BLOCKS: [&str; 22] = [
    "p",
    "div",
    "br",
    "li",
    "tr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "section",
    "article",
    "header",
    "footer",
    "pre",
    "blockquote",
    "table",
    "ul",
    "ol",
    "hr",
    "title",
];

/// HTML as plain text: tags removed (block elements end lines), dropped elements' content
/// removed, common entities decoded, blank runs collapsed.
pub fn to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        out.push_str(&decode_entities(&rest[..lt]));
        rest = &rest[lt..];
        if rest.starts_with("<!--") {
            rest = rest.find("-->").map_or("", |e| &rest[e + 3..]);
            continue;
        }
        let Some(gt) = rest.find('>') else {
            rest = "";
            break;
        };
        let tag = &rest[1..gt];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        rest = &rest[gt + 1..];
        if !closing && DROPPED.contains(&name.as_str()) {
            // Skip to the matching close tag (case-insensitive).
            let close = format!("</{name}");
            let lower = rest.to_ascii_lowercase();
            rest = match lower.find(&close) {
                Some(i) => rest[i..].find('>').map_or("", |e| &rest[i + e + 1..]),
                None => "",
            };
            continue;
        }
        if BLOCKS.contains(&name.as_str()) {
            out.push('\n');
        } else if name == "td" || name == "th" {
            out.push(' ');
        }
    }
    out.push_str(&decode_entities(rest));
    // Collapse spaces within lines and runs of blank lines.
    let mut text = String::with_capacity(out.len());
    let mut blank = 0;
    for line in out.lines() {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if line.is_empty() {
            blank += 1;
            if blank > 1 || text.is_empty() {
                continue;
            }
        } else {
            blank = 0;
        }
        text.push_str(&line);
        text.push('\n');
    }
    text.trim_end().to_string()
}

fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let end = rest.find(';').filter(|&e| e <= 10);
        let decoded = end.and_then(|e| {
            let ent = &rest[1..e];
            let c = match ent {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "nbsp" => Some(' '),
                _ => ent
                    .strip_prefix("#x")
                    .or_else(|| ent.strip_prefix("#X"))
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .or_else(|| ent.strip_prefix('#').and_then(|d| d.parse().ok()))
                    .and_then(char::from_u32),
            }?;
            Some((c, e + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "<html><head><title>T</title><style>body{color:red}</style></head><body><h1>Hello</h1><p>A <a href=\"/x\">link</a> &amp; <b>bold</b>.</p><script>x()</script><ul><li>one</li><li>two</li></ul></body></html>";

    #[test]
    fn markdown_keeps_structure_and_drops_scripts_and_styles() {
        let md = to_markdown(PAGE).unwrap();
        assert!(md.contains("# Hello"), "{md}");
        assert!(md.contains("[link](/x)"), "{md}");
        assert!(md.contains("**bold**"), "{md}");
        assert!(md.contains("one"), "{md}");
        assert!(!md.contains("x()"), "{md}");
        assert!(!md.contains("color:red"), "{md}");
    }

    #[test]
    fn text_strips_tags_and_decodes_entities() {
        let t = to_text(PAGE);
        assert!(t.contains("Hello\n"), "{t}");
        assert!(t.contains("A link & bold."), "{t}");
        assert!(!t.contains("x()"), "{t}");
        assert!(!t.contains("color"), "{t}");
        assert_eq!(
            to_text("a&#x41;&#66;&bogus; <SCRIPT>y</script>b"),
            "aAB&bogus; b"
        );
    }
}
