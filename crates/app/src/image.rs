//! Images a person attaches to a prompt, read from files and known by their first bytes.
//!
//! Invariant: only PNG, JPEG, GIF and WebP are accepted, the formats every provider takes.

use std::path::Path;

use base64::Engine as _;
use codecoder_protocol::Image;

use crate::error::{Error, Result};

/// The image in `path`, base64-encoded with its media type.
///
/// # Errors
/// `Usage` when the file cannot be read or is not a PNG, JPEG, GIF or WebP image.
pub fn read_image(path: &Path) -> Result<Image> {
    let bytes = fs_err::read(path).map_err(|err| Error::usage(err.to_string()))?;
    // A file shorter than a PNG's 8-byte signature is no image, whatever it starts with.
    let media_type = image_type(bytes.get(..8).unwrap_or_default()).ok_or_else(|| {
        Error::usage(format!("{}: not a PNG, JPEG, GIF or WebP image", path.display()))
    })?;
    Ok(Image {
        media_type: media_type.to_owned(),
        data_base64: base64::engine::general_purpose::STANDARD.encode(&bytes),
    })
}

/// The media type of an image by its first bytes.
pub fn image_type(bytes: &[u8]) -> Option<&'static str> {
    match bytes.get(..4)? {
        [0x89, b'P', b'N', b'G'] => Some("image/png"),
        [0xff, 0xd8, 0xff, _] => Some("image/jpeg"),
        [b'G', b'I', b'F', b'8'] => Some("image/gif"),
        [b'R', b'I', b'F', b'F'] => Some("image/webp"),
        _ => None,
    }
}
