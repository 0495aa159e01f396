//! Unit tests of the pure parts: tool mapping, matchers, folding of answers.
