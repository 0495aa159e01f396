//! `SessionWriter`: refused records write nothing, fsync policies (the `turn` policy's syncer
//! thread included), clock stamps, blobs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use codecoder_protocol::{
    ContentItem, Image, Message, MessageItem, RecordBody, Role, ToolCallId, ToolResult,
    ToolResultStatus,
};
use codecoder_session::{Error, FsyncPolicy, SessionWriter, WriterConfig, load};
use codecoder_stdx::ManualClock;
use pretty_assertions::assert_eq;

use crate::{
    assistant, config, file_len, new_session, result, started, step_end, step_start, temp_store,
    turn_end, turn_start, user,
};

#[test]
fn refused_record_writes_nothing() {
    let (_home, store) = temp_store();
    let mut writer = store.create(new_session("/w"), config(1_000)).unwrap();
    writer.append(turn_start(1)).unwrap();
    writer.append(user("hello")).unwrap();
    writer.append(step_start(1, 1)).unwrap();
    writer.append(assistant("running", &["call_1"])).unwrap();
    let path = writer.path().unwrap().to_owned();
    writer.sync().unwrap();
    let len = file_len(&path);
    let trace = writer.trace().clone();
    let history = writer.history().to_vec();

    let big = "z".repeat(10_000);
    let refused = [
        (step_end(1, 1), "calls_pending"),
        (turn_end(1), "step_still_open"),
        (turn_start(2), "turn_already_open"),
        (user("more"), "step_still_open"),
        (result("call_9", &big), "unknown_call"),
        (started("call_9"), "unknown_call"),
        (
            RecordBody::UserMessage { message: Message::new(Role::Tool, Vec::new()) },
            "step_still_open",
        ),
    ];
    for (body, kind) in refused {
        let err = writer.append(body).unwrap_err();
        match &err {
            Error::Trace(source) => assert_eq!(source.kind(), kind),
            other => panic!("expected Error::Trace, got {other:?}"),
        }
        assert!(err.to_string().starts_with("refused record: "), "{err}");
        assert_eq!(file_len(&path), len);
        assert_eq!(writer.trace(), &trace);
        assert_eq!(writer.history(), history.as_slice());
    }
    // Not even a blob of the refused result's large output.
    assert!(!store.blobs().dir().exists(), "a refused record left a blob behind");

    // The writer goes on where it was.
    assert_eq!(writer.append(result("call_1", "ok")).unwrap(), trace.last_seq() + 1);
    drop(writer);
    let loaded = load(&path).unwrap();
    assert_eq!(loaded.trace.last_seq(), trace.last_seq() + 1);
}

#[test]
fn fsync_policies_parse_and_all_write_loadable_logs() {
    assert_eq!("always".parse::<FsyncPolicy>(), Ok(FsyncPolicy::Always));
    assert_eq!("turn".parse::<FsyncPolicy>(), Ok(FsyncPolicy::Turn));
    assert_eq!("never".parse::<FsyncPolicy>(), Ok(FsyncPolicy::Never));
    let err = "sometimes".parse::<FsyncPolicy>().unwrap_err();
    assert!(err.contains("sometimes"), "{err}");
    assert_eq!(WriterConfig::standard().fsync, FsyncPolicy::Turn);
    assert_eq!(WriterConfig::standard().blob_threshold, 16 * 1024);

    let (_home, store) = temp_store();
    for fsync in [FsyncPolicy::Always, FsyncPolicy::Turn, FsyncPolicy::Never] {
        let config = WriterConfig { fsync, ..config(1_000) };
        let mut writer = store.create(new_session("/w"), config).unwrap();
        for body in [
            turn_start(1),
            user("hi"),
            step_start(1, 1),
            assistant("hello", &[]),
            step_end(1, 1),
            turn_end(1),
            RecordBody::SessionEnd,
        ] {
            writer.append(body).unwrap();
        }
        writer.sync().unwrap();
        let path = writer.path().unwrap().to_owned();
        drop(writer);
        let loaded = load(&path).unwrap();
        assert_eq!(loaded.records().count(), 8, "{fsync:?}");
        assert!(loaded.trace.is_ended());
    }
}

/// The threads of this process named `session-sync`.
fn syncer_threads() -> usize {
    fs_err::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| fs_err::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == "session-sync")
        .count()
}

#[test]
fn turn_writers_own_one_syncer_thread_each_and_join_it_on_drop() {
    let (_home, store) = temp_store();
    let config = || WriterConfig { fsync: FsyncPolicy::Turn, ..config(1_000) };
    // Other tests of this binary run in parallel, and one may hold a `turn` writer meanwhile.
    let slack = 2;
    let before = syncer_threads();
    let mut writers = Vec::new();
    for _ in 0..20 {
        let mut writer = store.create(new_session("/w"), config()).unwrap();
        writer.append(turn_start(1)).unwrap();
        // The syncer has answered, so it runs and has set its name.
        writer.sync().unwrap();
        writers.push(writer);
    }
    assert!(syncer_threads() >= 20, "{} syncer threads", syncer_threads());
    drop(writers);
    // A joined thread has exited, but its /proc entry may outlive the join by a moment.
    let after = settled_syncer_threads(before + slack);
    assert!(after <= before + slack, "{before} syncer threads before, {after} after");
    // In-memory writers start none, whatever their policy.
    let in_memory: Vec<SessionWriter> =
        (0..20).map(|_| SessionWriter::in_memory(new_session("/w"), config()).unwrap()).collect();
    assert!(syncer_threads() <= before + slack);
    drop(in_memory);
}

/// `syncer_threads()` once it is at most `at_most`, or after two seconds.
fn settled_syncer_threads(at_most: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let count = syncer_threads();
        if count <= at_most || Instant::now() > deadline {
            return count;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn turn_log_dropped_without_sync_loads_cleanly() {
    let (_home, store) = temp_store();
    let config = WriterConfig { fsync: FsyncPolicy::Turn, ..config(1_000) };
    let mut writer = store.create(new_session("/w"), config).unwrap();
    for turn in 1..=50 {
        for body in [
            turn_start(turn),
            user("hi"),
            step_start(turn, 1),
            assistant("hello", &[]),
            step_end(turn, 1),
            turn_end(turn),
        ] {
            writer.append(body).unwrap();
        }
    }
    // An open turn at the end: written, not yet asked to sync.
    writer.append(turn_start(51)).unwrap();
    writer.append(user("unfinished")).unwrap();
    let path = writer.path().unwrap().to_owned();
    let len = file_len(&path);
    drop(writer);
    assert_eq!(file_len(&path), len);
    let loaded = load(&path).unwrap();
    assert!(loaded.torn_tail.is_none(), "{:?}", loaded.torn_tail);
    assert_eq!(loaded.records().count(), 1 + 50 * 6 + 2);
    assert_eq!(loaded.trace.last_turn(), 51);
}

#[test]
fn records_are_stamped_by_the_injected_clock() {
    let (_home, store) = temp_store();
    let config = WriterConfig { clock: Arc::new(ManualClock::new(5_000, 10)), ..config(0) };
    let mut writer = store.create(new_session("/w"), config).unwrap();
    assert_eq!(writer.append(turn_start(1)).unwrap(), 2);
    assert_eq!(writer.append(user("x")).unwrap(), 3);
    let path = writer.path().unwrap().to_owned();
    assert_eq!(path, store.path_of(writer.session_id()));
    drop(writer);
    let loaded = load(&path).unwrap();
    let stamps: Vec<(u64, u64)> = loaded.records().map(|r| (r.seq, r.ts)).collect();
    assert_eq!(stamps, vec![(1, 5_000), (2, 5_010), (3, 5_020)]);
}

#[test]
fn large_tool_output_goes_to_the_blob_store() {
    let (_home, store) = temp_store();
    let mut writer = store.create(new_session("/w"), config(1_000)).unwrap();
    for body in
        [turn_start(1), user("go"), step_start(1, 1), assistant("", &["big", "small", "again"])]
    {
        writer.append(body).unwrap();
    }
    let big: String = (0..2_000).map(|i| format!("line {i} ✓\n")).collect();
    writer.append(result("big", &big)).unwrap();
    writer.append(result("small", "short output")).unwrap();
    writer.append(result("again", &big)).unwrap();
    let path = writer.path().unwrap().to_owned();
    drop(writer);

    // The log keeps address, size and preview, not the text.
    let text = fs_err::read_to_string(&path).unwrap();
    assert!(!text.contains("line 1999"));
    let loaded = load(&path).unwrap();
    let results: Vec<ToolResult> = loaded
        .records()
        .filter_map(|r| match &r.body {
            RecordBody::ToolResult { result, .. } => Some(result.clone()),
            _ => None,
        })
        .collect();
    let ContentItem::BlobRef(blob) = &results[0].content[0] else {
        panic!("expected a blob ref: {:?}", results[0]);
    };
    assert_eq!(blob.size, big.len() as u64);
    assert_eq!(blob.media_type, "text/plain; charset=utf-8");
    assert!(big.starts_with(&blob.preview) && !blob.preview.is_empty());
    assert!(blob.preview.len() < 2_000);
    assert_eq!(blob.sha256.len(), 64);
    assert!(blob.sha256.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert_eq!(results[1].content, vec![ContentItem::Text { text: "short output".to_owned() }]);
    // Content addressed: the same text is the same blob.
    assert_eq!(results[2].content, results[0].content);

    let blobs = store.blobs();
    assert_eq!(blobs.get(&blob.sha256).unwrap(), big.as_bytes());
    assert_eq!(blobs.resolve(blob).unwrap(), ContentItem::Text { text: big.clone() });
    assert!(blobs.path_of(&blob.sha256).starts_with(store.sessions_dir()));
    assert_eq!(fs_err::read_dir(blobs.path_of(&blob.sha256).parent().unwrap()).unwrap().count(), 1);
    // The history the model sees holds the reference too.
    let history = loaded.projection().into_history();
    let tool = history.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(tool.items, vec![MessageItem::ToolResult(results[0].clone())]);
}

#[test]
fn large_user_image_goes_to_the_blob_store() {
    let (_home, store) = temp_store();
    let mut writer = store.create(new_session("/w"), config(1_000)).unwrap();
    writer.append(turn_start(1)).unwrap();
    let data: String = "iVBORw0KGgo".repeat(100);
    let small = Image { media_type: "image/gif".to_owned(), data_base64: "R0lGOD==".to_owned() };
    let message = Message::new(
        Role::User,
        vec![
            MessageItem::Text { text: "look".to_owned() },
            MessageItem::Image(Image {
                media_type: "image/png".to_owned(),
                data_base64: data.clone(),
            }),
            MessageItem::Image(small.clone()),
        ],
    );
    writer.append(RecordBody::UserMessage { message }).unwrap();
    let MessageItem::BlobRef(blob) = &writer.history()[0].items[1] else {
        panic!("expected a blob ref: {:?}", writer.history()[0]);
    };
    let blob = blob.clone();
    assert_eq!(writer.history()[0].items[2], MessageItem::Image(small));
    assert_eq!(blob.size, data.len() as u64);
    assert!(blob.media_type.starts_with("image/png"), "{}", blob.media_type);
    let image = Image { media_type: "image/png".to_owned(), data_base64: data };
    assert_eq!(writer.blobs().unwrap().resolve(&blob).unwrap(), ContentItem::Image(image));
    // Large user text stays inline: only attachments are externalized.
    let long = "t".repeat(1_000);
    writer.append(user(&long)).unwrap();
    assert_eq!(writer.history()[1].text(), long);
}

#[test]
fn results_of_synthetic_or_error_status_round_trip() {
    let (_home, store) = temp_store();
    let mut writer = store.create(new_session("/w"), config(1_000)).unwrap();
    for body in [turn_start(1), user("go"), step_start(1, 1), assistant("", &["c"])] {
        writer.append(body).unwrap();
    }
    let body = RecordBody::ToolResult {
        result: ToolResult::text(ToolCallId::new("c"), ToolResultStatus::Error, "unknown tool"),
        synthetic: Some(codecoder_protocol::SyntheticReason::Refused),
    };
    writer.append(body.clone()).unwrap();
    let path = writer.path().unwrap().to_owned();
    drop(writer);
    let loaded = load(&path).unwrap();
    assert_eq!(loaded.records().last().unwrap().body, body);
}
