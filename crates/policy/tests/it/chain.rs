//! The decision chain.
