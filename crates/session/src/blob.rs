//! The content-addressed blob store beside the logs: `sessions/blobs/<aa>/<rest of sha256>`.
//!
//! Large tool outputs and attachments live here; the log keeps a `BlobRef` with the address,
//! the size and a preview. Text blobs hold the UTF-8 text; image blobs hold the base64 text as
//! it was inline, and their media type carries a `;base64` suffix.
//! Invariant: a blob file written by `put` or `adopt`, once in place, holds exactly the bytes
//! whose SHA-256 names it; it is written to a temporary file and renamed, so a crash never leaves
//! a partial blob under its name. `put_unsynced` (checkpoints, where a write's latency counts)
//! writes in place; its readers check the hash (`get_verified`).

use std::io::Write;
use std::path::{Path, PathBuf};

use codecoder_protocol::{BlobRef, ContentItem, Image};
use sha2::{Digest, Sha256};

use crate::error::Result;

const PREVIEW_CHARS: usize = 400;
const TEXT_MEDIA_TYPE: &str = "text/plain; charset=utf-8";
const BASE64_SUFFIX: &str = ";base64";

/// A directory of blobs named by their SHA-256.
#[derive(Debug, Clone)]
pub struct BlobStore {
    dir: PathBuf,
}

impl BlobStore {
    /// The store in `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stores `bytes` (unless already there) and returns their lowercase hex SHA-256.
    pub fn put(&self, bytes: &[u8]) -> Result<String> {
        let sha = hex(&Sha256::digest(bytes));
        let path = self.path_of(&sha);
        if path.exists() {
            return Ok(sha);
        }
        let parent = path.parent().unwrap_or(&self.dir);
        fs_err::create_dir_all(parent)?;
        // The temporary file is this writer's own (process and call), so two threads or
        // processes storing the same content at once each rename a whole file into place.
        static PUTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = PUTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = parent.join(format!(".{sha}.{}-{n}.tmp", std::process::id()));
        let mut file = fs_err::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_data()?;
        drop(file);
        fs_err::rename(&tmp, &path)?;
        Ok(sha)
    }

    /// Stores `bytes` like `put`, without waiting for the disk and without a temporary file: the
    /// blob survives a crash of the process once written (the page cache has it) but maybe not
    /// of the machine, and a crash mid-write leaves it short. Readers that need it whole check
    /// it (`get_verified`). A blob already there with another size is written again.
    pub fn put_unsynced(&self, bytes: &[u8]) -> Result<String> {
        let sha = hex(&Sha256::digest(bytes));
        let path = self.path_of(&sha);
        if fs_err::metadata(&path).is_ok_and(|meta| meta.len() == bytes.len() as u64) {
            return Ok(sha);
        }
        // Written in place (no temporary file to rename): a blob cut short by a crash has the
        // wrong size, so the next `put_unsynced` of its content writes it again, and
        // `get_verified` refuses it meanwhile.
        let parent = path.parent().unwrap_or(&self.dir);
        if !parent.is_dir() {
            fs_err::create_dir_all(parent)?;
        }
        fs_err::write(&path, bytes)?;
        Ok(sha)
    }

    /// The bytes of a blob, checked against its name.
    ///
    /// # Errors
    /// `BlobDamaged` when they do not hash to it; `Io` when it cannot be read.
    pub fn get_verified(&self, sha256: &str) -> Result<Vec<u8>> {
        // A name from a log is data: one that is no SHA-256 names no blob (and is never cut
        // into a path inside a character).
        if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(crate::error::Error::BlobDamaged { path: self.dir.join(sha256) });
        }
        let bytes = self.get(sha256)?;
        if hex(&Sha256::digest(&bytes)) != sha256 {
            return Err(crate::error::Error::BlobDamaged { path: self.path_of(sha256) });
        }
        Ok(bytes)
    }

    /// Moves the file at `path` into the store (hashing it as a stream, so its size does not
    /// matter) and returns its SHA-256 and size. The file must be on the store's file system;
    /// when the blob already exists the file is removed instead.
    pub fn adopt(&self, path: &Path) -> Result<(String, u64)> {
        let mut file = fs_err::File::open(path)?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut size = 0u64;
        loop {
            let n = std::io::Read::read(&mut file, &mut buf)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            size += n as u64;
        }
        drop(file);
        let sha = hex(&hasher.finalize());
        let target = self.path_of(&sha);
        if target.exists() {
            fs_err::remove_file(path)?;
            return Ok((sha, size));
        }
        fs_err::create_dir_all(target.parent().unwrap_or(&self.dir))?;
        fs_err::rename(path, &target)?;
        Ok((sha, size))
    }

    /// The bytes of a blob.
    pub fn get(&self, sha256: &str) -> Result<Vec<u8>> {
        Ok(fs_err::read(self.path_of(sha256))?)
    }

    /// Where the blob named `sha256` lives.
    pub fn path_of(&self, sha256: &str) -> PathBuf {
        let (head, tail) = sha256.split_at(sha256.len().min(2));
        self.dir.join(head).join(tail)
    }

    /// Replaces `item` by a `BlobRef` when it is larger than `threshold` bytes.
    pub fn externalize(&self, item: &mut ContentItem, threshold: usize) -> Result<()> {
        let blob = match item {
            ContentItem::Text { text } if text.len() > threshold => BlobRef {
                sha256: self.put(text.as_bytes())?,
                size: text.len() as u64,
                media_type: TEXT_MEDIA_TYPE.to_owned(),
                preview: preview(text),
            },
            ContentItem::Image(image) if image.data_base64.len() > threshold => BlobRef {
                sha256: self.put(image.data_base64.as_bytes())?,
                size: image.data_base64.len() as u64,
                media_type: format!("{}{BASE64_SUFFIX}", image.media_type),
                preview: String::new(),
            },
            ContentItem::Text { .. } | ContentItem::Image(_) | ContentItem::BlobRef(_) => {
                return Ok(());
            }
        };
        *item = ContentItem::BlobRef(blob);
        Ok(())
    }

    /// The inline form of a `BlobRef` (text or image), read back from the store.
    pub fn resolve(&self, blob: &BlobRef) -> Result<ContentItem> {
        let bytes = self.get(&blob.sha256)?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Ok(match blob.media_type.strip_suffix(BASE64_SUFFIX) {
            Some(media_type) => {
                ContentItem::Image(Image { media_type: media_type.to_owned(), data_base64: text })
            }
            None => ContentItem::Text { text },
        })
    }
}

fn preview(text: &str) -> String {
    match text.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => text[..cut].to_owned(),
        None => text.to_owned(),
    }
}

/// The lowercase hex SHA-256 of `bytes`: a blob's name.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}
