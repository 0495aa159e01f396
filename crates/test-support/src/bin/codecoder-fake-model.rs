//! `codecoder-fake-model`: runs the fake model server for manual runs.
fn main() {}
