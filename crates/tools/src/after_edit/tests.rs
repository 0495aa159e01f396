//! The hook's wrappers: what `read_file`, `grep` and `glob` tell it they read or found, and
//! that failed calls and other tools tell it nothing.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use codecoder_protocol::AskUserAnswer;
use serde_json::json;

use super::{AfterEdit, wrap};
use crate::{Builtin, StandaloneEnv, ToolsConfig, builtins, run_checked};

/// Records each `touched` call.
#[derive(Debug, Default)]
struct Recorder(Mutex<Vec<(Vec<PathBuf>, bool)>>);

impl AfterEdit for Recorder {
    fn after_edit(&self, _paths: &[PathBuf]) -> String {
        String::new()
    }

    fn touched(&self, paths: &[PathBuf], read: bool) {
        self.0.lock().unwrap().push((paths.to_vec(), read));
    }
}

fn wrapped(cwd: &Path, name: &str, hook: &Arc<Recorder>) -> Arc<dyn Builtin> {
    let builtin = builtins(ToolsConfig::standard(cwd, vec![cwd.to_path_buf()]))
        .into_iter()
        .find(|builtin| builtin.name() == name)
        .unwrap();
    let hook: Arc<dyn AfterEdit> = Arc::clone(hook) as Arc<dyn AfterEdit>;
    wrap(builtin, Some(&hook), cwd)
}

#[test]
fn reads_and_searches_tell_the_hook_their_files_and_failures_tell_it_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    fs_err::create_dir_all(cwd.join("src")).unwrap();
    fs_err::write(cwd.join("src/calc.py"), "x = 1\n").unwrap();
    fs_err::write(cwd.join("notes.txt"), "x = 2\n").unwrap();
    let env = StandaloneEnv::new(AskUserAnswer::Answer { text: String::new() }, 1 << 20);
    let hook = Arc::new(Recorder::default());
    let take = || std::mem::take(&mut *hook.0.lock().unwrap());

    run_checked(&*wrapped(&cwd, "read_file", &hook), &env, json!({ "path": "src/calc.py" }))
        .unwrap();
    assert_eq!(take(), vec![(vec![cwd.join("src/calc.py")], true)]);

    run_checked(&*wrapped(&cwd, "grep", &hook), &env, json!({ "pattern": "x = " })).unwrap();
    let calls = take();
    assert_eq!(calls.len(), 1);
    let (found, read) = &calls[0];
    assert!(!read);
    for file in ["src/calc.py", "notes.txt"] {
        assert!(found.contains(&cwd.join(file)), "{file} in {found:?}");
    }

    run_checked(&*wrapped(&cwd, "glob", &hook), &env, json!({ "pattern": "*.py" })).unwrap();
    let calls = take();
    assert_eq!(calls.len(), 1);
    assert!(calls[0].0.contains(&cwd.join("src/calc.py")), "{calls:?}");

    // A read that fails tells nothing; nor does a tool that is not a read or a search.
    let missing =
        run_checked(&*wrapped(&cwd, "read_file", &hook), &env, json!({ "path": "gone.py" }));
    assert!(missing.is_err() || missing.is_ok_and(|output| output.is_error));
    run_checked(&*wrapped(&cwd, "list_dir", &hook), &env, json!({})).unwrap();
    assert_eq!(take(), Vec::new());
}
