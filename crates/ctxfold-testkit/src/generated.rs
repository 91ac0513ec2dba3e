//! Agent-shaped records, generated deterministically for the benchmarks:
//! prose, code, tool calls and outputs of realistic sizes, turns of an
//! agent session (`Gen::turn`, about 1.7 KB a record) and turns of small
//! records (`Gen::small_turn`, about 220 bytes: the short messages, tool
//! calls and results real agent logs are full of). The store's log
//! benchmark and the command's load benchmark read the same logs.

use ctxfold_core::{Body, Object, Record};
use serde_json::{Value, json};

/// Deterministic content generator (splitmix64).
pub struct Gen(u64);

const WORDS: &[&str] = &[
    "the",
    "a",
    "to",
    "of",
    "and",
    "in",
    "is",
    "it",
    "that",
    "this",
    "we",
    "should",
    "not",
    "function",
    "returns",
    "error",
    "config",
    "parser",
    "test",
    "fails",
    "because",
    "record",
    "log",
    "append",
    "file",
    "path",
    "check",
    "whether",
    "value",
    "line",
    "load",
    "crate",
    "module",
    "struct",
    "field",
    "compile",
    "warning",
    "lock",
    "JSON",
    "turn",
    "tool",
    "result",
    "call",
    "cache",
    "buffer",
    "index",
    "offset",
    "bytes",
    "memory",
    "fix",
    "issue",
    "branch",
    "commit",
    "refactor",
    "option",
    "default",
    "missing",
    "expected",
    "found",
    "instead",
    "probably",
    "first",
    "then",
    "after",
    "before",
    "when",
    "every",
    "each",
    "only",
    "still",
    "works",
    "broken",
    "handler",
    "request",
    "response",
    "timeout",
    "retry",
    "user",
    "session",
    "naïve",
    "café",
    "→",
    "—",
    "größer",
    "✓",
    "日本語",
];

const IDENTS: &[&str] = &[
    "parse_line",
    "load",
    "append",
    "records",
    "offset",
    "buf",
    "reader",
    "seq",
    "next_seq",
    "config",
    "path",
    "handle",
    "state",
    "result",
    "err",
    "ctx",
    "value",
    "items",
    "len",
];

const FILES: &[&str] = &[
    "src/lib.rs",
    "src/main.rs",
    "src/parser.rs",
    "src/event_log.rs",
    "src/config.rs",
    "crates/core/src/record.rs",
    "tests/cli.rs",
    "Cargo.toml",
    "README.md",
    "src/server/handler.rs",
];

const TOOLS: &[&str] = &["read_file", "bash", "grep", "edit_file", "list_dir"];

impl Gen {
    pub fn new(seed: u64) -> Gen {
        Gen(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    pub fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())]
    }

    /// A size between `lo` and `hi`, uniform on a log scale: mostly small,
    /// sometimes large, as tool outputs are.
    pub fn log_size(&mut self, lo: usize, hi: usize) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (lo as f64 * (hi as f64 / lo as f64).powf(u)) as usize
    }

    pub fn id(&mut self, prefix: &str) -> String {
        const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let mut s = String::from(prefix);
        for _ in 0..24 {
            s.push(ALNUM[self.below(ALNUM.len())] as char);
        }
        s
    }

    /// Prose of `lo..=hi` bytes: sentences, paragraphs, inline code.
    pub fn prose(&mut self, lo: usize, hi: usize) -> String {
        let n = self.range(lo, hi);
        let mut s = String::with_capacity(n + 64);
        while s.len() < n {
            let words = self.range(6, 22);
            for i in 0..words {
                let w = if self.chance(6) {
                    format!("`{}()`", self.pick(IDENTS))
                } else if self.chance(3) {
                    format!("\"{}\"", self.pick(FILES))
                } else {
                    self.pick(WORDS).to_owned()
                };
                if i == 0 {
                    let mut c = w.chars();
                    if let Some(f) = c.next() {
                        s.extend(f.to_uppercase());
                        s.push_str(c.as_str());
                    }
                } else {
                    s.push(' ');
                    s.push_str(&w);
                }
            }
            s.push_str(if self.chance(15) { ".\n\n" } else { ". " });
            if self.chance(4) {
                s.push_str("```rust\n");
                let code = self.code(150, 600);
                s.push_str(&code);
                s.push_str("```\n\n");
            }
        }
        s
    }

    /// Code-like lines of `lo..=hi` bytes, with quotes, escapes and tabs.
    pub fn code(&mut self, lo: usize, hi: usize) -> String {
        let n = self.range(lo, hi);
        let mut s = String::with_capacity(n + 80);
        while s.len() < n {
            let indent = self.below(4) * 4;
            s.extend(std::iter::repeat_n(' ', indent));
            let (a, b) = (self.pick(IDENTS), self.pick(IDENTS));
            match self.below(6) {
                0 => s.push_str(&format!("let {a} = {b}.get(\"{}\")?;\n", self.pick(WORDS))),
                1 => s.push_str(&format!("if {a}.len() > {} {{\n", self.below(4096))),
                2 => s.push_str(&format!(
                    "return Err(Error::new(\"bad {a}: {{}}\\n\", {b}));\n"
                )),
                3 => s.push_str(&format!(
                    "// {}: check {a}\t(see {})\n",
                    self.pick(WORDS),
                    self.pick(FILES)
                )),
                4 => s.push_str(&format!(
                    "fn {a}(&self, {b}: &str) -> Result<(), Error> {{\n"
                )),
                _ => s.push_str("}\n"),
            }
        }
        s
    }

    pub fn call(&mut self, tool: &str) -> Value {
        let file = self.pick(FILES);
        match tool {
            "read_file" => json!({"path": file, "offset": self.below(400), "limit": 200}),
            "bash" => json!({
                "command": format!("cd /repo && cargo test -p {} -- {} 2>&1 | tail -80", self.pick(IDENTS), self.pick(IDENTS)),
                "timeout_ms": 120000
            }),
            "grep" => {
                json!({"pattern": format!("fn {}\\(", self.pick(IDENTS)), "path": "src/", "context": 2})
            }
            "edit_file" => json!({
                "path": file,
                "old_str": self.code(80, 600),
                "new_str": self.code(80, 800),
            }),
            _ => json!({"path": file.rsplit_once('/').map_or(".", |p| p.0), "depth": 2}),
        }
    }

    /// A tool's output, about `n` bytes.
    pub fn output(&mut self, tool: &str, n: usize, error: bool) -> String {
        let mut s = String::with_capacity(n + 120);
        if error {
            s.push_str(&format!(
                "error[E0{}]: mismatched types\n  --> {}:{}:{}\n   |\n",
                self.range(100, 799),
                self.pick(FILES),
                self.below(900),
                self.below(80)
            ));
        }
        let mut line_no = self.below(300) + 1;
        while s.len() < n {
            match tool {
                "read_file" => {
                    s.push_str(&format!("{line_no:>6}\t"));
                    line_no += 1;
                    let l = self.code(1, 1);
                    s.push_str(&l);
                }
                "bash" => s.push_str(&match self.below(4) {
                    0 => format!("   Compiling {} v0.{}.{} (/repo/crates/{})\n", self.pick(IDENTS), self.below(9), self.below(30), self.pick(IDENTS)),
                    1 => format!("test {}::tests::{} ... {}\n", self.pick(IDENTS), self.pick(IDENTS), if self.chance(90) { "ok" } else { "FAILED" }),
                    2 => format!("warning: unused variable: `{}`\n", self.pick(IDENTS)),
                    _ => format!("    Finished `test` profile [unoptimized + debuginfo] target(s) in {}.{:02}s\n", self.below(90), self.below(100)),
                }),
                "grep" => {
                    s.push_str(&format!("{}:{}:", self.pick(FILES), self.below(2000)));
                    let l = self.code(1, 1);
                    s.push_str(&l);
                }
                "edit_file" => {
                    s.push_str(&format!("Edited {}: replaced 1 occurrence ({} lines).\n", self.pick(FILES), self.range(1, 40)));
                }
                _ => s.push_str(&format!("{}/{}_{}.rs\n", self.pick(FILES).rsplit_once('/').map_or(".", |p| p.0), self.pick(IDENTS), self.below(99))),
            }
        }
        s
    }

    /// A turn of small records: a user message, reasoning, an answer, eight
    /// tool steps (a short call and a short result each) and a closing
    /// answer.
    pub fn small_turn(&mut self) -> Vec<Record> {
        let mut out = vec![
            Record::new(0, "", Body::TurnStart),
            Record::new(
                0,
                "",
                Body::User {
                    content: self.prose(60, 140),
                    author: None,
                },
            ),
            Record::new(
                0,
                "",
                Body::Reasoning {
                    content: self.prose(80, 160),
                },
            ),
            Record::new(
                0,
                "",
                Body::Assistant {
                    content: self.prose(60, 140),
                },
            ),
        ];
        for _ in 0..8 {
            let id = self.id("toolu_");
            let tool = self.pick(&["read_file", "grep", "list_dir"]);
            out.push(Record::new(
                0,
                "",
                Body::ToolCall {
                    id: id.clone(),
                    name: tool.to_owned(),
                    arguments: json!({"path": self.pick(FILES)}).into(),
                },
            ));
            out.push(Record::new(
                0,
                "",
                Body::ToolResult {
                    id,
                    content: self.prose(60, 130),
                    is_error: false,
                },
            ));
        }
        out.push(Record::new(
            0,
            "",
            Body::Assistant {
                content: self.prose(60, 140),
            },
        ));
        out
    }

    /// One turn with `calls` tool calls; tool output sizes are drawn from
    /// 100 B..20 KB unless given.
    pub fn turn(&mut self, calls: usize, sizes: Option<[usize; 3]>) -> Vec<Record> {
        let mut out = vec![
            Record::new(0, "", Body::TurnStart),
            Record::new(
                0,
                "",
                Body::User {
                    content: self.prose(80, 1500),
                    author: None,
                },
            ),
        ];
        let mut reasoning = Record::new(
            0,
            "",
            Body::Reasoning {
                content: self.prose(400, 4000),
            },
        );
        let mut meta = Object::new();
        meta.insert("signature".into(), Value::String(self.id("").repeat(14)));
        reasoning.metadata = Some(Box::new(meta));
        out.push(reasoning);
        out.push(Record::new(
            0,
            "",
            Body::Assistant {
                content: self.prose(100, 800),
            },
        ));
        let ids: Vec<String> = (0..calls).map(|_| self.id("toolu_")).collect();
        let tools: Vec<&str> = (0..calls).map(|_| self.pick(TOOLS)).collect();
        for (id, tool) in ids.iter().zip(&tools) {
            let arguments = self.call(tool);
            out.push(Record::new(
                0,
                "",
                Body::ToolCall {
                    id: id.clone(),
                    name: (*tool).to_owned(),
                    arguments: arguments.into(),
                },
            ));
        }
        for (i, (id, tool)) in ids.iter().zip(&tools).enumerate() {
            let is_error = sizes.is_none() && self.chance(8);
            let n = match sizes {
                Some(s) => s[i % 3],
                None => self.log_size(100, 20_000),
            };
            let content = self.output(tool, n, is_error);
            out.push(Record::new(
                0,
                "",
                Body::ToolResult {
                    id: id.clone(),
                    content,
                    is_error,
                },
            ));
        }
        let mut last = Record::new(
            0,
            "",
            Body::Assistant {
                content: self.prose(200, 2000),
            },
        );
        let mut meta = Object::new();
        meta.insert(
            "usage".into(),
            json!({
                "input_tokens": self.range(2_000, 180_000),
                "output_tokens": self.range(50, 4_000),
                "cache_read_input_tokens": self.range(0, 150_000),
            }),
        );
        meta.insert("model".into(), json!("claude-sonnet-4-5"));
        last.metadata = Some(Box::new(meta));
        out.push(last);
        out
    }
}
