//! Which agent sent a request, and the session it names itself.
//!
//! Agents name their own sessions, and that names the conversation better
//! than any fingerprint of its head: two sessions of one agent in one
//! folder start with the same system prompt, tools and first message.
//!
//! - Claude Code: `metadata.user_id` is a JSON string holding `device_id`,
//!   `account_uuid` and `session_id` (older versions: a plain
//!   `user_…_account_…_session_<id>` string). A plain string without a
//!   session part is a user id (what most SDK users put there): it names
//!   no session.
//! - Codex: `client_metadata.session_id`, and `prompt_cache_key`, which
//!   Codex sets to the same id. `prompt_cache_key` alone names a session
//!   only when the request comes from Codex (its `originator` header or
//!   `user-agent`): other clients use it for cache buckets that many
//!   conversations share.
//!
//! An agent's side request is no turn of its conversation: opencode asks
//! a model, with a system prompt of its own, for the title of a session
//! it starts. Such a request goes upstream as sent and is recorded
//! nowhere ([`is_side_request`]).

use serde::Deserialize;
use serde_json::Value;

/// An agent the proxy knows by its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// OpenAI's Codex.
    Codex,
    /// opencode (npm `opencode-ai`).
    Opencode,
}

impl Agent {
    /// Its name in keys and metadata.
    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Opencode => "opencode",
        }
    }

    /// The agent a request's headers name: `user-agent`
    /// (`claude-cli/2.1.332 (external, cli)`, `codex_cli_rs/0.171.0 …`) or
    /// Codex's `originator` (`codex_cli_rs`, `codex_exec`, …).
    pub fn from_headers(user_agent: Option<&str>, originator: Option<&str>) -> Option<Agent> {
        let ua = user_agent.unwrap_or("").to_ascii_lowercase();
        let origin = originator.unwrap_or("").to_ascii_lowercase();
        if ua.starts_with("claude-cli") || ua.contains("claude-code") {
            Some(Agent::ClaudeCode)
        } else if origin.starts_with("codex") || ua.starts_with("codex") {
            Some(Agent::Codex)
        } else if ua.starts_with("opencode/") {
            Some(Agent::Opencode)
        } else {
            None
        }
    }

    /// The agent a body's own fields name, when its headers did not.
    pub fn from_body(body: &Value) -> Option<Agent> {
        if claude_code_session(body).is_some() {
            Some(Agent::ClaudeCode)
        } else if codex_metadata(body) {
            Some(Agent::Codex)
        } else {
            None
        }
    }
}

/// Whether `body` (from `agent`) is a side request: opencode's title of a
/// new session, known by the system prompt opencode gives it.
pub fn is_side_request(agent: Option<Agent>, body: &[u8]) -> bool {
    if agent != Some(Agent::Opencode) {
        return false;
    }
    // Cheap before the parse: most requests are no side request.
    const TITLE: &str = "You are a title generator";
    if !body.windows(TITLE.len()).any(|w| w == TITLE.as_bytes()) {
        return false;
    }
    /// Where a request's system prompt is, in each API: Anthropic's
    /// `system`, Responses' `instructions`, or a chat's first message
    /// when it is the system's.
    #[derive(Deserialize)]
    struct Prompts {
        #[serde(default)]
        system: Option<Text>,
        #[serde(default)]
        instructions: Option<Text>,
        #[serde(default, alias = "input")]
        messages: Vec<First>,
    }
    #[derive(Deserialize)]
    struct First {
        #[serde(default)]
        role: Option<String>,
        #[serde(default)]
        content: Option<Text>,
    }
    /// A text, or blocks with texts.
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Text {
        Plain(String),
        Blocks(Vec<Block>),
        Other(serde::de::IgnoredAny),
    }
    #[derive(Deserialize)]
    struct Block {
        #[serde(default)]
        text: Option<String>,
    }
    let Ok(p) = serde_json::from_slice::<Prompts>(body) else {
        return false;
    };
    let first_system = (p.messages.into_iter().next())
        .filter(|m| matches!(m.role.as_deref(), Some("system" | "developer")))
        .and_then(|m| m.content);
    let text_of = |t: Text| -> String {
        match t {
            Text::Plain(s) => s,
            Text::Blocks(blocks) => blocks.into_iter().filter_map(|b| b.text).collect(),
            Text::Other(_) => String::new(),
        }
    };
    [p.system, p.instructions, first_system]
        .into_iter()
        .flatten()
        .any(|c| text_of(c).trim_start().starts_with(TITLE))
}

/// A session an agent named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The agent.
    pub agent: Agent,
    /// Its session id.
    pub id: String,
    /// The field it came from.
    pub field: &'static str,
}

impl Session {
    /// The conversation key it stands for.
    pub fn key(&self) -> String {
        format!("session:{}:{}", self.agent.name(), self.id)
    }
}

/// Whether a body has Codex's `client_metadata` object.
fn codex_metadata(body: &Value) -> bool {
    #[derive(Deserialize)]
    struct Hints {
        #[serde(default)]
        client_metadata: Option<Value>,
    }
    matches!(
        Hints::deserialize(body).map(|h| h.client_metadata),
        Ok(Some(Value::Object(_)))
    )
}

/// Codex's session: `client_metadata.session_id`, or `prompt_cache_key`
/// from Codex itself.
pub(crate) fn codex_session(body: &Value, agent: Option<Agent>) -> Option<Session> {
    /// Where Codex names its session.
    #[derive(serde::Deserialize)]
    struct Hints {
        #[serde(default)]
        client_metadata: Option<ClientMetadata>,
        #[serde(default)]
        prompt_cache_key: Option<Value>,
    }
    #[derive(serde::Deserialize)]
    struct ClientMetadata {
        #[serde(default)]
        session_id: Option<Value>,
    }
    let hints = Hints::deserialize(body).ok()?;
    let text = |v: Option<Value>| match v {
        Some(Value::String(s)) if usable(&s) => Some(s),
        _ => None,
    };
    if let Some(id) = text(hints.client_metadata.and_then(|m| m.session_id)) {
        return Some(Session {
            agent: Agent::Codex,
            id,
            field: "client_metadata.session_id",
        });
    }
    let key = text(hints.prompt_cache_key)?;
    (agent == Some(Agent::Codex)).then_some(Session {
        agent: Agent::Codex,
        id: key,
        field: "prompt_cache_key",
    })
}

/// Claude Code's session, in `metadata.user_id`.
pub(crate) fn claude_code_session(body: &Value) -> Option<Session> {
    claude_code_session_id(body).map(|id| Session {
        agent: Agent::ClaudeCode,
        id,
        field: "metadata.user_id",
    })
}

/// Claude Code's session id in `metadata.user_id`.
fn claude_code_session_id(body: &Value) -> Option<String> {
    #[derive(Deserialize)]
    struct Body {
        metadata: Metadata,
    }
    #[derive(Deserialize)]
    struct Metadata {
        user_id: String,
    }
    /// What newer versions put in `user_id`, as JSON text.
    #[derive(Deserialize)]
    struct User {
        #[serde(default)]
        session_id: Option<Value>,
    }
    let user = Body::deserialize(body).ok()?.metadata.user_id;
    if let Ok(u) = serde_json::from_str::<User>(&user) {
        return match u.session_id {
            Some(Value::String(id)) if usable(&id) => Some(id),
            _ => None,
        };
    }
    // The older plain form: `user_<hash>_account_<uuid>_session_<uuid>`.
    let (_, id) = user.rsplit_once("_session_")?;
    usable(id).then(|| id.to_owned())
}

/// An id worth keying on: not empty, not absurdly long, printable.
fn usable(id: &str) -> bool {
    !id.trim().is_empty() && id.len() <= 256 && !id.chars().any(char::is_control)
}

/// A one-line description of a request's shape for a log line: the agent
/// and the body's top-level keys.
pub fn describe(agent: Option<Agent>, user_agent: Option<&str>, body: &[u8]) -> String {
    let parsed = serde_json::from_slice::<Value>(body).ok();
    let agent = agent.or_else(|| parsed.as_ref().and_then(Agent::from_body));
    let who = match (agent, user_agent) {
        (Some(a), Some(ua)) => format!("{} ({ua})", a.name()),
        (Some(a), None) => a.name().to_owned(),
        (None, Some(ua)) => format!("an unknown client ({ua})"),
        (None, None) => "an unknown client".to_owned(),
    };
    let keys = match parsed {
        Some(Value::Object(o)) => o.keys().map(String::as_str).collect::<Vec<_>>().join(", "),
        Some(_) => "not an object".to_owned(),
        None => "not JSON".to_owned(),
    };
    format!("from {who}; body keys: {keys}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::Protocol;
    use crate::protocol::messages::Messages;
    use crate::protocol::responses::Responses;

    #[test]
    fn opencodes_title_request_is_a_side_request_and_nothing_else_is() {
        let ua = Some("opencode/1.18.33 ai-sdk/provider-utils/4.0.46 runtime/bun/1.3.14");
        let opencode = Agent::from_headers(ua, None);
        assert_eq!(opencode, Some(Agent::Opencode));
        let title = json!({"system": [{"type": "text", "text": "You are a title generator. You output ONLY a thread title."}],
            "messages": [{"role": "user", "content": "Fix the bug"}]});
        let chat = json!({"messages": [{"role": "system", "content": "You are a title generator. …"},
            {"role": "user", "content": "Fix the bug"}]});
        for body in [&title, &chat] {
            assert!(
                is_side_request(opencode, body.to_string().as_bytes()),
                "{body}"
            );
            assert!(!is_side_request(None, body.to_string().as_bytes()));
        }
        // The words in a user's message are no title request.
        let asked = json!({"system": "You are OpenCode.",
            "messages": [{"role": "user", "content": "You are a title generator: what would you call this?"}]});
        assert!(!is_side_request(opencode, asked.to_string().as_bytes()));
    }

    #[test]
    fn claude_codes_session_is_read_from_its_json_user_id_or_the_old_plain_one() {
        let body = json!({"metadata": {"user_id":
            "{\"device_id\":\"dev\",\"account_uuid\":\"acc\",\"session_id\":\"5e55-10n\"}"}});
        let s = Messages.session(&body, None).unwrap();
        assert_eq!(s.key(), "session:claude-code:5e55-10n");
        let old = json!({"metadata": {"user_id": "user_abc_account_def_session_0a1b"}});
        assert_eq!(Messages.session(&old, None).unwrap().id, "0a1b");
        // A plain user id names no session.
        for user in [
            json!("end-user-42"),
            json!(""),
            json!(7),
            json!("{\"device_id\":\"d\"}"),
        ] {
            let body = json!({"metadata": {"user_id": user}});
            assert_eq!(Messages.session(&body, None), None, "{user}");
        }
        assert_eq!(Agent::from_body(&body), Some(Agent::ClaudeCode));
    }

    #[test]
    fn codexs_session_is_its_client_metadata_or_its_cache_key_when_it_is_codex() {
        let body = json!({"prompt_cache_key": "k1", "client_metadata": {"session_id": "s1"}});
        let s = Responses.session(&body, None).unwrap();
        assert_eq!(
            (s.key().as_str(), s.field),
            ("session:codex:s1", "client_metadata.session_id")
        );
        let key_only = json!({"prompt_cache_key": "k1"});
        assert_eq!(Responses.session(&key_only, None), None);
        let s = Responses.session(&key_only, Some(Agent::Codex)).unwrap();
        assert_eq!(s.key(), "session:codex:k1");
        assert_eq!(
            Agent::from_headers(Some("codex_cli_rs/0.171.0 (Linux)"), None),
            Some(Agent::Codex)
        );
        assert_eq!(
            Agent::from_headers(None, Some("codex_exec")),
            Some(Agent::Codex)
        );
        assert_eq!(
            Agent::from_headers(Some("claude-cli/2.1.332 (external, cli)"), None),
            Some(Agent::ClaudeCode)
        );
        assert_eq!(Agent::from_headers(Some("python-httpx/0.28"), None), None);
    }
}
