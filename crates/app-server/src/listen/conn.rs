//! One WebSocket client served by the same `serve` as stdio: its text frames become the lines
//! `serve` reads, the lines `serve` writes become text frames. Threads of a connection: a frame
//! reader (`app-server-ws-reader`), a frame writer (`app-server-ws-writer`, the only one that
//! writes to the socket) and the connection's own thread running `serve`.
//!
//! Invariants: at most `OUTGOING_FRAMES` messages wait for a client; one more, or a write that
//! stalls for `WRITE_TIMEOUT`, drops the client (its socket is shut down, which ends the reader,
//! which ends `serve`, which shuts the client's agents down). Incoming frames wait in a queue of
//! `INCOMING_FRAMES`; past that the reader stops reading, so a fast client is slowed by TCP.

use std::io::{self, BufRead, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use codecoder_stdx::spawn_named;
use crossbeam_channel::{Receiver, Sender, TrySendError};
use tungstenite::protocol::{Role, WebSocketConfig};
use tungstenite::{Message, WebSocket};

/// Messages that may wait for a client before it is dropped as not reading.
pub const OUTGOING_FRAMES: usize = 1024;
/// Frames read ahead of the server.
const INCOMING_FRAMES: usize = 64;
/// How long one write to a client may stall before it is dropped as not reading.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// A connected stream a client speaks on: TCP, or a unix socket.
pub(crate) trait Socket: Read + Write + Send + Sync + Sized + 'static {
    /// Another handle on the same socket.
    fn try_clone(&self) -> io::Result<Self>;
    /// Ends both directions, for every handle.
    fn shutdown(&self) -> io::Result<()>;
    /// How long a read may wait.
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
    /// How long a write may wait.
    fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
}

macro_rules! socket {
    ($type:ty) => {
        impl Socket for $type {
            fn try_clone(&self) -> io::Result<Self> {
                <$type>::try_clone(self)
            }
            fn shutdown(&self) -> io::Result<()> {
                <$type>::shutdown(self, Shutdown::Both)
            }
            fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
                <$type>::set_read_timeout(self, timeout)
            }
            fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
                <$type>::set_write_timeout(self, timeout)
            }
        }
    };
}

socket!(TcpStream);
socket!(UnixStream);

/// What the frame writer sends.
pub(crate) enum Outgoing {
    /// A JSON-RPC message.
    Text(String),
    /// Bytes the reader's WebSocket wrote (pong and close replies), already framed.
    Raw(Vec<u8>),
}

/// How a served connection ended.
pub(crate) enum Ended {
    /// The client closed it, or the server finished with it.
    Closed,
    /// The client did not read what it was sent.
    NotReading,
    /// A thread of the connection could not start.
    Failed(String),
}

/// Serves the upgraded `stream` (with `rest`, bytes the client sent after its handshake) until
/// the client goes.
pub(crate) fn serve_websocket<S: Socket>(
    stream: &S,
    rest: Vec<u8>,
    config: crate::ServeConfig,
) -> Ended {
    let clone = || stream.try_clone();
    let (Ok(read_side), Ok(write_side), Ok(kill)) = (clone(), clone(), clone()) else {
        return Ended::Failed("cloning the socket".to_owned());
    };
    let _ = stream.set_read_timeout(None);
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let (frames_tx, frames_rx) = crossbeam_channel::bounded::<Vec<u8>>(INCOMING_FRAMES);
    let (out_tx, out_rx) = crossbeam_channel::bounded::<Outgoing>(OUTGOING_FRAMES);
    let not_reading = Arc::new(AtomicBool::new(false));
    let writer = {
        let not_reading = Arc::clone(&not_reading);
        spawn_named("app-server-ws-writer", move || write_frames(write_side, &out_rx, &not_reading))
    };
    let Ok(writer) = writer else {
        return Ended::Failed("starting the frame writer".to_owned());
    };
    let pongs = out_tx.clone();
    let reader = spawn_named("app-server-ws-reader", move || {
        read_frames(read_side, rest, pongs, &frames_tx)
    });
    let Ok(reader) = reader else {
        let _ = stream.shutdown();
        return Ended::Failed("starting the frame reader".to_owned());
    };
    let output = FrameWriter {
        queue: out_tx,
        pending: Vec::new(),
        socket: kill,
        not_reading: Arc::clone(&not_reading),
    };
    let served = crate::serve(config, Box::new(FrameReader::new(frames_rx)), Box::new(output));
    // `serve` returns once the reader ended; the writer ends once every sender is gone.
    drop(reader);
    drop(writer);
    match served {
        Err(err) => Ended::Failed(err.to_string()),
        Ok(()) if not_reading.load(Ordering::SeqCst) => Ended::NotReading,
        Ok(()) => Ended::Closed,
    }
}

fn websocket_config() -> WebSocketConfig {
    // A message may carry images: codex's own limit of a message is larger than a line needs.
    WebSocketConfig::default().max_message_size(Some(64 << 20)).max_frame_size(Some(16 << 20))
}

/// The reader's socket: reads from the client; what its WebSocket writes (replies to pings and
/// to a close) goes to the frame writer, so only one thread writes to the socket.
struct ReadSide<S> {
    stream: S,
    replies: Sender<Outgoing>,
}

impl<S: Socket> Read for ReadSide<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.read(buf)
    }
}

impl<S: Socket> Write for ReadSide<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // A reply dropped because the queue is full belongs to a client about to be dropped.
        match self.replies.try_send(Outgoing::Raw(buf.to_vec())) {
            Ok(()) | Err(TrySendError::Full(_)) => Ok(buf.len()),
            Err(TrySendError::Disconnected(_)) => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn read_frames<S: Socket>(
    stream: S,
    rest: Vec<u8>,
    replies: Sender<Outgoing>,
    frames: &Sender<Vec<u8>>,
) {
    let side = ReadSide { stream, replies };
    let mut socket =
        WebSocket::from_partially_read(side, rest, Role::Server, Some(websocket_config()));
    loop {
        match socket.read() {
            Ok(Message::Text(text)) => {
                // Raw line breaks can only be whitespace between JSON tokens (a JSON string
                // cannot hold one), so a pretty-printed message stays one line.
                let mut line = text.as_str().replace(['\r', '\n'], " ").into_bytes();
                line.push(b'\n');
                if frames.send(line).is_err() {
                    break;
                }
            }
            // Binary frames are not part of the protocol; tungstenite answers pings and closes.
            Ok(Message::Binary(_) | Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => {}
            Ok(Message::Close(_)) => {}
            Err(_) => break,
        }
    }
}

fn write_frames<S: Socket>(stream: S, messages: &Receiver<Outgoing>, not_reading: &AtomicBool) {
    let mut socket = WebSocket::from_raw_socket(stream, Role::Server, Some(websocket_config()));
    for message in messages {
        let written = match message {
            Outgoing::Text(text) => socket.send(Message::text(text)).map_err(|err| match err {
                tungstenite::Error::Io(err) => err,
                other => io::Error::other(other),
            }),
            Outgoing::Raw(bytes) => {
                socket.get_mut().write_all(&bytes).and_then(|()| socket.get_mut().flush())
            }
        };
        if let Err(err) = written {
            if matches!(err.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) {
                not_reading.store(true, Ordering::SeqCst);
            }
            // Ends the reader too, and with it the server's side of this client.
            let _ = socket.get_ref().shutdown();
            return;
        }
    }
    // Every producer is gone: the server is done with this client.
    let _ = socket.close(None);
    let _ = socket.flush();
    let _ = socket.get_ref().shutdown();
}

/// The lines `serve` reads: one per text frame.
pub(crate) struct FrameReader {
    frames: Receiver<Vec<u8>>,
    current: Vec<u8>,
    at: usize,
}

impl FrameReader {
    pub(crate) fn new(frames: Receiver<Vec<u8>>) -> Self {
        Self { frames, current: Vec::new(), at: 0 }
    }
}

impl Read for FrameReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for FrameReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.at >= self.current.len() {
            // The reader gone is the end of the client's input.
            match self.frames.recv() {
                Ok(frame) => {
                    self.current = frame;
                    self.at = 0;
                }
                Err(_) => return Ok(&[]),
            }
        }
        Ok(&self.current[self.at..])
    }

    fn consume(&mut self, amount: usize) {
        self.at = (self.at + amount).min(self.current.len());
    }
}

/// The lines `serve` writes: each whole line becomes a text frame.
pub(crate) struct FrameWriter<S> {
    queue: Sender<Outgoing>,
    /// A line written in pieces, until its newline.
    pending: Vec<u8>,
    /// Shut down when the client is dropped, which ends its reader.
    socket: S,
    not_reading: Arc<AtomicBool>,
}

impl<S: Socket> FrameWriter<S> {
    #[cfg(test)]
    pub(crate) fn new(queue: Sender<Outgoing>, socket: S, not_reading: Arc<AtomicBool>) -> Self {
        Self { queue, pending: Vec::new(), socket, not_reading }
    }
}

impl<S: Socket> Write for FrameWriter<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line[..end]).into_owned();
            match self.queue.try_send(Outgoing::Text(text)) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    self.not_reading.store(true, Ordering::SeqCst);
                    let _ = self.socket.shutdown();
                    return Err(io::Error::other("the client is not reading: dropped"));
                }
                Err(TrySendError::Disconnected(_)) => return Err(io::ErrorKind::BrokenPipe.into()),
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
