//! The recognizer, shape by shape.

use super::*;

fn texts(content: &str) -> Vec<String> {
    diagnostics(content).into_iter().map(|d| d.text).collect()
}

fn kinds(content: &str) -> Vec<DiagnosticKind> {
    diagnostics(content).into_iter().map(|d| d.kind).collect()
}

/// The statics' `expect`s cannot fail: every pattern compiles.
#[test]
fn every_pattern_compiles() {
    recognize::force_all();
    logs::force_all();
}

#[test]
fn compiler_errors_and_warnings_keep_their_location() {
    let rustc = "   Compiling x v0.1.0\nerror[E0308]: mismatched types\n  --> src/main.rs:4:18\n   |\n4  |     let x: u32 = \"a\";\n   |            ---   ^^^ expected `u32`\n\nwarning: unused variable: `y`\n --> src/lib.rs:2:9\n\nerror: could not compile `x` (bin \"x\") due to 1 previous error; 1 warning emitted\n";
    assert_eq!(
        texts(rustc),
        [
            "error[E0308]: mismatched types (src/main.rs:4:18)",
            "warning: unused variable: `y` (src/lib.rs:2:9)",
            "error: could not compile `x` (bin \"x\") due to 1 previous error; 1 warning emitted",
        ]
    );
    let gcc = "main.c: In function 'main':\nmain.c:5:3: error: 'x' undeclared (first use in this function)\nmain.c:7:1: warning: control reaches end of non-void function\n";
    let d = diagnostics(gcc);
    assert_eq!(d[0].location.as_deref(), Some("main.c:5:3"));
    assert_eq!(d[1].kind, DiagnosticKind::Warning);
    let tsc = "src/app.ts(12,5): error TS2322: Type 'string' is not assignable to type 'number'.";
    assert_eq!(
        diagnostics(tsc)[0].location.as_deref(),
        Some("src/app.ts:12:5")
    );
    // Wrapped in JSON, after a prefix.
    let wrapped = r#"{"message":"Cargo command failed: error[E0433]: failed to resolve: could not find `vtab` in `rusqlite`\n   --> crates/g/src/search.rs:59:15\n","trace":[]}"#;
    assert_eq!(
        texts(wrapped),
        [
            "error[E0433]: failed to resolve: could not find `vtab` in `rusqlite` (crates/g/src/search.rs:59:15)"
        ]
    );
}

#[test]
fn panics_tracebacks_and_failing_tests() {
    let panic = "running 3 tests\ntest a::b ... FAILED\n\nthread 'a::b' panicked at src/a.rs:10:5:\nassertion `left == right` failed\n  left: 1\n right: 2\nnote: run with `RUST_BACKTRACE=1`\ntest result: FAILED. 2 passed; 1 failed\n";
    assert_eq!(
        texts(panic),
        [
            "test a::b ... FAILED",
            "thread 'a::b' panicked at src/a.rs:10:5: assertion `left == right` failed (left: 1, right: 2)",
            "test result: FAILED. 2 passed; 1 failed",
        ]
    );
    let py = "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    main()\n  File \"app.py\", line 2, in main\n    int('x')\nValueError: invalid literal for int() with base 10: 'x'\n";
    let d = diagnostics(py);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].kind, DiagnosticKind::Exception);
    assert_eq!(
        d[0].text,
        "ValueError: invalid literal for int() with base 10: 'x' (app.py:2)"
    );
    let go =
        "--- FAIL: TestParse (0.00s)\n    parse_test.go:12: got 1, want 2\nFAIL\nexit status 1\n";
    assert_eq!(
        kinds(go),
        [
            DiagnosticKind::TestFailure,
            // What the test said, and the package's verdict.
            DiagnosticKind::Exception,
            DiagnosticKind::TestFailure,
            DiagnosticKind::ExitStatus
        ]
    );
    let node = "TypeError: x.map is not a function\n    at render (src/view.js:14:9)\n";
    assert_eq!(
        texts(node),
        ["TypeError: x.map is not a function (src/view.js:14:9)"]
    );
    assert_eq!(
        kinds(
            "pytest\nFAILED tests/test_a.py::test_b - AssertionError\n=== 1 failed, 3 passed in 0.1s ==="
        ),
        [DiagnosticKind::TestFailure, DiagnosticKind::TestFailure]
    );
}

#[test]
fn more_tools_shapes() {
    let cases: &[(&str, DiagnosticKind)] = &[
        (
            "make: *** [Makefile:12: build] Error 1",
            DiagnosticKind::Error,
        ),
        (
            "make[2]: *** [src/Makefile:40: app.o] Error 2",
            DiagnosticKind::Error,
        ),
        ("npm ERR! code ELIFECYCLE", DiagnosticKind::Error),
        ("npm error Missing script: \"build\"", DiagnosticKind::Error),
        (
            "src/app.ts:12:5 - error TS2322: Type 'string' is not assignable to type 'number'.",
            DiagnosticKind::Error,
        ),
        (" FAIL  src/sum.test.js", DiagnosticKind::TestFailure),
        (
            "        FAIL [   0.004s] crate::tests::adds",
            DiagnosticKind::TestFailure,
        ),
        (
            "ERROR tests/test_io.py - ModuleNotFoundError: No module named 'x'",
            DiagnosticKind::TestFailure,
        ),
        (
            "==== 1 failed, 2 errors in 0.12s ====",
            DiagnosticKind::TestFailure,
        ),
        (
            "E       AssertionError: assert 1 == 2",
            DiagnosticKind::Exception,
        ),
        (
            "Exception in thread \"main\" java.lang.NullPointerException: name",
            DiagnosticKind::Exception,
        ),
        (
            "thread 'main' panicked at 'index out of bounds', src/main.rs:4:5",
            DiagnosticKind::Panic,
        ),
    ];
    for (line, kind) in cases {
        assert_eq!(kinds(line).first(), Some(kind), "{line}: {:?}", texts(line));
    }
    assert_eq!(
        texts("thread 'main' panicked at 'boom', src/main.rs:4:5"),
        ["thread 'main' panicked at src/main.rs:4:5: boom"]
    );
    // Since Rust 1.87 the thread's id follows its name: it changes
    // every run, and is left out so the same panic is one diagnostic.
    assert_eq!(
        texts("thread 'a::t' (2323049) panicked at src/a.rs:1:2:\nboom"),
        ["thread 'a::t' panicked at src/a.rs:1:2: boom"]
    );
    // Compared values are cut.
    let long = format!(
        "thread 't' panicked at src/a.rs:1:2:\nassertion `left == right` failed\n  left: {}\n right: 1\n",
        "x".repeat(500)
    );
    let d = texts(&long);
    assert!(
        d[0].contains(&format!(
            "(left: {}…, right: 1)",
            "x".repeat(VALUE_CHARS - 1)
        )),
        "{d:?}"
    );
    // Not tests or exceptions: a constant, a class named in prose.
    assert!(texts("    FAIL = 1").is_empty());
    assert!(texts("ValueError").is_empty());
}

#[test]
fn exits_missing_files_and_refusals() {
    assert_eq!(
        kinds("Process exited with code 101"),
        [DiagnosticKind::ExitStatus]
    );
    assert!(kinds("Process exited with code 0").is_empty());
    assert_eq!(
        kinds("cat: x.txt: No such file or directory"),
        [DiagnosticKind::NotFound]
    );
    assert_eq!(
        kinds("sh: 1: rg: command not found"),
        [DiagnosticKind::NotFound]
    );
    assert_eq!(
        kinds(
            "open /etc/shadow: permission denied\nmkdir: cannot create directory 'x': Permission denied"
        ),
        [DiagnosticKind::PermissionDenied]
    );
}

#[test]
fn code_and_grep_hits_that_name_errors_do_not_count() {
    for line in [
        "src/model.rs:55:    error: String,",
        "src/net.rs:88: error!(\"connection lost: {e}\");",
        "    except FileNotFoundError:",
        "except PermissionError as e:",
        "if (err.code === 'ENOENT') {",
        "if (errno == EACCES) return -1;",
        "let msg = \"exit code 2\";",
        "2024-05-01T10:00:00 info: error: transient failure, retrying",
    ] {
        assert!(texts(line).is_empty(), "{line}: {:?}", texts(line));
    }
    // A long line is read by its start, not skipped.
    let long = format!("error: template instantiation failed {}", "x".repeat(5_000));
    assert_eq!(kinds(&long), [DiagnosticKind::Error]);
    // Thousands of distinct diagnostics: read up to a bound, linearly.
    let many: String = (0..50_000)
        .map(|k| format!("test t{k} ... FAILED\n"))
        .collect();
    assert_eq!(diagnostics(&many).len(), MAX_PER_RESULT);
}

#[test]
fn what_only_mentions_errors_does_not_count() {
    let code = "pub enum Error {\n    NotFound,\n}\nfn error(&self) -> Error {\n    error: String,\n    // error: this is a comment about errors\n    return Err(anyhow!(\"error: {e}\"));\n}\nimpl From<io::Error> for Error {}\n";
    assert!(texts(code).is_empty(), "{:?}", texts(code));
    let log = "2026-01-01T00:00:00Z  INFO server: error: connection retried, error_count=0\n[DEBUG] warning: cache miss on key a\nlevel=info msg=\"no errors found\"\n";
    assert!(texts(log).is_empty(), "{:?}", texts(log));
    let prose = "Runtime error - IO errors, file not found, etc.\nThe test failed once last week, then passed.\nerror: true\n";
    assert!(texts(prose).is_empty(), "{:?}", texts(prose));
    assert!(texts("warning: 3 warnings emitted").is_empty());
}

#[test]
fn error_like_lines_are_every_line_a_diagnostic_is_read_from() {
    let out = "   Compiling x v0.1.0\nerror[E0308]: mismatched types\n  --> src/main.rs:4:18\n   |\nerror[E0308]: mismatched types\n  --> src/main.rs:4:18\nTraceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    main()\nValueError: bad\nall done\n";
    // Repeated diagnostics count at each of their lines.
    assert_eq!(error_like_lines(out), [1, 2, 4, 5, 6, 7, 9]);
    assert!(error_like_lines("1\n2\n3\n").is_empty());
}

#[test]
fn a_failed_result_is_a_diagnostic_whatever_its_shape() {
    let d = result_diagnostics("\n  The tool timed out after 60 s\nmore", true);
    assert_eq!(d[0].text, "The tool timed out after 60 s");
    assert!(result_diagnostics("all good", false).is_empty());
    // The headline is the first error, not the first warning.
    let h = headline("warning: unused import: `a`\nerror[E0425]: cannot find value `x`").unwrap();
    assert_eq!(h.kind, DiagnosticKind::Error);
    // Long lines are cut, each result's diagnostics once.
    let long = format!("error: {}", "word ".repeat(100));
    assert_eq!(diagnostics(&format!("{long}\n{long}")).len(), 1);
    assert!(diagnostics(&long)[0].text.chars().count() <= DIAGNOSTIC_CHARS);
}

/// The kind of the one diagnostic `line` holds, if it holds exactly one.
fn kind_of(line: &str) -> Option<DiagnosticKind> {
    match kinds(line).as_slice() {
        [k] => Some(*k),
        _ => None,
    }
}

#[test]
fn log_lines_by_their_level_in_every_logger_shape() {
    use DiagnosticKind::{LogError, LogWarning};
    let cases: &[(&str, DiagnosticKind)] = &[
        ("2026-12-06T10:00:00Z ERROR payment failed id=3", LogError),
        (
            "2026-12-06T10:00:00.123456Z ERROR app::db: pool timed out",
            LogError,
        ),
        ("2026-12-06 10:00:00,123 WARN cache nearly full", LogWarning),
        ("[ERROR] Failed to execute goal on project x", LogError),
        ("[WARNING] Using platform encoding UTF-8", LogWarning),
        ("[error] upstream closed the connection", LogError),
        ("ERROR: relation \"users\" does not exist", LogError),
        ("ERROR: Could not find a version that satisfies x", LogError),
        ("WARNING: Retrying after connection broken", LogWarning),
        (
            "FATAL: password authentication failed for user \"x\"",
            LogError,
        ),
        ("CRITICAL: disk full on /var", LogError),
        // glog.
        (
            "E1206 10:00:00.123456  4242 server.cc:88] RPC failed: deadline",
            LogError,
        ),
        (
            "F1206 10:00:00.123456  4242 main.cc:12] Check failed: ok",
            LogError,
        ),
        (
            "W1206 10:00:00.123456  4242 pool.cc:40] slow worker",
            LogWarning,
        ),
        // logfmt and Go's slog.
        (
            "time=2026-12-06T10:00:00Z level=error msg=\"db down\" attempt=3",
            LogError,
        ),
        (
            "ts=2026-12-06T10:00:00Z level=warn msg=\"slow query\"",
            LogWarning,
        ),
        (
            "time=2026-12-06T10:00:00Z level=ERROR msg=\"boom\"",
            LogError,
        ),
        // JSON lines.
        (
            r#"{"level":"error","ts":1765015200,"msg":"job failed","job":7}"#,
            LogError,
        ),
        (
            r#"{"severity":"ERROR","message":"quota exceeded"}"#,
            LogError,
        ),
        (
            r#"{"level":50,"time":1765015200,"msg":"request failed"}"#,
            LogError,
        ),
        (r#"{"level":"warn","msg":"retrying"}"#, LogWarning),
        // log4j and logback.
        (
            "2026-12-06 10:00:00,123 [main] ERROR com.x.Payment - charge declined",
            LogError,
        ),
        (
            "10:00:00.123 [http-nio-8080-exec-1] WARN  c.x.Api - slow call",
            LogWarning,
        ),
        // Python's logging, default and basic formats.
        ("ERROR:root:could not open the socket", LogError),
        ("WARNING:urllib3.connectionpool:Retrying", LogWarning),
        (
            "2026-12-06 10:00:00,123 - worker - ERROR - task 12 crashed",
            LogError,
        ),
        // syslog, nginx, Apache, env_logger, zerolog, logrus, zap.
        (
            "Dec  6 10:00:00 host app[123]: ERROR queue stalled",
            LogError,
        ),
        (
            "2026/12/06 10:00:00 [error] 12#0: *1 connect() failed",
            LogError,
        ),
        (
            "[Sat Dec 06 10:00:00.123456 2026] [core:error] [pid 1] AH00124: loop",
            LogError,
        ),
        ("[2026-12-06T10:00:00Z ERROR app] bind failed", LogError),
        ("10:00AM ERR connection reset component=db", LogError),
        (
            "ERRO[0003] error waiting for container: context canceled",
            LogError,
        ),
        (
            "2026-12-06T10:00:00.000Z\terror\tapp/main.go:12\tfailed to start",
            LogError,
        ),
        // docker compose's prefix, a colored level.
        ("web-1  | 2026-12-06 10:00:00 ERROR worker died", LogError),
        ("\x1b[31mERROR\x1b[0m could not bind port 80", LogError),
        // A level in a message does not hide the error before it.
        ("2026-12-06 10:00:00 ERROR INFO table missing", LogError),
    ];
    for (line, kind) in cases {
        assert_eq!(kind_of(line), Some(*kind), "{line}: {:?}", texts(line));
    }
    // The text is the line, colors left out.
    assert_eq!(
        texts("\x1b[31mERROR\x1b[0m could not bind port 80"),
        ["ERROR could not bind port 80"]
    );
    // Log errors count for the retention report; log warnings do not.
    assert!(DiagnosticKind::LogError.is_primary() && DiagnosticKind::LogError.is_failure());
    assert!(!DiagnosticKind::LogWarning.is_primary());
}

#[test]
fn quiet_log_lines_and_code_that_names_levels_do_not_count() {
    for line in [
        "2026-12-06T10:00:00Z INFO request error_count=0 errors=none",
        "2026-12-06T10:00:00Z DEBUG retrying after error: timeout",
        "[INFO] BUILD SUCCESS, 0 errors",
        "INFO:root:no errors found",
        "I1206 10:00:00.123456  4242 server.cc:88] error budget fine",
        "level=info msg=\"error rate 0%\"",
        r#"{"level":"info","msg":"error handler installed"}"#,
        r#"{"level":30,"msg":"will retry on error"}"#,
        // Source code, configuration, prose.
        "ERROR = 1",
        "    ERROR,",
        "    ERROR: \"E\",",
        "    logger.error(\"could not connect: %s\", e)",
        "log.Error(\"boom\")",
        "if level == ERROR {",
        r#"{"level": "error"}"#,
        "# ERROR: this comment explains errors",
        "The ERROR level is for failures only.",
        "ERROR",
    ] {
        assert!(texts(line).is_empty(), "{line}: {:?}", texts(line));
    }
}

#[test]
fn test_runners_failures() {
    use DiagnosticKind::{Exception, TestFailure};
    let cases: &[(&str, DiagnosticKind)] = &[
        (
            "FAILED tests/test_cart.py::test_total - assert 3 == 4",
            TestFailure,
        ),
        (
            "ERROR tests/test_db.py::test_connect - OSError: refused",
            TestFailure,
        ),
        ("E       assert 3 == 4", Exception),
        ("tests/test_cart.py:12: AssertionError", Exception),
        ("  ● cart › adds two items", TestFailure),
        ("    ✕ adds two items (4 ms)", TestFailure),
        ("Tests:       1 failed, 4 passed, 5 total", TestFailure),
        ("--- FAIL: TestTotal (0.00s)", TestFailure),
        ("    cart_test.go:21: got 3, want 4", Exception),
        ("FAIL\texample.com/cart\t0.004s", TestFailure),
        ("FAIL", TestFailure),
        ("test cart::adds ... FAILED", TestFailure),
        (
            "FAILURE: Build failed with an exception.",
            DiagnosticKind::Error,
        ),
        ("Caused by: java.io.IOException: broken pipe", Exception),
    ];
    for (line, kind) in cases {
        assert_eq!(kind_of(line), Some(*kind), "{line}: {:?}", texts(line));
    }
    // jest's console section is not a failure.
    assert!(texts("  ● Console").is_empty());
    // A passing run has none.
    assert!(texts("  ✓ adds two items (3 ms)\nTests: 0 failed, 5 passed\nok  \texample.com/cart\t0.004s\nPASS src/cart.test.js").is_empty());
}

#[test]
fn saved_output_lines_name_the_way_back() {
    let claude = "<persisted-output>\nOutput too large (29.4KB). Full output saved to: /root/.claude/projects/-work/5f0c/tool-results/toolu_01AbC.txt\n\nPreview (first 2KB):\n2026-12-06T10:00:00Z INFO starting\n2026-12-06T10:00:01Z ERROR payment failed id=3\n...\n</persisted-output>";
    let d = diagnostics(claude);
    assert_eq!(
        d.iter().map(|d| d.kind).collect::<Vec<_>>(),
        [DiagnosticKind::SavedOutput, DiagnosticKind::LogError]
    );
    assert_eq!(
        d[0].text,
        "Output too large (29.4KB). Full output saved to: /root/.claude/projects/-work/5f0c/tool-results/toolu_01AbC.txt"
    );
    assert_eq!(error_like_lines(claude), [1, 5]);
    for line in [
        "Output exceeded the 64KB persist limit; only the first 64KB were saved to: /tmp/x/toolu_1.txt",
        "Output truncated (31KB total). Full output saved to: /tmp/tasks/b1.output",
        "It was NOT killed: it continues as background task b1, and its output streams to /tmp/tasks/b1.output.",
        "Full log written to ./target/build.log",
        "Test results saved to build/test-results/test/TEST-x.xml",
        "see /tmp/ci-1234.log for the full output",
        "Wrote the full output to ~/logs/run-7.txt",
        "Full output: /var/tmp/job-12.out",
        "web-1  | output saved to /data/out.log",
    ] {
        assert_eq!(
            kind_of(line),
            Some(DiagnosticKind::SavedOutput),
            "{line}: {:?}",
            texts(line)
        );
    }
    // The path is kept whole, past a diagnostic's length.
    let long = format!("Full output saved to: /tmp/{}/out.txt", "d".repeat(400));
    assert_eq!(texts(&long), std::slice::from_ref(&long));
    for line in [
        "Model saved to ckpt/epoch-3.pt",
        "Output saved to disk.",
        "println!(\"Full output saved to: {}\", path.display());",
        "// logs are written to /var/log/app.log",
        "let msg = \"output written to /tmp/x\";",
        "Full output available at https://ci.example.com/run/12",
    ] {
        assert!(texts(line).is_empty(), "{line}: {:?}", texts(line));
    }
    assert!(DiagnosticKind::SavedOutput.is_primary());
    assert!(!DiagnosticKind::SavedOutput.is_failure());
}

#[test]
fn past_the_bound_distinct_diagnostics_are_counted_and_saved_lines_kept() {
    let mut out: String = (0..150)
        .map(|k| format!("2026-12-06T10:00:{:02}Z ERROR shard {k} failed\n", k % 60))
        .collect();
    out.push_str("Full output saved to: /tmp/run/out.txt\n");
    let f = result_findings(&out, false);
    assert_eq!(f.len(), MAX_PER_RESULT + 1);
    assert_eq!(f.unkept, 50);
    assert_eq!(f.last().map(|d| d.kind), Some(DiagnosticKind::SavedOutput));
    // Every line is error-like, none bounded.
    assert_eq!(error_like_lines(&out).len(), 151);
    assert_eq!(error_like(&out).len(), 151);
}

#[test]
fn a_json_log_line_is_read_as_a_log_line_a_json_wrapper_by_its_strings() {
    let log = r#"{"level":"error","msg":"job failed","job":7}"#;
    assert_eq!(kinds(log), [DiagnosticKind::LogError]);
    assert_eq!(result_text(log), log);
    let wrapped = r#"{"stdout":"building\nERROR: disk full\n","exit":1}"#;
    assert_eq!(kinds(wrapped), [DiagnosticKind::LogError]);
    assert_eq!(result_text(wrapped), "building\nERROR: disk full\n\n");
    // As it stands, the wrapper's one line holds no error-like line.
    assert!(error_like_lines(wrapped).is_empty());
}

#[test]
fn a_failed_result_with_only_where_it_was_saved_keeps_its_cause_too() {
    let d = result_diagnostics(
        "the server said no\nFull output saved to: /tmp/x/out.txt",
        true,
    );
    assert_eq!(
        d.iter().map(|d| d.kind).collect::<Vec<_>>(),
        [DiagnosticKind::Error, DiagnosticKind::SavedOutput]
    );
}
