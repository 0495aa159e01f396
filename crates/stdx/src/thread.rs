//! Owned threads: every thread has a name and a handle that joins it on drop.
//!
//! Invariant: a `JoinOnDrop` never detaches silently; dropping it waits for the thread. Panics
//! in the thread are not re-raised on drop (the owner inspects `join()` when it cares).

use std::io;
use std::thread::{self, JoinHandle};

/// A thread handle that joins on drop.
#[derive(Debug)]
pub struct JoinOnDrop<T> {
    handle: Option<JoinHandle<T>>,
}

impl<T> JoinOnDrop<T> {
    /// Waits for the thread; `Err` carries the panic payload's message.
    pub fn join(mut self) -> Result<T, String> {
        match self.handle.take() {
            Some(handle) => handle.join().map_err(|payload| panic_message(&*payload)),
            None => Err("thread already joined".to_owned()),
        }
    }

    /// True when the thread has finished.
    pub fn is_finished(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished)
    }
}

impl<T> Drop for JoinOnDrop<T> {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// Spawns a named thread owned by the returned handle.
pub fn spawn_named<T, F>(name: impl Into<String>, f: F) -> io::Result<JoinOnDrop<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let handle = thread::Builder::new().name(name.into()).spawn(f)?;
    Ok(JoinOnDrop { handle: Some(handle) })
}

/// The message of a panic payload (`&str` or `String`), or a placeholder.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        return (*s).to_owned();
    }
    if let Some(s) = payload.downcast_ref::<String>() {
        return s.clone();
    }
    "panic with a non-string payload".to_owned()
}
