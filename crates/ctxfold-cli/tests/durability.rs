//! Crash and concurrency safety of the log, with real processes: a writer
//! killed with SIGKILL mid-append, and two writers appending at once.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use common::{Scratch, stderr};
use serde_json::{Value, json};

/// A conversation with one record to append to; returns its id.
fn empty_conversation(s: &Scratch) -> String {
    let seed = s.path().join("seed.jsonl");
    std::fs::write(
        &seed,
        "{\"seq\":0,\"ts\":\"t\",\"type\":\"user\",\"content\":\"start\"}\n",
    )
    .unwrap();
    s.import(&seed)
}

/// A tool result of a size that varies with `i`, tagged with `writer` and `i`.
fn event(writer: &str, i: usize) -> String {
    let body = "x".repeat(200 + (i * 37) % 1500);
    json!({"type": "tool_result", "id": format!("{writer}-{i}"), "content": body, "is_error": false})
        .to_string()
}

fn records(s: &Scratch, id: &str) -> (Vec<Value>, String) {
    let out = s.run(&["c", "print", id, "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (v.as_array().unwrap().clone(), stderr(&out))
}

/// Records are written whole through a buffer, so a kill between writes
/// leaves complete lines. A line is torn only when the process dies inside
/// one large write. Event 5,000 of the 10,000 is 64 MB: the test watches the
/// file grow inside that write and sends SIGKILL then, with 4,999 events
/// still to be written.
#[test]
fn sigkill_mid_append_keeps_every_complete_record_and_reports_the_torn_one() {
    const TOTAL: usize = 10_000;
    const BIG: usize = 5_000;
    let s = Scratch::new();
    let id = empty_conversation(&s);
    let file = s.events_file(&id);
    let mut child = s
        .command()
        .args(["c", "append", &id])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        for i in 0..TOTAL {
            let line = if i == BIG {
                json!({"type": "tool_result", "id": format!("w-{i}"), "content": "y".repeat(64 << 20)})
                    .to_string()
            } else {
                event("w", i)
            };
            // The pipe breaks if the writer is killed early: stop feeding.
            if writeln!(stdin, "{line}").is_err() {
                return;
            }
        }
    });
    let small_bytes: u64 = (0..BIG).map(|i| event("w", i).len() as u64 + 100).sum();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let size = std::fs::metadata(&file).map_or(0, |m| m.len());
        if size > small_bytes + (1 << 20) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the writer never reached the big record"
        );
        std::thread::sleep(Duration::from_micros(100));
    }
    child.kill().unwrap(); // SIGKILL, inside the 64 MB write
    child.wait().unwrap();
    feeder.join().unwrap();

    let raw = std::fs::read(&file).unwrap();
    assert!(!raw.ends_with(b"\n"), "the kill tore the big record");
    let complete_lines = raw.iter().filter(|&&b| b == b'\n').count();
    assert_eq!(
        complete_lines,
        1 + BIG,
        "the seed and every event before the big one"
    );

    let (recs, warnings) = records(&s, &id);
    assert_eq!(
        recs.len(),
        complete_lines,
        "every fully written record loads"
    );
    for (n, r) in recs.iter().enumerate() {
        assert_eq!(r["seq"], json!(n), "seq numbers stay contiguous");
        if n > 0 {
            let want: Value = serde_json::from_str(&event("w", n - 1)).unwrap();
            assert_eq!(r["id"], want["id"]);
            assert_eq!(r["content"], want["content"]);
        }
    }
    assert!(
        warnings.contains("incomplete last line"),
        "torn line reported: {warnings}"
    );
    let side = file.with_extension("jsonl.torn");
    let kept = std::fs::read(&side).unwrap();
    let tail_start = raw.iter().rposition(|&b| b == b'\n').unwrap() + 1;
    assert_eq!(
        &kept[..kept.len() - 1],
        &raw[tail_start..],
        "torn bytes kept, not lost"
    );
    assert_eq!(std::fs::metadata(&file).unwrap().len(), tail_start as u64);

    // The log is usable again: the next append continues the sequence.
    let more = s
        .command()
        .args(["c", "append", &id])
        .output_with_stdin(&format!("{}\n", event("after", 0)));
    assert!(more.status.success(), "{}", stderr(&more));
    let (after, warnings) = records(&s, &id);
    assert_eq!(after.len(), recs.len() + 1);
    assert_eq!(after.last().unwrap()["id"], "after-0");
    assert!(warnings.is_empty(), "{warnings}");
}

trait OutputWithStdin {
    fn output_with_stdin(&mut self, input: &str) -> std::process::Output;
}

impl OutputWithStdin for std::process::Command {
    fn output_with_stdin(&mut self, input: &str) -> std::process::Output {
        let mut child = self
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }
}

#[test]
fn two_processes_appending_at_once_lose_and_interleave_nothing() {
    let s = Scratch::new();
    let id = empty_conversation(&s);
    const BATCHES: usize = 40;
    const PER_BATCH: usize = 50;
    let writers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|w| {
            let dir = s.path().to_owned();
            let id = id.clone();
            std::thread::spawn(move || {
                for batch in 0..BATCHES {
                    let input: String = (0..PER_BATCH)
                        .map(|i| event(w, batch * PER_BATCH + i) + "\n")
                        .collect();
                    let out = common::command_in(&dir)
                        .args(["c", "append", &id])
                        .output_with_stdin(&input);
                    assert!(out.status.success(), "{}", stderr(&out));
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let raw = std::fs::read_to_string(s.events_file(&id)).unwrap();
    for line in raw.lines() {
        serde_json::from_str::<Value>(line).expect("every line is one whole record");
    }
    let (recs, warnings) = records(&s, &id);
    assert!(warnings.is_empty(), "{warnings}");
    assert_eq!(recs.len(), 1 + 2 * BATCHES * PER_BATCH);
    let mut next = std::collections::HashMap::from([("a", 0usize), ("b", 0usize)]);
    for (n, r) in recs.iter().enumerate() {
        assert_eq!(r["seq"], json!(n));
        if n == 0 {
            continue;
        }
        let tag = r["id"].as_str().unwrap();
        let (w, i) = tag.split_once('-').unwrap();
        let expected = next.get_mut(w).unwrap();
        assert_eq!(
            i.parse::<usize>().unwrap(),
            *expected,
            "{w}'s records in order"
        );
        *expected += 1;
    }
    assert_eq!(next["a"], BATCHES * PER_BATCH);
    assert_eq!(next["b"], BATCHES * PER_BATCH);
}

/// `c export` of an agent's session reads the log a record at a time
/// (issue 48), up to its size when it was opened, under the shared lock.
/// While another process appends, every export is the log as it was at
/// some moment: whole lines, the imported session byte for byte, then
/// the appended messages in order, none missing between the first and
/// the last, none twice.
#[test]
fn an_export_while_another_process_appends_is_a_whole_prefix_of_the_log() {
    use ctxfold_testkit::agent_session::{self, Size};
    const BATCHES: usize = 60;
    const PER_BATCH: usize = 10;
    let s = Scratch::new();
    let mut session = Vec::new();
    agent_session::claude_code(&mut session, 500, Size::Short).unwrap();
    let file = s.path().join("session.jsonl");
    std::fs::write(&file, &session).unwrap();
    let id = s.import(&file);
    let appender = {
        let (dir, id) = (s.path().to_owned(), id.clone());
        std::thread::spawn(move || {
            for batch in 0..BATCHES {
                let input: String = (0..PER_BATCH)
                    .map(|i| {
                        let n = batch * PER_BATCH + i;
                        json!({"type": "user", "content": format!("appended-{n}.")}).to_string()
                            + "\n"
                    })
                    .collect();
                let out = common::command_in(&dir)
                    .args(["c", "append", &id])
                    .output_with_stdin(&input);
                assert!(out.status.success(), "{}", stderr(&out));
                // Room for exports between the appends.
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    // The appended messages an export holds, in the order it holds them.
    let appended = |out: &[u8]| -> Vec<usize> {
        assert!(
            out.starts_with(&session),
            "the imported session, byte for byte"
        );
        let rest = std::str::from_utf8(&out[session.len()..]).unwrap();
        let mut found = Vec::new();
        for line in rest.lines() {
            serde_json::from_str::<Value>(line).expect("every line whole");
            if let Some(at) = line.find("appended-") {
                let digits: String = line[at + 9..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                found.push(digits.parse::<usize>().unwrap());
            }
        }
        found
    };
    // An export to a file of its own, read back: the appended messages.
    let export = |name: &str| {
        let to = s.path().join(name);
        s.ok(&[
            "c",
            "export",
            &id,
            "--output-format",
            "claude-code",
            "-o",
            to.to_str().unwrap(),
        ]);
        let bytes = std::fs::read(&to).unwrap();
        std::fs::remove_file(&to).unwrap();
        appended(&bytes)
    };
    let mut seen_during = Vec::new();
    let mut exports = 0;
    while !appender.is_finished() {
        let found = export(&format!("export-{exports}.jsonl"));
        assert_eq!(
            found,
            (0..found.len()).collect::<Vec<_>>(),
            "export {exports}: the appended messages from the first, in order, none twice"
        );
        assert_eq!(
            found.len() % PER_BATCH,
            0,
            "an append is read whole or not at all"
        );
        seen_during.push(found.len());
        exports += 1;
    }
    appender.join().unwrap();
    let all = export("after.jsonl");
    assert_eq!(all, (0..BATCHES * PER_BATCH).collect::<Vec<_>>());
    // The exports ran while the appends did: some read part of them.
    assert!(
        seen_during
            .iter()
            .any(|&n| 0 < n && n < BATCHES * PER_BATCH),
        "no export overlapped the appends: {seen_during:?}"
    );
}
