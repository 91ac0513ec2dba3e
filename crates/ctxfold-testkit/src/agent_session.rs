//! Agents' session files generated deterministically, for the benchmarks
//! of `ctxfold c import FILE` and `ctxfold compact FILE` on long sessions
//! (issue 48: peak memory within 3x the file).
//!
//! [`claude_code`] writes a Claude Code session (`~/.claude/projects/…/
//! ID.jsonl`) in the shape Claude Code 2.1 writes: turns of a user prompt,
//! the assistant's signed thinking, a tool call and its result (with Claude
//! Code's own copy of the output, `toolUseResult`), a closing answer, and
//! the lines around them (`attachment`, `system` `turn_duration`,
//! `file-history-snapshot`, `last-prompt`); every line with the envelope
//! fields (`parentUuid` chain, `uuid`, `sessionId`, `timestamp`, `cwd`,
//! `version`, …). [`codex`] writes a Codex rollout of the same
//! conversation (`session_meta`, `turn_context`, `response_item` messages,
//! reasoning, function calls and outputs, `event_msg`s). The text is made
//! up; [`Size`] says how long the lines are.

use std::fmt::Write as _;
use std::io::{self, Write};

/// How long the generated lines are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// Lines as long as a working session's on average, tool outputs of a
    /// few KB among short lines (Claude Code about 730 bytes a line, Codex
    /// about 310).
    Typical,
    /// Short lines, few envelope fields (Claude Code about 370 bytes,
    /// Codex about 210): the most lines, and the most JSON objects, a file
    /// of a given size holds.
    Short,
}

/// A deterministic stream of numbers (xorshift), so a session is the same
/// on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A UUID made from `n` (distinct for distinct `n` under one `salt`).
fn uuid(salt: u32, n: u64) -> String {
    let h = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(salt) << 40;
    format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        (h >> 32) as u32,
        (h >> 16) as u16,
        (h & 0xfff) as u16,
        (n & 0xfff) as u16,
        n & 0xffff_ffff_ffff
    )
}

/// The timestamp `i` tenths of a second after the session started.
fn ts(i: u64) -> String {
    let ms = i * 100;
    let s = ms / 1000;
    format!(
        "2026-11-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        1 + (s / 86_400) % 28,
        (s / 3600) % 24,
        (s / 60) % 60,
        s % 60,
        ms % 1000
    )
}

const WORDS: &[&str] = &[
    "the", "build", "fails", "in", "crate", "store", "because", "a", "lock", "is", "held", "while",
    "reading", "log", "snapshot", "test", "passes", "after", "fix", "error", "warning", "function",
    "returns", "value", "path", "file", "line", "check", "again", "with", "new", "index",
];

/// `n` words of made-up prose, JSON-safe (no quotes or backslashes).
fn prose(rng: &mut Rng, n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
    s
}

/// A tool's output of `lines` lines, as a JSON string's inside (newlines
/// escaped).
fn output(rng: &mut Rng, lines: usize) -> String {
    let mut s = String::new();
    for i in 0..lines {
        if i > 0 {
            s.push_str("\\n");
        }
        let _ = write!(
            s,
            "src/module_{}.rs:{}: {}",
            rng.below(40),
            rng.below(900),
            prose(rng, 6)
        );
    }
    s
}

/// The session id of the generated Claude Code sessions.
pub const CLAUDE_SESSION: &str = "5e55a0b1-c1a0-4de0-a0de-000000000001";

/// Write a Claude Code session of `lines` lines to `out`.
pub fn claude_code(out: &mut impl Write, lines: usize, size: Size) -> io::Result<()> {
    let mut w = ClaudeWriter {
        out,
        rng: Rng(0x5eed_c1a0_de00_0001),
        n: 0,
        limit: lines as u64,
        parent: None,
        size,
    };
    let mut turn = 0u64;
    while w.n < w.limit {
        w.turn(turn)?;
        turn += 1;
    }
    Ok(())
}

struct ClaudeWriter<'a, W: Write> {
    out: &'a mut W,
    rng: Rng,
    /// Lines written.
    n: u64,
    limit: u64,
    /// The last message line's uuid.
    parent: Option<String>,
    size: Size,
}

impl<W: Write> ClaudeWriter<'_, W> {
    /// The envelope's fields after the line's own, as Claude Code writes
    /// them last.
    fn tail(&self) -> String {
        match self.size {
            Size::Typical => format!(
                r#""userType":"external","entrypoint":"cli","cwd":"/home/dev/proj/work","sessionId":"{CLAUDE_SESSION}","version":"2.1.332","gitBranch":"main""#
            ),
            Size::Short => format!(r#""sessionId":"{CLAUDE_SESSION}""#),
        }
    }

    /// Write one line, unless the session is long enough.
    fn line(&mut self, text: &str) -> io::Result<bool> {
        if self.n >= self.limit {
            return Ok(false);
        }
        self.out.write_all(text.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.n += 1;
        Ok(true)
    }

    /// A message line: `kind` `user` or `assistant`, `message` its JSON,
    /// `more` the keys between the message and the uuid.
    fn message(&mut self, kind: &str, message: &str, more: &str) -> io::Result<bool> {
        let id = uuid(1, self.n);
        let parent = match &self.parent {
            Some(p) => format!("\"{p}\""),
            None => "null".into(),
        };
        let text = format!(
            r#"{{"parentUuid":{parent},"isSidechain":false,"type":"{kind}","message":{message},{more}"uuid":"{id}","timestamp":"{}",{}}}"#,
            ts(self.n),
            self.tail()
        );
        let wrote = self.line(&text)?;
        self.parent = Some(id);
        Ok(wrote)
    }

    fn assistant(&mut self, turn: u64, content: &str, stop: &str) -> io::Result<bool> {
        let msg = match self.size {
            Size::Typical => format!(
                r#"{{"id":"msg_{turn:08}","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{content}],"stop_reason":"{stop}","stop_sequence":null,"usage":{{"input_tokens":{},"cache_creation_input_tokens":0,"cache_read_input_tokens":{},"output_tokens":{},"service_tier":"standard"}}}}"#,
                self.rng.below(30_000),
                self.rng.below(100_000),
                self.rng.below(2_000)
            ),
            Size::Short => format!(r#"{{"role":"assistant","content":[{content}]}}"#),
        };
        let more = match self.size {
            Size::Typical => format!(r#""requestId":"req_{turn:010}","#),
            Size::Short => String::new(),
        };
        self.message("assistant", &msg, &more)
    }

    fn turn(&mut self, turn: u64) -> io::Result<()> {
        let typical = self.size == Size::Typical;
        let prompt_id = uuid(2, turn);
        let words = if typical { 24 } else { 6 };
        let ask = prose(&mut self.rng, words);
        let more = format!(r#""promptId":"{prompt_id}","#);
        if !self.message(
            "user",
            &format!(r#"{{"role":"user","content":"{ask}"}}"#),
            &more,
        )? {
            return Ok(());
        }
        if typical && turn.is_multiple_of(4) {
            let id = uuid(3, self.n);
            let parent = self.parent.clone().unwrap_or_default();
            let line = format!(
                r#"{{"parentUuid":"{parent}","isSidechain":false,"attachment":{{"type":"todo_reminder","content":[],"itemCount":0}},"type":"attachment","uuid":"{id}","timestamp":"{}",{}}}"#,
                ts(self.n),
                self.tail()
            );
            if !self.line(&line)? {
                return Ok(());
            }
            self.parent = Some(id);
        }
        let steps = 1 + self.rng.below(3);
        for step in 0..steps {
            let thought = prose(&mut self.rng, if typical { 30 } else { 8 });
            let sig = format!(
                "c2lnbmVk{turn:x}x{step:x}{}",
                "A".repeat(if typical { 80 } else { 8 })
            );
            let thinking =
                format!(r#"{{"type":"thinking","thinking":"{thought}","signature":"{sig}"}}"#);
            if !self.assistant(turn, &thinking, "tool_use")? {
                return Ok(());
            }
            let call = format!("toolu_{turn:06}_{step}");
            let cmd = format!("cargo test -p crate_{}", self.rng.below(20));
            let tool_use = if typical {
                format!(
                    r#"{{"type":"tool_use","id":"{call}","name":"Bash","input":{{"command":"{cmd}","description":"Run the tests"}}}}"#
                )
            } else {
                format!(
                    r#"{{"type":"tool_use","id":"{call}","name":"Bash","input":{{"command":"{cmd}"}}}}"#
                )
            };
            if !self.assistant(turn, &tool_use, "tool_use")? {
                return Ok(());
            }
            // Typical sessions: mostly short outputs, now and then a long
            // one (the few KB a build log or a file read takes).
            let out_lines = match self.size {
                Size::Short => 1,
                Size::Typical if self.rng.below(10) == 0 => 12 + self.rng.below(20) as usize,
                Size::Typical => 1 + self.rng.below(3) as usize,
            };
            let out = output(&mut self.rng, out_lines);
            let source = self.parent.clone().unwrap_or_default();
            let result = format!(
                r#"{{"role":"user","content":[{{"tool_use_id":"{call}","type":"tool_result","content":"{out}","is_error":false}}]}}"#
            );
            let more = if typical {
                format!(
                    r#""promptId":"{prompt_id}","toolUseResult":{{"stdout":"{out}","stderr":"","interrupted":false,"isImage":false}},"sourceToolAssistantUUID":"{source}","#
                )
            } else {
                format!(r#""promptId":"{prompt_id}","#)
            };
            if !self.message("user", &result, &more)? {
                return Ok(());
            }
        }
        let answer = prose(&mut self.rng, if typical { 40 } else { 10 });
        let text = format!(r#"{{"type":"text","text":"{answer}"}}"#);
        if !self.assistant(turn, &text, "end_turn")? {
            return Ok(());
        }
        if typical {
            let parent = self.parent.clone().unwrap_or_default();
            let id = uuid(4, self.n);
            let line = format!(
                r#"{{"parentUuid":"{parent}","isSidechain":false,"type":"system","subtype":"turn_duration","durationMs":{},"isMeta":false,"timestamp":"{}","uuid":"{id}",{}}}"#,
                self.rng.below(60_000),
                ts(self.n),
                self.tail()
            );
            if !self.line(&line)? {
                return Ok(());
            }
            let snapshot = format!(
                r#"{{"type":"file-history-snapshot","messageId":"{parent}","snapshot":{{"messageId":"{parent}","trackedFileBackups":{{}},"timestamp":"{}"}},"isSnapshotUpdate":false}}"#,
                ts(self.n)
            );
            if !self.line(&snapshot)? {
                return Ok(());
            }
        }
        let last = format!(
            r#"{{"type":"last-prompt","lastPrompt":"{ask}","leafUuid":"{}","sessionId":"{CLAUDE_SESSION}"}}"#,
            self.parent.clone().unwrap_or_default()
        );
        self.line(&last)?;
        Ok(())
    }
}

/// The session id of the generated Codex rollouts.
pub const CODEX_SESSION: &str = "01a23c0b-a32b-72b2-8887-000000000001";

/// Write a Codex rollout of `lines` lines to `out`.
pub fn codex(out: &mut impl Write, lines: usize, size: Size) -> io::Result<()> {
    let mut rng = Rng(0x5eed_c0de_0000_0001);
    let limit = lines as u64;
    let mut n = 0u64;
    let typical = size == Size::Typical;
    let put = |out: &mut dyn Write, n: &mut u64, kind: &str, payload: &str| -> io::Result<bool> {
        if *n >= limit {
            return Ok(false);
        }
        writeln!(
            out,
            r#"{{"timestamp":"{}","type":"{kind}","payload":{payload}}}"#,
            ts(*n)
        )?;
        *n += 1;
        Ok(true)
    };
    let meta = format!(
        r#"{{"id":"{CODEX_SESSION}","timestamp":"{}","cwd":"/home/dev/proj/work","originator":"codex_exec","cli_version":"0.171.0","source":"exec","model_provider":"openai"}}"#,
        ts(0)
    );
    put(out, &mut n, "session_meta", &meta)?;
    let mut turn = 0u64;
    while n < limit {
        let turn_id = uuid(5, turn);
        if typical {
            let ctx = format!(
                r#"{{"turn_id":"{turn_id}","cwd":"/home/dev/proj/work","approval_policy":"never","sandbox_policy":{{"type":"danger-full-access"}},"model":"gpt-6.2","summary":"none"}}"#
            );
            if !put(out, &mut n, "turn_context", &ctx)? {
                break;
            }
        }
        let ask = prose(&mut rng, if typical { 24 } else { 6 });
        let user = format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{ask}"}}]}}"#
        );
        if !put(out, &mut n, "response_item", &user)? {
            break;
        }
        let steps = 1 + rng.below(3);
        for step in 0..steps {
            let thought = prose(&mut rng, if typical { 30 } else { 8 });
            let enc = "Z".repeat(if typical { 120 } else { 12 });
            let reasoning = format!(
                r#"{{"type":"reasoning","summary":[{{"type":"summary_text","text":"{thought}"}}],"content":null,"encrypted_content":"{enc}"}}"#
            );
            if !put(out, &mut n, "response_item", &reasoning)? {
                break;
            }
            let call = format!("call_{turn:06}_{step}");
            let cmd = format!("cargo test -p crate_{}", rng.below(20));
            let fc = format!(
                r#"{{"type":"function_call","name":"exec_command","arguments":"{{\"cmd\":\"{cmd}\"}}","call_id":"{call}"}}"#
            );
            if !put(out, &mut n, "response_item", &fc)? {
                break;
            }
            let out_lines = match size {
                Size::Short => 1,
                Size::Typical if rng.below(10) == 0 => 12 + rng.below(20) as usize,
                Size::Typical => 1 + rng.below(3) as usize,
            };
            let text = output(&mut rng, out_lines);
            let fco = format!(
                r#"{{"type":"function_call_output","call_id":"{call}","output":"{text}"}}"#
            );
            if !put(out, &mut n, "response_item", &fco)? {
                break;
            }
            if typical {
                let count = format!(
                    r#"{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{},"output_tokens":{}}}}},"rate_limits":null}}"#,
                    rng.below(100_000),
                    rng.below(5_000)
                );
                if !put(out, &mut n, "event_msg", &count)? {
                    break;
                }
            }
        }
        let answer = prose(&mut rng, if typical { 40 } else { 10 });
        let msg = format!(
            r#"{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"{answer}"}}]}}"#
        );
        if !put(out, &mut n, "response_item", &msg)? {
            break;
        }
        turn += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_is_json_and_the_count_is_asked_for() {
        for size in [Size::Typical, Size::Short] {
            for (name, lines) in [("claude", 1000), ("codex", 1000)] {
                let mut buf = Vec::new();
                if name == "claude" {
                    claude_code(&mut buf, lines, size).unwrap();
                } else {
                    codex(&mut buf, lines, size).unwrap();
                }
                let text = String::from_utf8(buf).unwrap();
                assert_eq!(text.lines().count(), lines, "{name} {size:?}");
                for l in text.lines() {
                    let v: serde_json::Value = serde_json::from_str(l)
                        .unwrap_or_else(|e| panic!("{name} {size:?}: {e}: {l}"));
                    assert!(v.get("type").is_some(), "{l}");
                }
            }
        }
    }
}
