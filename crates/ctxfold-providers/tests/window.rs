//! Context windows: the server's figure, then the built-in table, then the
//! provider's configured `context_window`; unknown is `None`, not an error.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use ctxfold_providers::{Provider, ProviderConfig, ProviderKind, WindowSource};
use ctxfold_testkit::upstream::Upstream;
use ctxfold_testkit::upstream::canned::Reply;
use serde_json::json;

#[test]
fn server_then_table_then_config() {
    let offline = |window| {
        let mut c = ProviderConfig::new(ProviderKind::OpenAi, "http://127.0.0.1:9/v1");
        c.context_window = window;
        Provider::new("p", c)
    };
    // No server asked: the table knows gpt-4o, config does not matter.
    assert_eq!(
        offline(Some(4_096)).context_window("gpt-4o").unwrap(),
        Some(128_000)
    );
    // The table does not know it: config.
    assert_eq!(
        offline(Some(32_768)).context_window("my-model").unwrap(),
        Some(32_768)
    );
    // Nobody knows: reported as unknown.
    assert_eq!(offline(None).context_window("my-model").unwrap(), None);

    // A llama.cpp server says 2,048: that wins over the table and config.
    let server = Upstream::canned(vec![Reply::json(
        200,
        json!({"default_generation_settings": {"n_ctx": 2048}}),
    )]);
    let mut p = server.provider(ProviderKind::OpenAi);
    let mut c = p
        .config()
        .clone()
        .with_window_from(WindowSource::LlamacppProps);
    c.context_window = Some(32_768);
    p = Provider::new("local", c);
    assert_eq!(p.context_window("gpt-4o").unwrap(), Some(2_048));
}
