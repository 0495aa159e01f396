//! Unit tests: rendering, splitting, request parsing and the script format.
