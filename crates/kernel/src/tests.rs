//! Unit tests of the kernel internals.
