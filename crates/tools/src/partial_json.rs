//! [`StringField`]: the text of one string field of a JSON object, decoded while the object's
//! JSON arrives in pieces (a model streaming a tool call's arguments).
//!
//! Only a field of the outermost object is read (`{"input": "..."}`); a piece may end anywhere,
//! inside an escape or a `\u` sequence included. Invariant: never panics and never errors: JSON
//! that is not an object, or a field that is not a string, simply yields no text (the whole
//! arguments are parsed and checked once they are complete).

#[cfg(test)]
mod tests;

/// Where the reader is in the JSON text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between tokens.
    Between,
    /// Inside a string that is not the field's value (a key, or another field's value).
    Other { escaped: bool },
    /// Inside the field's value.
    Value,
    /// After a `\` in the field's value.
    Escape,
    /// In a `\uXXXX` escape of the field's value, with the digits read so far.
    Unicode { digits: u8, code: u16 },
    /// The field's value is complete, or the JSON cannot hold it: nothing more is read.
    Done,
}

/// One string field of a JSON object being streamed; see the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct StringField {
    name: &'static str,
    state: State,
    /// Objects and arrays open around the reader.
    depth: u32,
    /// The last string read between tokens at the outermost level (a key, once `:` follows).
    key: String,
    /// Whether the string being read at the outermost level is being kept as `key`.
    keeping_key: bool,
    /// A `:` after the field's name was read: the next string is its value.
    value_next: bool,
    /// A high surrogate waiting for its low half.
    high: Option<u16>,
}

impl StringField {
    /// A reader of the field `name` that has read nothing.
    pub(crate) fn new(name: &'static str) -> Self {
        Self {
            name,
            state: State::Between,
            depth: 0,
            key: String::new(),
            keeping_key: false,
            value_next: false,
            high: None,
        }
    }

    /// Reads the next piece of the JSON text, appending what it adds to the field's value to
    /// `out`.
    pub(crate) fn push(&mut self, piece: &str, out: &mut String) {
        for ch in piece.chars() {
            self.state = self.next(ch, out);
            if self.state == State::Done {
                return;
            }
        }
    }

    fn next(&mut self, ch: char, out: &mut String) -> State {
        match self.state {
            State::Done => State::Done,
            State::Between => self.between(ch),
            State::Other { escaped: true } => State::Other { escaped: false },
            State::Other { escaped: false } => match ch {
                '\\' => State::Other { escaped: true },
                '"' => {
                    self.keeping_key = false;
                    State::Between
                }
                _ => {
                    if self.keeping_key {
                        self.key.push(ch);
                    }
                    State::Other { escaped: false }
                }
            },
            State::Value => match ch {
                '"' => State::Done,
                '\\' => State::Escape,
                _ => {
                    self.flush_high(out);
                    out.push(ch);
                    State::Value
                }
            },
            State::Escape => {
                let plain = match ch {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    'u' => return State::Unicode { digits: 0, code: 0 },
                    // `\"`, `\\`, `\/`, and anything else kept as written.
                    other => other,
                };
                self.flush_high(out);
                out.push(plain);
                State::Value
            }
            State::Unicode { digits, code } => {
                let Some(digit) = ch.to_digit(16) else { return State::Done };
                // At most four hex digits, so the value fits in 16 bits.
                let code = (code << 4) | u16::try_from(digit).unwrap_or(0);
                if digits < 3 {
                    return State::Unicode { digits: digits + 1, code };
                }
                self.unicode(code, out);
                State::Value
            }
        }
    }

    fn between(&mut self, ch: char) -> State {
        match ch {
            '{' | '[' => {
                self.depth += 1;
                self.value_next = false;
            }
            '}' | ']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    return State::Done;
                }
            }
            ':' if self.depth == 1 => self.value_next = self.key == self.name,
            ',' => self.value_next = false,
            '"' if self.depth == 1 && self.value_next => return State::Value,
            '"' => {
                self.keeping_key = self.depth == 1;
                self.key.clear();
                return State::Other { escaped: false };
            }
            _ => {}
        }
        State::Between
    }

    /// A `\uXXXX` code unit: a character, or half of a surrogate pair.
    fn unicode(&mut self, code: u16, out: &mut String) {
        match (self.high.take(), code) {
            (Some(high), 0xDC00..=0xDFFF) => {
                let scalar =
                    0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(code) - 0xDC00);
                out.push(char::from_u32(scalar).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            (high, 0xD800..=0xDBFF) => {
                if high.is_some() {
                    out.push(char::REPLACEMENT_CHARACTER);
                }
                self.high = Some(code);
            }
            (high, code) => {
                if high.is_some() {
                    out.push(char::REPLACEMENT_CHARACTER);
                }
                out.push(char::from_u32(u32::from(code)).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
        }
    }

    /// A high surrogate followed by anything but its low half stands for itself: a replacement.
    fn flush_high(&mut self, out: &mut String) {
        if self.high.take().is_some() {
            out.push(char::REPLACEMENT_CHARACTER);
        }
    }
}
