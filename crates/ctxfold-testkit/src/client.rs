//! The tests' HTTP client of the proxy and the pages: one ureq agent that
//! hands back every status as an answer (a 4xx is what many tests check),
//! and a request's whole answer.

/// An agent that does not turn a 4xx or 5xx into an error.
pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

/// [`agent`] that does not follow redirects (the pages' tests look at
/// them).
pub fn agent_without_redirects() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into()
}

/// An answer: status, headers (names lowercased), body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as JSON; one that is not fails the test, showing it.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// `POST url` with a JSON `body` and `headers`; the whole answer (up to
/// 64 MiB).
pub fn post(url: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    let mut req = agent().post(url).header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    answer(req.send(body).unwrap())
}

/// `GET url`; the whole answer.
pub fn get(url: &str) -> Answer {
    answer(agent().get(url).call().unwrap())
}

fn answer(mut resp: ureq::http::Response<ureq::Body>) -> Answer {
    Answer {
        status: resp.status().as_u16(),
        headers: resp
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect(),
        body: resp
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_vec()
            .unwrap(),
    }
}

/// What a client of the proxy got: the conversation the proxy named, and
/// the body, or the error its reading ended in (an answer that broke off).
pub struct Got {
    pub conversation: String,
    pub body: Result<Vec<u8>, String>,
}

/// `POST url` with the JSON `body`; the answer must be a 200 naming its
/// conversation.
pub fn send(url: &str, body: &serde_json::Value) -> Got {
    let mut resp = agent()
        .post(url)
        .header("content-type", "application/json")
        .send(body.to_string().as_bytes())
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let conversation = resp
        .headers()
        .get("x-ctxfold-conversation")
        .expect("the proxy names the conversation")
        .to_str()
        .unwrap()
        .to_owned();
    Got {
        conversation,
        body: resp.body_mut().read_to_vec().map_err(|e| e.to_string()),
    }
}
