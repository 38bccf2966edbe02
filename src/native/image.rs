//! Images for the `read` tool: a PNG, JPEG, GIF or WebP (recognised by content) becomes an
//! image a model can take. One that fits [`MAX_DIMENSION`] on both sides and [`MAX_BYTES`] goes
//! as it is (only its header is read, for the dimensions); a larger one is decoded, scaled down
//! to fit (aspect ratio kept) and encoded again: JPEG stays JPEG, the others become PNG, and
//! when that is still over [`MAX_BYTES`] it becomes JPEG, halved until it fits. Pure Rust and
//! blocking (decoding a big image takes milliseconds to seconds): callers run it off the Lua
//! thread.

use std::io::Cursor;

use base64::Engine as _;
use image::{DynamicImage, GenericImageView, ImageFormat, ImageReader};

use super::filetype;

/// Longest side sent to a model (what pi and the providers' own limits settle on).
pub const MAX_DIMENSION: u32 = 2000;
/// Largest encoded image sent (Anthropic refuses images over 5 MB; base64 adds a third).
pub const MAX_BYTES: usize = 3_750_000;
/// JPEG quality of re-encoded images.
const JPEG_QUALITY: u8 = 85;

/// An image ready for a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedImage {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime_type: &'static str,
    /// The image file's bytes, base64 (standard alphabet, padded).
    pub data: String,
    /// Size of what is sent, before base64.
    pub bytes: usize,
    pub width: u32,
    pub height: u32,
    /// Dimensions of the file as read (equal to `width`/`height` unless resized).
    pub original_width: u32,
    pub original_height: u32,
}

impl PreparedImage {
    /// Whether the image was scaled down or re-encoded.
    pub fn resized(&self) -> bool {
        (self.width, self.height) != (self.original_width, self.original_height)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("not a PNG, JPEG, GIF or WebP image")]
    NotAnImage,
    #[error("the {format} image is corrupt: {message}")]
    Decode {
        format: &'static str,
        message: String,
    },
    #[error("the image could not be encoded again after resizing: {0}")]
    Encode(String),
    #[error("`data` is not base64 (standard alphabet, padded): {0}")]
    Base64(String),
    #[error("the image is {bytes} bytes; the limit is {max} bytes")]
    TooLarge { bytes: usize, max: usize },
    #[error(
        "`mime_type` {0:?} is not supported: send image/png, image/jpeg, image/gif or image/webp"
    )]
    Mime(String),
}

/// Largest image a prompt may carry, before it is scaled down to [`MAX_BYTES`].
pub const MAX_PROMPT_BYTES: usize = 20 * 1024 * 1024;

/// The image types a model takes.
pub const MIME_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Prepares an image a client sent in a prompt: base64 `data` with its declared `mime_type`
/// (one of [`MIME_TYPES`]). The data is decoded in full, so a truncated or corrupt image is
/// refused here rather than by the provider; the type sent is the one the content shows.
pub fn from_base64(data: &str, mime_type: &str) -> Result<PreparedImage, ImageError> {
    if !MIME_TYPES.contains(&mime_type) {
        return Err(ImageError::Mime(mime_type.to_string()));
    }
    // Base64 is 4 characters for 3 bytes: refuse what is too large before decoding it.
    let estimate = data.len() / 4 * 3;
    if estimate > MAX_PROMPT_BYTES + 3 {
        return Err(ImageError::TooLarge {
            bytes: estimate,
            max: MAX_PROMPT_BYTES,
        });
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| ImageError::Base64(e.to_string()))?;
    if bytes.len() > MAX_PROMPT_BYTES {
        return Err(ImageError::TooLarge {
            bytes: bytes.len(),
            max: MAX_PROMPT_BYTES,
        });
    }
    prepare_checked(&bytes, true)
}

/// Prepares `bytes` (a whole image file) for a model; see the module documentation.
pub fn prepare(bytes: &[u8]) -> Result<PreparedImage, ImageError> {
    prepare_checked(bytes, false)
}

/// [`prepare`]; with `decode_all`, an image that fits is decoded in full too (not only its
/// header), so corrupt pixel data is an error.
fn prepare_checked(bytes: &[u8], decode_all: bool) -> Result<PreparedImage, ImageError> {
    let mime_type = filetype::image_mime(bytes).ok_or(ImageError::NotAnImage)?;
    let format = match mime_type {
        "image/png" => ImageFormat::Png,
        "image/jpeg" => ImageFormat::Jpeg,
        "image/gif" => ImageFormat::Gif,
        _ => ImageFormat::WebP,
    };
    let decode_err = |e: image::ImageError| ImageError::Decode {
        format: format_name(format),
        message: decoder_reason(&e.to_string()),
    };
    let (width, height) = ImageReader::with_format(Cursor::new(bytes), format)
        .into_dimensions()
        .map_err(decode_err)?;
    let fits = width <= MAX_DIMENSION && height <= MAX_DIMENSION && bytes.len() <= MAX_BYTES;
    if fits && decode_all {
        image::load_from_memory_with_format(bytes, format).map_err(decode_err)?;
    }
    if fits {
        return Ok(PreparedImage {
            mime_type,
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            bytes: bytes.len(),
            width,
            height,
            original_width: width,
            original_height: height,
        });
    }
    let decoded = image::load_from_memory_with_format(bytes, format).map_err(decode_err)?;
    let mut side = MAX_DIMENSION;
    let mut as_jpeg = format == ImageFormat::Jpeg;
    // Each pass either fits or tries smaller: at most a handful.
    loop {
        let scaled = fit(&decoded, side);
        let encoded = encode(&scaled, as_jpeg)?;
        if encoded.len() <= MAX_BYTES || side <= 250 {
            let (w, h) = scaled.dimensions();
            return Ok(PreparedImage {
                mime_type: if as_jpeg { "image/jpeg" } else { "image/png" },
                data: base64::engine::general_purpose::STANDARD.encode(&encoded),
                bytes: encoded.len(),
                width: w,
                height: h,
                original_width: width,
                original_height: height,
            });
        }
        if as_jpeg {
            side /= 2;
        }
        as_jpeg = true;
    }
}

/// The decoder's reason in one readable line: without the "Format error decoding Png:" lead,
/// and with the png crate's debug dump of a chunk type (`ChunkType { type: \0\0\0\0,
/// critical: true, ... }`) said in words.
fn decoder_reason(text: &str) -> String {
    let mut rest = text.lines().next().unwrap_or("").trim();
    if let Some(after) = rest
        .strip_prefix("Format error decoding ")
        .and_then(|r| r.split_once(": ").map(|(_, why)| why))
    {
        rest = after;
    }
    let mut out = String::new();
    while let Some(at) = rest.find("ChunkType {") {
        out.push_str(&rest[..at]);
        let dump = &rest[at..];
        let end = dump.find('}').map_or(dump.len(), |i| i + 1);
        let kind = dump
            .strip_prefix("ChunkType { type: ")
            .and_then(|t| t.split(',').next())
            .filter(|t| t.len() == 4 && t.bytes().all(|b| b.is_ascii_alphabetic()));
        match kind {
            Some(k) => out.push_str(&format!("chunk '{k}'")),
            None => out.push_str("a chunk with an invalid type"),
        }
        rest = &dump[end..];
        // "... } chunk appeared": the word "chunk" was already said.
        rest = rest.strip_prefix(" chunk").unwrap_or(rest);
    }
    out.push_str(rest);
    let out: String = out.chars().filter(|c| !c.is_control()).collect();
    if out.is_empty() {
        "the decoder gave no reason".to_string()
    } else {
        out
    }
}

fn format_name(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Png => "PNG",
        ImageFormat::Jpeg => "JPEG",
        ImageFormat::Gif => "GIF",
        _ => "WebP",
    }
}

/// The image scaled down (never up) so both sides are at most `side`.
fn fit(img: &DynamicImage, side: u32) -> DynamicImage {
    let (w, h) = img.dimensions();
    if w <= side && h <= side {
        return img.clone();
    }
    // Triangle: a clean downscale at a fraction of Lanczos's cost.
    img.resize(side, side, image::imageops::FilterType::Triangle)
}

fn encode(img: &DynamicImage, as_jpeg: bool) -> Result<Vec<u8>, ImageError> {
    let mut out = Cursor::new(Vec::new());
    let result = if as_jpeg {
        // JPEG has no alpha channel.
        let rgb = DynamicImage::ImageRgb8(img.to_rgb8());
        rgb.write_with_encoder(image::codecs::jpeg::JpegEncoder::new_with_quality(
            &mut out,
            JPEG_QUALITY,
        ))
    } else {
        img.write_to(&mut out, ImageFormat::Png)
    };
    result.map_err(|e| ImageError::Encode(e.to_string()))?;
    Ok(out.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> Vec<u8> {
        let img = image::RgbaImage::from_fn(w, h, |x, y| {
            image::Rgba([(x % 256) as u8, (y % 256) as u8, 7, 255])
        });
        let mut out = Cursor::new(Vec::new());
        DynamicImage::ImageRgba8(img)
            .write_to(&mut out, ImageFormat::Png)
            .unwrap();
        out.into_inner()
    }

    #[test]
    fn a_small_image_goes_unchanged() {
        let bytes = png(1, 1);
        let p = prepare(&bytes).unwrap();
        assert_eq!((p.mime_type, p.width, p.height), ("image/png", 1, 1));
        assert!(!p.resized());
        let back = base64::engine::general_purpose::STANDARD
            .decode(&p.data)
            .unwrap();
        assert_eq!(back, bytes);
    }

    #[test]
    fn a_large_image_is_scaled_to_fit_2000() {
        let p = prepare(&png(3000, 40)).unwrap();
        assert_eq!((p.width, p.height), (2000, 27));
        assert_eq!((p.original_width, p.original_height), (3000, 40));
        assert_eq!(p.mime_type, "image/png");
        let back = base64::engine::general_purpose::STANDARD
            .decode(&p.data)
            .unwrap();
        let img = image::load_from_memory(&back).unwrap();
        assert_eq!(img.dimensions(), (2000, 27));
    }

    #[test]
    fn a_broken_image_is_an_error_not_a_panic() {
        let err = prepare(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap_err();
        assert!(
            err.to_string().contains("the PNG image is corrupt: "),
            "{err}"
        );
        // A chunk of zeros where IHDR belongs: the chunk type in words, not a debug dump.
        let mut zeros = b"\x89PNG\r\n\x1a\n".to_vec();
        zeros.extend_from_slice(&[0; 64]);
        let err = prepare(&zeros).unwrap_err().to_string();
        assert_eq!(
            err,
            "the PNG image is corrupt: a chunk with an invalid type appeared before IHDR chunk"
        );
        assert!(matches!(prepare(b"text"), Err(ImageError::NotAnImage)));
    }

    #[test]
    fn a_prompt_image_is_checked_in_full() {
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let good = png(3, 2);
        let p = from_base64(&b64(&good), "image/png").unwrap();
        assert_eq!((p.width, p.height, p.mime_type), (3, 2, "image/png"));
        // The content decides the type sent.
        assert_eq!(
            from_base64(&b64(&good), "image/jpeg").unwrap().mime_type,
            "image/png"
        );
        assert!(matches!(
            from_base64(&b64(&good), "image/bmp"),
            Err(ImageError::Mime(_))
        ));
        assert!(matches!(
            from_base64("not base64!", "image/png"),
            Err(ImageError::Base64(_))
        ));
        assert!(matches!(
            from_base64(&b64(b"hello"), "image/png"),
            Err(ImageError::NotAnImage)
        ));
        // A valid header with its pixel data cut off: the header alone would pass.
        let cut = &good[..good.len() - 20];
        assert!(prepare(cut).is_ok());
        let err = from_base64(&b64(cut), "image/png").unwrap_err().to_string();
        assert!(err.contains("the PNG image is corrupt"), "{err}");
        let huge = "A".repeat(MAX_PROMPT_BYTES / 3 * 4 + 400);
        assert!(matches!(
            from_base64(&huge, "image/png"),
            Err(ImageError::TooLarge { .. })
        ));
    }
}
