//! Benchmark stub.
fn main() {}
