//! `ctxfold store copy`, `store migrate` and `--store`, through the real
//! binary and a real PostgreSQL server (`CTXFOLD_TEST_PG_URL`): the tests
//! that need one are ignored by a plain `cargo test` (reported as
//! skipped) and run by `scripts/test`'s pass over ignored tests.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;
use ctxfold_testkit::pg;

use std::path::Path;
use std::process::Output;

use common::model::{Say, events, model, workspace};
use common::{Scratch, command_in, corpus_conversations, stderr};
use serde_json::json;

/// A test database, or return (skipped) when no server is configured.
macro_rules! test_db {
    ($name:expr) => {
        match pg::TestDb::new($name) {
            Some(db) => db,
            None => return,
        }
    };
}

/// The password in a URL's user part.
fn password_of(url: &str) -> String {
    let rest = url.find("://").unwrap() + 3;
    let at = url.rfind('@').unwrap();
    url[rest..at].split_once(':').unwrap().1.to_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `ctxfold ARGS` in `dir`, expecting failure; returns stderr, checked
/// to hold no password.
fn fails(dir: &Path, args: &[&str], secrets: &[&str]) -> String {
    let out = command_in(dir).args(args).output().unwrap();
    assert!(
        !out.status.success(),
        "{args:?} succeeded: {}",
        stdout(&out)
    );
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!text.contains("panicked"), "{args:?}: {text}");
    for s in secrets {
        assert!(!text.contains(s), "{args:?} shows a password: {text}");
    }
    stderr(&out)
}

fn files_under(dir: &Path, id: &str) -> (Vec<u8>, Vec<u8>) {
    let d = dir.join(".ctxfold/conversations").join(id);
    (
        std::fs::read(d.join("events.jsonl")).unwrap(),
        std::fs::read(d.join("meta.json")).unwrap(),
    )
}

#[test]
#[ignore = "needs PostgreSQL: CTXFOLD_TEST_PG_URL (scripts/test starts a server)"]
fn workspace_to_postgres_to_a_new_folder_is_byte_identical() {
    let db = test_db!("workspace_to_postgres_to_a_new_folder_is_byte_identical");
    let s = Scratch::new();
    let ids: Vec<String> = corpus_conversations()
        .iter()
        .take(4)
        .map(|p| s.import(p))
        .collect();
    // One with a compaction and its reset: overlay records copy too.
    let before = std::fs::read(s.events_file(&ids[0])).unwrap().len();
    s.ok(&[
        "conversation",
        "compact",
        &ids[0],
        "--keep-last",
        "1",
        "-r",
        "-t",
    ]);
    let compacted = std::fs::read(s.events_file(&ids[0])).unwrap().len();
    assert!(compacted > before, "the compaction was recorded");
    s.ok(&["conversation", "compact", &ids[0], "--reset"]);
    let log = String::from_utf8(std::fs::read(s.events_file(&ids[0])).unwrap()).unwrap();
    assert!(log.contains("\"type\":\"compaction\"") && log.contains("compaction_reset"));

    let out = s.ok(&["store", "copy", "--from", ".", "--to", &db.url]);
    assert!(
        out.contains("4 copied, 0 already there, 0 not copied"),
        "{out}"
    );
    assert!(!out.contains(&password_of(&db.url)), "{out}");

    // Again: nothing to do, and it says so.
    let out = s.ok(&["store", "copy", "--from", ".", "--to", &db.url]);
    assert!(out.contains("0 copied, 4 already there"), "{out}");
    assert_eq!(out.matches("already there, identical").count(), 4);

    // Back into a folder that is no workspace yet.
    let back = tempfile::tempdir().unwrap();
    let dest = back.path().to_str().unwrap();
    let out = s.ok(&["store", "copy", "--from", &db.url, "--to", dest]);
    assert!(out.contains("4 copied"), "{out}");
    for id in &ids {
        assert!(
            files_under(s.path(), id) == files_under(back.path(), id),
            "{id}: events.jsonl and meta.json differ after the round trip"
        );
    }
    // The active conversation and the trash stay behind.
    assert!(!back.path().join(".ctxfold/active").exists());

    // Some ids only, by prefix; a different conversation under a taken id
    // is refused, and the others still copy.
    let other = tempfile::tempdir().unwrap();
    let o = other.path().to_str().unwrap();
    let out = s.ok(&["store", "copy", "--from", ".", "--to", o, &ids[1]]);
    assert!(out.contains("1 copied"), "{out}");
    let tampered = other
        .path()
        .join(".ctxfold/conversations")
        .join(&ids[1])
        .join("meta.json");
    let text = std::fs::read_to_string(&tampered).unwrap();
    std::fs::write(
        &tampered,
        text.replace("\"title\"", "\"title\": \"other\", \"x\""),
    )
    .unwrap();
    let err = fails(s.path(), &["store", "copy", "--from", ".", "--to", o], &[]);
    assert!(
        err.contains("a different conversation with this id"),
        "{err}"
    );
    assert!(err.contains("1 conversation(s) not copied"), "{err}");
    assert!(
        other
            .path()
            .join(".ctxfold/conversations")
            .join(&ids[2])
            .is_dir()
    );
}

#[test]
#[ignore = "needs PostgreSQL: CTXFOLD_TEST_PG_URL (scripts/test starts a server)"]
fn commands_work_on_the_store_chosen_by_flag_variable_or_config() {
    let db = test_db!("commands_work_on_the_store_chosen_by_flag_variable_or_config");
    let s = Scratch::new();
    let jp = &corpus_conversations()[0];
    let secret = password_of(&db.url);

    // --store: import, list, show, print, export, stats, compact.
    let id = {
        let v = s.json(&[
            "--store",
            &db.url,
            "conversation",
            "import",
            jp.to_str().unwrap(),
        ]);
        v["id"].as_str().unwrap().to_owned()
    };
    assert!(
        s.ok(&["conversation", "ls"]).contains("no conversations"),
        "nothing went to the workspace"
    );
    let ls = s.ok(&["--store", &db.url, "conversation", "ls"]);
    assert!(ls.contains(&format!("* {id}")), "{ls}");
    let show = s.json(&["--store", &db.url, "conversation", "show"]);
    assert_eq!(show["id"], id.as_str());
    assert!(!show["path"].as_str().unwrap().contains(&secret));
    assert!(
        s.ok(&["--store", &db.url, "conversation", "print", &id])
            .len()
            > 100
    );
    assert!(s.ok(&["--store", &db.url, "stats"]).contains("total"));
    let out = tempfile::tempdir().unwrap();
    let exported = out.path().join("jp");
    s.ok(&[
        "--store",
        &db.url,
        "conversation",
        "export",
        &id,
        "--output-format",
        "jp",
        "-o",
        exported.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read(exported.join("events.json")).unwrap(),
        std::fs::read(jp.join("events.json")).unwrap()
    );
    let c = s.json(&[
        "--store",
        &db.url,
        "conversation",
        "compact",
        &id,
        "--keep-last",
        "1",
        "-r",
        "-t",
    ]);
    assert_eq!(c["dry_run"], false);
    let shown = s.json(&["--store", &db.url, "conversation", "show", &id]);
    assert!(
        shown["counts"]["compaction"].as_u64().unwrap() >= 1,
        "{shown}"
    );

    // CTXFOLD_STORE, and [store] url in the workspace config.
    let via_env = s
        .command()
        .env("CTXFOLD_STORE", &db.url)
        .args(["conversation", "ls"])
        .output()
        .unwrap();
    assert!(stdout(&via_env).contains(&id), "{}", stderr(&via_env));
    std::fs::write(
        s.path().join(".ctxfold/config.toml"),
        format!("[store]\nurl = \"{}\"\n", db.url),
    )
    .unwrap();
    assert!(s.ok(&["conversation", "ls"]).contains(&id));
    // `config show` masks the password.
    let shown = s.ok(&["config", "show"]);
    assert!(
        shown.contains("store.url = \"postgres://ctxfold:***@"),
        "{shown}"
    );
    assert!(!shown.contains(&secret), "{shown}");
    let shown = s.ok(&["config", "show", "--format", "json"]);
    assert!(!shown.contains(&secret), "{shown}");
    // The flag wins over config: the workspace given as a folder.
    assert!(
        s.ok(&["--store", ".", "conversation", "ls"])
            .contains("no conversations")
    );

    // rm moves to the store's trash.
    s.ok(&["conversation", "rm", &id]);
    assert!(s.ok(&["conversation", "ls"]).contains("no conversations"));

    // migrate: the schema version, again and again.
    let m = s.ok(&["store", "migrate", &db.url]);
    assert!(m.contains("schema at version 1"), "{m}");
    assert!(!m.contains(&secret));
}

#[test]
fn bad_stores_are_clear_errors_without_the_password() {
    let s = Scratch::new();
    let here = s.path();

    // Needs no server.
    let err = fails(
        here,
        &["store", "copy", "--from", "/no/such/folder", "--to", "."],
        &[],
    );
    assert!(err.contains("no such folder /no/such/folder"), "{err}");
    // A mistyped URL or a libpq keyword string is taken for a folder: the
    // error still shows no password.
    for spec in [
        "postgresql:/u:typo-s3cret@h/db",
        "host=h password=kw-s3cret dbname=d",
    ] {
        let err = fails(here, &["--store", spec, "c", "ls"], &["s3cret"]);
        assert!(err.contains("no such folder"), "{err}");
    }
    let err = fails(here, &["store", "copy", "--from", ".", "--to", "./"], &[]);
    assert!(err.contains("the same store"), "{err}");
    let not_ws = tempfile::tempdir().unwrap();
    let err = fails(
        here,
        &[
            "store",
            "copy",
            "--from",
            not_ws.path().to_str().unwrap(),
            "--to",
            ".",
        ],
        &[],
    );
    assert!(err.contains("is not a ctxfold workspace"), "{err}");
    let err = fails(
        here,
        &[
            "--store",
            "mysql://u:hunter2secret@h/db",
            "conversation",
            "ls",
        ],
        &["hunter2secret"],
    );
    assert!(err.contains("expected postgres://"), "{err}");
    // Nothing listens on this port.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let refused = format!("postgres://ctxfold:hunter2secret@127.0.0.1:{port}/ctxfold");
    let err = fails(
        here,
        &["--store", &refused, "conversation", "ls"],
        &["hunter2secret"],
    );
    assert!(
        err.contains(&format!("cannot connect to PostgreSQL at 127.0.0.1:{port}")),
        "{err}"
    );
    let err = fails(
        here,
        &["store", "copy", "--from", ".", "--to", &refused],
        &["hunter2secret"],
    );
    assert!(err.contains("cannot connect"), "{err}");
    let err = fails(
        here,
        &["store", "copy", "--from", &refused, "--to", &refused],
        &["hunter2secret"],
    );
    assert!(err.contains("the same store"), "{err}");
}

#[test]
#[ignore = "needs PostgreSQL: CTXFOLD_TEST_PG_URL (scripts/test starts a server)"]
fn a_refused_password_and_a_newer_schema_are_clear_errors_without_the_password() {
    let s = Scratch::new();
    let here = s.path();
    let db =
        test_db!("a_refused_password_and_a_newer_schema_are_clear_errors_without_the_password");
    let good = password_of(&db.url);
    let wrong = db.url.replacen(&format!(":{good}@"), ":wrong-pass-123@", 1);
    let err = fails(
        here,
        &["store", "copy", "--from", ".", "--to", &wrong],
        &["wrong-pass-123", &good],
    );
    assert!(
        err.contains("authentication failed for user `ctxfold`"),
        "{err}"
    );
    assert!(err.contains("the password in the URL was refused"), "{err}");
    let err = fails(
        here,
        &["--store", &wrong, "stats"],
        &["wrong-pass-123", &good],
    );
    assert!(err.contains("authentication failed"), "{err}");

    // A database whose schema a newer ctxfold made.
    s.ok(&["store", "migrate", &db.url]);
    db.client()
        .batch_execute("INSERT INTO ctxfold_schema_version (version) VALUES (999)")
        .unwrap();
    let err = fails(
        here,
        &["store", "copy", "--from", ".", "--to", &db.url],
        &[&good],
    );
    assert!(
        err.contains("schema version 999, newer than this ctxfold supports (version 1)"),
        "{err}"
    );
    let err = fails(here, &["--store", &db.url, "conversation", "ls"], &[&good]);
    assert!(err.contains("upgrade ctxfold"), "{err}");
}

#[test]
#[ignore = "needs PostgreSQL: CTXFOLD_TEST_PG_URL (scripts/test starts a server)"]
fn a_query_on_postgres_records_its_turn_there() {
    let db = test_db!("a_query_on_postgres_records_its_turn_there");
    let script = vec![
        Say::Tool("echo_args", json!({"path": "a.txt"})),
        Say::Text("Checked a.txt."),
        Say::Text("Still fine."),
    ];
    let (base, _seen) = model("openai", script);
    let s = workspace("openai", &base, &format!("[store]\nurl = \"{}\"\n", db.url));
    let out = s.run(&["q", "-m", "fake/m", "--new", "check", "a.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Checked a.txt."));
    // The model is remembered in the store: the next query needs no -m.
    let out = s.run(&["q", "and", "again"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let kinds: Vec<String> = events(&s)
        .iter()
        .map(|r| r["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        kinds,
        [
            "turn_start",
            "user",
            "tool_call",
            "tool_result",
            "assistant",
            "turn_start",
            "user",
            "assistant"
        ]
    );
    let n: i64 = db
        .client()
        .query_one("SELECT count(*) FROM ctxfold_events", &[])
        .unwrap()
        .get(0);
    assert_eq!(n, 8, "the turns are in the database");
    assert!(
        s.ok(&["--store", ".", "conversation", "ls"])
            .contains("no conversations"),
        "and not in the workspace"
    );
}

#[test]
fn a_log_with_unreadable_lines_is_not_copied_and_the_others_are() {
    let s = Scratch::new();
    let ids: Vec<String> = corpus_conversations()
        .iter()
        .take(3)
        .map(|p| s.import(p))
        .collect();
    // A line that is no record, in the middle of the second log.
    let log = s.events_file(&ids[1]);
    let text = std::fs::read_to_string(&log).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    std::fs::write(&log, format!("{first}\n{{\"not\": \"a record\"}}\n{rest}")).unwrap();

    let to = tempfile::tempdir().unwrap();
    let dest = to.path().to_str().unwrap();
    let err = fails(
        s.path(),
        &["store", "copy", "--from", ".", "--to", dest],
        &[],
    );
    assert!(
        err.contains(&ids[1]) && err.contains("cannot read"),
        "{err}"
    );
    assert!(err.contains("1 conversation(s) not copied"), "{err}");
    let copied = to.path().join(".ctxfold/conversations");
    assert!(!copied.join(&ids[1]).exists());
    for id in [&ids[0], &ids[2]] {
        assert!(
            files_under(s.path(), id) == files_under(to.path(), id),
            "{id}"
        );
    }
}

#[test]
#[ignore = "needs PostgreSQL: CTXFOLD_TEST_PG_URL (scripts/test starts a server)"]
fn the_password_comes_from_the_url_pgpassword_or_a_password_file() {
    let db = test_db!("the_password_comes_from_the_url_pgpassword_or_a_password_file");
    let s = Scratch::new();
    let secret = password_of(&db.url);
    let bare = db.url.replacen(&format!(":{secret}@"), "@", 1);
    assert!(!bare.contains(&secret));
    let ls = |envs: &[(&str, &str)]| {
        let mut c = s.command();
        c.env_remove("PGPASSWORD").env_remove("PGPASSFILE");
        for (k, v) in envs {
            c.env(k, v);
        }
        c.args(["--store", &bare, "conversation", "ls"])
            .output()
            .unwrap()
    };

    // None: the error says where a password can come from.
    let out = ls(&[]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("asks for a password and none was given"),
        "{err}"
    );
    assert!(
        err.contains("PGPASSWORD") && err.contains(".pgpass"),
        "{err}"
    );

    let out = ls(&[("PGPASSWORD", &secret)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = ls(&[("PGPASSWORD", "not-it-42")]);
    let err = stderr(&out);
    assert!(
        err.contains("the password in PGPASSWORD was refused"),
        "{err}"
    );
    assert!(
        !err.contains("not-it-42") && !err.contains(&secret),
        "{err}"
    );

    // A password file: host:port:database:user:password, mode 0600.
    let file = s.path().join("pgpass");
    std::fs::write(&file, format!("*:*:*:ctxfold:{secret}\n")).unwrap();
    let f = file.to_str().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = ls(&[("PGPASSFILE", f)]);
    assert!(out.status.success(), "{}", stderr(&out));
    // One that others may read is not used, and the error says why.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = ls(&[("PGPASSFILE", f)]);
    let err = stderr(&out);
    assert!(err.contains("group or others may read it"), "{err}");
    assert!(!err.contains(&secret), "{err}");
}

/// The proxy and the pages on PostgreSQL stop on SIGTERM with exit 0, with
/// no request served and after one: the synchronous client closes its
/// connections with a runtime of its own, which used to start inside the
/// server's and panic (exit 101), a crash to every service manager.
#[test]
fn the_proxy_and_the_pages_on_postgres_stop_cleanly_on_sigterm() {
    let db = test_db!("the_proxy_and_the_pages_on_postgres_stop_cleanly_on_sigterm");
    let s = Scratch::new();
    for command in ["proxy", "ui"] {
        for serve_one in [false, true] {
            let mut server = common::proxy::Proxy::serve(
                &s,
                &["--store", &db.url, command],
                common::proxy::Options::default(),
            );
            if serve_one {
                // A page that reads the store: its connections are open.
                let page = if command == "proxy" { "/ui/" } else { "/" };
                let got = ureq::get(&server.url(page)).call().unwrap();
                assert_eq!(got.status(), 200, "{command}");
            }
            let status = server.terminate();
            // The log reader may still be catching up with the last lines.
            std::thread::sleep(std::time::Duration::from_millis(200));
            let log = server.logged().join("\n");
            assert!(
                status.success(),
                "{command} (served a page: {serve_one}) ended with {status}:\n{log}"
            );
            assert!(!log.contains("panicked"), "{command}: {log}");
        }
    }
}
