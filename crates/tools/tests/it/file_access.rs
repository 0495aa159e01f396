//! The file tools through a `FileAccess` (an editor's buffers): reads see the buffer, not the
//! disk; writes, edits and patches land in the buffer and leave the disk alone; an access that
//! has no say leaves the tools on the disk; its failure is the model's error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use codecoder_kernel::CancelToken;
use codecoder_tools::FileAccess;
use serde_json::json;

use crate::support::Fixture;

/// Buffers by path, every write recorded; `failing` makes every read fail.
#[derive(Debug, Default)]
struct Buffers {
    files: Mutex<BTreeMap<PathBuf, String>>,
    writes: Mutex<Vec<PathBuf>>,
    failing: bool,
}

impl FileAccess for Buffers {
    fn read_text(&self, path: &Path, _cancel: &CancelToken) -> Result<Option<String>, String> {
        if self.failing {
            return Err("the editor is gone".to_owned());
        }
        let files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(Some(files.get(path).cloned().ok_or_else(|| format!("no buffer for {path:?}"))?))
    }
    fn write_text(
        &self,
        path: &Path,
        content: &str,
        _cancel: &CancelToken,
    ) -> Result<bool, String> {
        self.writes.lock().unwrap_or_else(PoisonError::into_inner).push(path.to_owned());
        self.files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(path.to_owned(), content.to_owned());
        Ok(true)
    }
}

fn fixture(buffers: &Arc<Buffers>) -> Fixture {
    let access: Arc<dyn FileAccess> = Arc::clone(buffers) as Arc<dyn FileAccess>;
    Fixture::with(move |config| config.file_access = Some(access))
}

#[test]
fn reads_edits_and_patches_go_through_the_buffers() {
    let buffers = Arc::new(Buffers::default());
    let fx = fixture(&buffers);
    let file = fx.path("a.txt");
    fs_err::write(&file, "on disk\n").unwrap();
    buffers.files.lock().unwrap().insert(file.clone(), "unsaved one\nunsaved two\n".to_owned());

    let read = fx.ok("read_file", json!({"path": "a.txt"}));
    assert!(read.contains("unsaved two"), "{read}");
    assert!(!read.contains("on disk"), "{read}");

    fx.ok("edit", json!({"path": "a.txt", "old_string": "unsaved two", "new_string": "edited"}));
    assert_eq!(buffers.files.lock().unwrap()[&file], "unsaved one\nedited\n");
    assert_eq!(fs_err::read_to_string(&file).unwrap(), "on disk\n", "the disk is left alone");

    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n unsaved one\n-edited\n+patched\n*** Add File: b.txt\n+new\n*** End Patch";
    let report = fx.ok("apply_patch", json!({"input": patch}));
    assert!(report.contains("M a.txt") && report.contains("A b.txt"), "{report}");
    assert_eq!(buffers.files.lock().unwrap()[&file], "unsaved one\npatched\n");
    assert_eq!(buffers.files.lock().unwrap()[&fx.path("b.txt")], "new\n");
    assert!(!fx.path("b.txt").exists(), "an added file goes to the editor only");

    fx.ok("write_file", json!({"path": "c.txt", "content": "whole\n"}));
    assert_eq!(buffers.files.lock().unwrap()[&fx.path("c.txt")], "whole\n");
    assert_eq!(buffers.writes.lock().unwrap().len(), 4);
}

#[test]
fn a_failing_access_is_an_error_not_the_disk() {
    let buffers = Arc::new(Buffers { failing: true, ..Buffers::default() });
    let fx = fixture(&buffers);
    fs_err::write(fx.path("a.txt"), "on disk\n").unwrap();
    let message = fx.err("read_file", json!({"path": "a.txt"}));
    assert!(message.contains("the editor is gone"), "{message}");
}

#[test]
fn writes_outside_the_roots_are_refused_before_the_access_is_asked() {
    let buffers = Arc::new(Buffers::default());
    let fx = fixture(&buffers);
    let outside = fx.dir.path().join("outside.txt");
    let message = fx.err("write_file", json!({"path": outside.to_string_lossy(), "content": "x"}));
    assert!(!message.is_empty());
    assert!(buffers.writes.lock().unwrap().is_empty());
}
