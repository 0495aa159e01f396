//! The base protocol's framing: `Content-Length: N\r\n\r\n` then N bytes of JSON.
//!
//! Invariant: a frame is read whole or not at all; a header without a length, or a length over
//! [`MAX_FRAME`], is an error (the stream cannot be resynchronised after it).

use std::io::{self, BufRead, Write};

/// The largest message accepted (a workspace's symbols can be large; beyond this the server is
/// misbehaving).
pub(crate) const MAX_FRAME: usize = 64 * 1024 * 1024;

/// Reads one message's body; `None` at a clean end of the stream.
pub(crate) fn read_frame(reader: &mut dyn BufRead) -> io::Result<Option<Vec<u8>>> {
    let mut length = None;
    let mut line = String::new();
    let mut first = true;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            if first {
                return Ok(None);
            }
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "stream ended in a header"));
        }
        first = false;
        let header = line.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let Some(length) = length.filter(|length| *length <= MAX_FRAME) else {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "no valid Content-Length header"));
    };
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Some(body))
}

/// Writes one message.
pub(crate) fn write_frame(writer: &mut dyn Write, body: &[u8]) -> io::Result<()> {
    write!(writer, "Content-Length: {}\r\n\r\n", body.len())?;
    writer.write_all(body)?;
    writer.flush()
}
