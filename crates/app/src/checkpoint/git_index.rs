//! A reader of git's index file (`.git/index`, versions 2, 3 and 4, SHA-1 object names): the
//! tracked paths with the stat data git recorded for them and their blobs' object names.
//!
//! The change watcher uses it to tell, from one `lstat` per file, which tracked files still hold
//! the content the index names (git's own "stat clean" test), without hashing the tree.
//!
//! Invariants: only stage-0 entries that git expects in the work tree are returned (conflicted,
//! skip-worktree and intent-to-add entries are left out, so their paths count as not clean); an
//! index this reader does not understand (another signature or version, a split index, SHA-256
//! names, a truncated file) is an error, and the caller falls back to git's own snapshot.

use std::borrow::Cow;
use std::os::unix::fs::MetadataExt;

/// The length of a SHA-1 object name.
pub(crate) const OID_LEN: usize = 20;

/// The stat data an index entry records, as git truncates it (32 bits each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StatData {
    pub(crate) ctime: (u32, u32),
    pub(crate) mtime: (u32, u32),
    pub(crate) ino: u32,
    pub(crate) size: u32,
    /// Git's mode: `0o100644`, `0o100755`, `0o120000` (a symlink), `0o160000` (a submodule).
    pub(crate) mode: u32,
}

impl StatData {
    /// Whether `meta` (an `lstat`) still matches what the index recorded, as git decides it:
    /// same type, size, inode, change and modification times. Nanoseconds are compared only
    /// when the index recorded them (git built without them writes 0).
    pub(crate) fn matches(&self, meta: &std::fs::Metadata) -> bool {
        let symlink = meta.file_type().is_symlink();
        if (self.mode & 0o170000 == 0o120000) != symlink || !(symlink || meta.is_file()) {
            return false;
        }
        let time = |recorded: (u32, u32), sec: i64, nsec: i64| {
            recorded.0 == sec as u32 && (recorded.1 == 0 || recorded.1 == nsec as u32)
        };
        self.size == meta.size() as u32
            && self.ino == meta.ino() as u32
            && time(self.mtime, meta.mtime(), meta.mtime_nsec())
            && time(self.ctime, meta.ctime(), meta.ctime_nsec())
    }

    /// Whether the entry is "racily clean": written in the same instant as the index or
    /// after it, so a matching stat does not prove the content is the indexed one.
    pub(crate) fn racy(&self, index_mtime: (u32, u32)) -> bool {
        self.mtime >= index_mtime
    }
}

/// One tracked path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry<'a> {
    /// The path relative to the work tree's root, `/`-separated, as git stores it (borrowed
    /// from the index's bytes but in version 4, whose paths are prefix-compressed).
    pub(crate) path: Cow<'a, [u8]>,
    pub(crate) stat: StatData,
    pub(crate) oid: [u8; OID_LEN],
}

/// Why an index could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unsupported(pub(crate) String);

/// The entries of the index file `bytes`, in the index's order (sorted by path).
pub(crate) fn parse(bytes: &[u8]) -> Result<Vec<Entry<'_>>, Unsupported> {
    let fail = |what: &str| Unsupported(format!("git index: {what}"));
    let mut reader = Reader { bytes, at: 0 };
    if reader.take(4).ok_or_else(|| fail("truncated header"))? != b"DIRC" {
        return Err(fail("not an index file"));
    }
    let version = reader.u32().ok_or_else(|| fail("truncated header"))?;
    if !(2..=4).contains(&version) {
        return Err(fail(&format!("version {version} is not supported")));
    }
    let count = reader.u32().ok_or_else(|| fail("truncated header"))? as usize;
    let mut entries = Vec::with_capacity(count.min(bytes.len() / 62));
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = reader.at;
        let truncated = || fail("truncated entry");
        let mut words = [0u32; 10];
        for word in &mut words {
            *word = reader.u32().ok_or_else(truncated)?;
        }
        let oid: [u8; OID_LEN] =
            reader.take(OID_LEN).ok_or_else(truncated)?.try_into().map_err(|_| truncated())?;
        let flags = reader.u16().ok_or_else(truncated)?;
        let extended = flags & 0x4000 != 0;
        let mut skip = false;
        if extended {
            if version < 3 {
                return Err(fail("an extended entry in a version 2 index"));
            }
            let more = reader.u16().ok_or_else(truncated)?;
            // skip-worktree (0x4000) or intent-to-add (0x2000): not a work-tree file git vouches for.
            skip = more & 0x6000 != 0;
        }
        let stage = (flags >> 12) & 0x3;
        let path = if version == 4 {
            let strip = reader.varint().ok_or_else(truncated)?;
            let keep = previous.len().checked_sub(strip).ok_or_else(|| fail("bad path prefix"))?;
            let suffix = reader.until_nul().ok_or_else(truncated)?;
            let mut path = previous[..keep].to_vec();
            path.extend_from_slice(suffix);
            previous.clone_from(&path);
            Cow::Owned(path)
        } else {
            let path = reader.until_nul().ok_or_else(truncated)?;
            // Entries are NUL-padded to a multiple of eight bytes (the NUL read counts).
            let len = reader.at - start;
            reader.at = start + len.div_ceil(8) * 8;
            if reader.at > bytes.len() {
                return Err(truncated());
            }
            Cow::Borrowed(path)
        };
        if stage != 0 || skip {
            continue;
        }
        let [ctime_s, ctime_ns, mtime_s, mtime_ns, _dev, ino, mode, _uid, _gid, size] = words;
        let stat =
            StatData { ctime: (ctime_s, ctime_ns), mtime: (mtime_s, mtime_ns), ino, size, mode };
        entries.push(Entry { path, stat, oid });
    }
    // A split index keeps most entries in a shared file this reader does not follow.
    while bytes.len().saturating_sub(reader.at) > OID_LEN {
        let Some(signature) = reader.take(4) else { break };
        if signature == b"link" {
            return Err(fail("a split index is not supported"));
        }
        let Some(size) = reader.u32() else { break };
        reader.at = reader.at.saturating_add(size as usize);
    }
    Ok(entries)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let slice = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(slice)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }

    fn until_nul(&mut self) -> Option<&'a [u8]> {
        let rest = self.bytes.get(self.at..)?;
        let len = memchr_nul(rest)?;
        self.at += len + 1;
        Some(&rest[..len])
    }

    /// Git's offset varint (index v4's prefix length).
    fn varint(&mut self) -> Option<usize> {
        let mut byte = *self.take(1)?.first()?;
        let mut value = usize::from(byte & 0x7f);
        while byte & 0x80 != 0 {
            byte = *self.take(1)?.first()?;
            value =
                value.checked_add(1)?.checked_mul(128)?.checked_add(usize::from(byte & 0x7f))?;
        }
        Some(value)
    }
}

fn memchr_nul(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|byte| *byte == 0)
}

#[cfg(test)]
pub(crate) mod tests;
