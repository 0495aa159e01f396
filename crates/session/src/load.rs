//! Reading a log back: parse, validate, report what a crash left, and plan its repair.
//!
//! The last line of a file is torn when it lacks its newline or does not parse: a crash cut it.
//! It is dropped and reported (`TornTail`). Any other line that does not parse is an error naming
//! the file and line; nothing is skipped silently. A record whose `type` this version does not
//! know is kept as an `UnknownRecord` (its seq still has to increase) and reported.
//! Invariant: loading never writes; repairing only appends records (`closing_records`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use codecoder_protocol::{
    Record, RecordBody, SessionMeta, SyntheticReason, ToolResult, ToolResultStatus, TurnOutcome,
};

use crate::error::{Error, Result};
use crate::projection::Projection;
use crate::trace::SessionTrace;

/// One line of a loaded log.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A record this version knows.
    Record(Record),
    /// A record of a type from a newer version, kept as written.
    Unknown(UnknownRecord),
}

/// A record whose `type` this version does not know.
#[derive(Debug, Clone, PartialEq)]
pub struct UnknownRecord {
    /// 1-based line number.
    pub line: usize,
    /// Its seq.
    pub seq: u64,
    /// Its `type`.
    pub type_name: String,
    /// The whole record as written.
    pub raw: serde_json::Value,
}

/// The torn last line a crash left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TornTail {
    /// 1-based line number.
    pub line: usize,
    /// Byte offset where it starts (the length of the valid part of the file).
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
}

/// A log read back and validated.
#[derive(Debug, Clone)]
pub struct LoadedSession {
    /// The file.
    pub path: PathBuf,
    /// Its first record.
    pub meta: SessionMeta,
    /// Every complete line, in order (blank lines aside).
    pub entries: Vec<Entry>,
    /// The state after the last complete record: what is still open.
    pub trace: SessionTrace,
    /// The dropped last line, if a crash tore it.
    pub torn_tail: Option<TornTail>,
    /// The number of lines, blank and torn ones included.
    pub line_count: usize,
}

impl LoadedSession {
    /// The records this version knows, in order.
    pub fn records(&self) -> impl Iterator<Item = &Record> {
        self.entries.iter().filter_map(|entry| match entry {
            Entry::Record(record) => Some(record),
            Entry::Unknown(_) => None,
        })
    }

    /// The records of unknown types.
    pub fn unknown(&self) -> impl Iterator<Item = &UnknownRecord> {
        self.entries.iter().filter_map(|entry| match entry {
            Entry::Unknown(unknown) => Some(unknown),
            Entry::Record(_) => None,
        })
    }

    /// The history the model saw, as of the last complete record.
    pub fn projection(&self) -> Projection {
        let mut projection = Projection::new();
        for record in self.records() {
            projection.apply(record);
        }
        projection
    }

    /// What `repair` appends: results for pending calls, then the open step's and turn's ends.
    pub fn repair_plan(&self) -> Vec<RecordBody> {
        closing_records(&self.trace, CloseReason::Crash)
    }

    /// The length of the file without the torn tail.
    pub fn valid_len(&self, file_len: u64) -> u64 {
        self.torn_tail.map_or(file_len, |torn| torn.offset)
    }
}

/// Why something open is being closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The process stopped; found on load.
    Crash,
    /// The person cancelled the turn.
    Cancel,
}

/// The records that close what `trace` has open: a synthetic result for each pending call (in
/// call order), then `step_end`, then `turn_end`.
pub fn closing_records(trace: &SessionTrace, reason: CloseReason) -> Vec<RecordBody> {
    let mut out = Vec::new();
    for call in trace.pending_calls() {
        let (synthetic, status, text) = match (reason, call.started) {
            (CloseReason::Cancel, _) => (
                SyntheticReason::Cancelled,
                ToolResultStatus::Cancelled,
                "cancelled: the user interrupted the turn before this call finished",
            ),
            (CloseReason::Crash, false) => (
                SyntheticReason::NotStarted,
                ToolResultStatus::Error,
                "not started: codecoder stopped before this call ran",
            ),
            (CloseReason::Crash, true) => (
                SyntheticReason::OutcomeUnknown,
                ToolResultStatus::Error,
                "outcome unknown: codecoder stopped while this call ran; check its effect before \
                 running it again",
            ),
        };
        out.push(RecordBody::ToolResult {
            result: ToolResult::text(call.call_id.clone(), status, text),
            synthetic: Some(synthetic),
        });
    }
    if let (Some(turn), Some(step)) = (trace.open_turn(), trace.open_step()) {
        out.push(RecordBody::StepEnd { turn, step, usage: Default::default(), stop_reason: None });
    }
    if let Some(turn) = trace.open_turn() {
        let outcome = match reason {
            CloseReason::Crash => TurnOutcome::Interrupted,
            CloseReason::Cancel => TurnOutcome::Cancelled,
        };
        out.push(RecordBody::TurnEnd { turn, outcome, usage: Default::default() });
    }
    out
}

/// Reads and validates the log at `path`.
pub fn load(path: &Path) -> Result<LoadedSession> {
    let mut entries = Vec::new();
    let read = read(path, |entry| entries.push(entry))?;
    Ok(read.into_loaded(path, entries))
}

/// What reading a log leaves besides its entries (see `LoadedSession`).
pub(crate) struct ReadLog {
    pub(crate) meta: SessionMeta,
    pub(crate) trace: SessionTrace,
    pub(crate) torn_tail: Option<TornTail>,
    pub(crate) line_count: usize,
}

impl ReadLog {
    /// The loaded session of the log at `path`, whose entries were `entries`.
    pub(crate) fn into_loaded(self, path: &Path, entries: Vec<Entry>) -> LoadedSession {
        LoadedSession {
            path: path.to_owned(),
            meta: self.meta,
            entries,
            trace: self.trace,
            torn_tail: self.torn_tail,
            line_count: self.line_count,
        }
    }
}

/// Reads and validates the log at `path`, handing each complete entry to `each` in order as it
/// is read (so a caller that only folds them keeps none).
pub(crate) fn read(path: &Path, mut each: impl FnMut(Entry)) -> Result<ReadLog> {
    let file = fs_err::File::open(path)?;
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let mut trace = SessionTrace::new();
    let mut meta = None;
    let mut line = Vec::with_capacity(1024);
    let mut line_no = 0;
    let mut offset = 0u64;
    // A line that failed to parse (line, offset, length, message): an error unless it turns
    // out to be the last line.
    let mut unparsed: Option<(usize, u64, u64, String)> = None;
    let mut torn_tail = None;
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(|e| {
            std::io::Error::new(e.kind(), format!("reading {}: {e}", path.display()))
        })?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if let Some((bad_line, _, _, message)) = unparsed.take() {
            return Err(Error::Corrupt { path: path.to_owned(), line: bad_line, message });
        }
        let start = offset;
        offset += n as u64;
        if line.last() != Some(&b'\n') {
            torn_tail = Some(TornTail { line: line_no, offset: start, len: n as u64 });
            break;
        }
        let text = &line[..line.len() - 1];
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse_line(text, line_no) {
            Ok(Entry::Record(record)) => {
                let transition = trace.validate(&record).map_err(|source| Error::Invalid {
                    path: path.to_owned(),
                    line: line_no,
                    seq: record.seq,
                    source,
                })?;
                trace.commit(transition);
                if let RecordBody::SessionMeta(m) = &record.body {
                    meta = Some(m.clone());
                }
                each(Entry::Record(record));
            }
            Ok(Entry::Unknown(unknown)) => {
                let transition =
                    trace.validate_unknown(unknown.seq).map_err(|source| Error::Invalid {
                        path: path.to_owned(),
                        line: line_no,
                        seq: unknown.seq,
                        source,
                    })?;
                trace.commit(transition);
                each(Entry::Unknown(unknown));
            }
            Err(message) => unparsed = Some((line_no, start, n as u64, message)),
        }
    }
    if let Some((bad_line, start, len, _)) = &unparsed {
        torn_tail = Some(TornTail { line: *bad_line, offset: *start, len: *len });
    }
    let Some(meta) = meta else {
        // Nothing before it parsed either: the one line is not a torn record but no log.
        if let Some((line, _, _, message)) = unparsed {
            return Err(Error::Corrupt { path: path.to_owned(), line, message });
        }
        return Err(Error::Empty { path: path.to_owned() });
    };
    Ok(ReadLog { meta, trace, torn_tail, line_count: line_no })
}

/// Parses one line: a known record, an unknown one, or the parser's complaint.
fn parse_line(text: &[u8], line_no: usize) -> std::result::Result<Entry, String> {
    let err = match serde_json::from_slice::<Record>(text) {
        Ok(record) => return Ok(Entry::Record(record)),
        Err(err) => err,
    };
    // A well-formed record of a type we do not know is kept, not dropped.
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_slice(text)
        && let (Some(seq), Some(type_name)) = (
            map.get("seq").and_then(serde_json::Value::as_u64),
            map.get("type").and_then(|t| t.as_str()),
        )
        && !RecordBody::TYPE_NAMES.contains(&type_name)
    {
        let type_name = type_name.to_owned();
        return Ok(Entry::Unknown(UnknownRecord {
            line: line_no,
            seq,
            type_name,
            raw: serde_json::Value::Object(map),
        }));
    }
    Err(err.to_string())
}
