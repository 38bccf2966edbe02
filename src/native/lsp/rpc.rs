//! JSON-RPC 2.0 over a byte stream with LSP's `Content-Length` framing: one header block
//! (`Content-Length: N`, optionally `Content-Type`), a blank line, then N bytes of JSON.

use serde_json::Value;
use std::io::{BufRead, Write};

/// The largest message fen accepts from a server (a workspace symbol list of a huge project
/// stays far below; anything beyond is a broken stream).
pub const MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// Writes one message.
pub fn write_message(w: &mut impl Write, msg: &Value) -> std::io::Result<()> {
    let body = serde_json::to_vec(msg)?;
    write!(w, "Content-Length: {}\r\n\r\n", body.len())?;
    w.write_all(&body)?;
    w.flush()
}

/// Reads one message; `Ok(None)` at a clean end of stream. A header block without a length,
/// a length beyond [`MAX_MESSAGE`] or a body that is not JSON is an error.
pub fn read_message(r: &mut impl BufRead) -> std::io::Result<Option<Value>> {
    let bad = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
    let mut length: Option<usize> = None;
    let mut line = String::new();
    let mut any = false;
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return if any {
                Err(bad("the stream ended inside a header".into()))
            } else {
                Ok(None)
            };
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            if any {
                break;
            }
            // Stray blank lines between messages are harmless.
            continue;
        }
        any = true;
        if let Some((k, v)) = l.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                length = Some(
                    v.trim()
                        .parse()
                        .map_err(|_| bad(format!("bad Content-Length: {v}")))?,
                );
            }
        }
    }
    let n = length.ok_or_else(|| bad("a message without Content-Length".into()))?;
    if n > MAX_MESSAGE {
        return Err(bad(format!("a message of {n} bytes is too large")));
    }
    let mut body = vec![0; n];
    r.read_exact(&mut body)?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| bad(format!("a message that is not JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_and_tolerates_extra_headers() {
        let mut buf = Vec::new();
        write_message(&mut buf, &json!({"jsonrpc": "2.0", "id": 1, "result": "é"})).unwrap();
        buf.extend_from_slice(
            b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 2\r\n\r\n{}",
        );
        let mut r = std::io::Cursor::new(buf);
        assert_eq!(read_message(&mut r).unwrap().unwrap()["result"], "é");
        assert_eq!(read_message(&mut r).unwrap().unwrap(), json!({}));
        assert!(read_message(&mut r).unwrap().is_none());
    }

    #[test]
    fn broken_frames_are_errors() {
        let mut r = std::io::Cursor::new(b"X-Foo: 1\r\n\r\n{}".to_vec());
        assert!(read_message(&mut r).is_err());
        let mut r = std::io::Cursor::new(b"Content-Length: 5\r\n\r\n{}".to_vec());
        assert!(read_message(&mut r).is_err());
        let mut r = std::io::Cursor::new(b"Content-Length: 2\r\n".to_vec());
        assert!(read_message(&mut r).is_err());
    }
}
