//! The agent-shaped conversation the host's benchmarks run on: turns of a
//! request, six `read_file` calls with their results, and an answer.

use ctxfold_core::{Body, Log, Record};
use serde_json::json;

/// Turn `k`.
pub fn turn(k: usize) -> Vec<Body> {
    let mut out = vec![
        Body::TurnStart,
        Body::User {
            content: format!("Turn {k}: please look at the failing test and fix it."),
            author: None,
        },
    ];
    for s in 0..6 {
        out.push(Body::ToolCall {
            id: format!("c{k}-{s}"),
            name: "read_file".into(),
            arguments: json!({"path": format!("src/m{s}.rs")}).into(),
        });
        out.push(Body::ToolResult {
            id: format!("c{k}-{s}"),
            content: "fn compute(input: &str) -> usize { input.len() }\n".repeat(8),
            is_error: false,
        });
    }
    out.push(Body::Assistant {
        content: "The test passes now.".into(),
    });
    out
}

/// About `events` events of whole turns; the log and its turn count.
pub fn turns_of(events: usize) -> (Log, usize) {
    let mut log = Log::new();
    let mut k = 0;
    while log.len() < events {
        for b in turn(k) {
            log.push(Record::new(log.next_seq(), "t", b));
        }
        k += 1;
    }
    (log, k)
}
