//! Where a store connects, as messages show it (never the password), and
//! what a failed connection means in words.

use ::postgres::Config;
use ::postgres::config::Host;
use ::postgres::error::SqlState;

use super::password::PasswordFrom;
use crate::StoreError;

/// Where a store connects, for messages: never the password.
#[derive(Clone)]
pub(super) struct Target {
    /// The URL, password masked.
    pub(super) store: String,
    /// `host:port`.
    pub(super) addr: String,
    pub(super) user: String,
    pub(super) password: PasswordFrom,
}

impl Target {
    pub(super) fn password_label(&self) -> &'static str {
        match self.password {
            PasswordFrom::Url => "url",
            PasswordFrom::Env => "PGPASSWORD",
            PasswordFrom::File(_) => "password file",
            PasswordFrom::Nowhere(_) => "none",
        }
    }

    /// What a failed connection means, in words: wrong password, server
    /// not there, no such database.
    pub(super) fn connect_error(&self, e: ::postgres::Error) -> StoreError {
        if let Some(db) = e.as_db_error() {
            let code = db.code();
            if *code == SqlState::INVALID_PASSWORD {
                let detail = match &self.password {
                    PasswordFrom::Url => "the password in the URL was refused".to_owned(),
                    PasswordFrom::Env => "the password in PGPASSWORD was refused".to_owned(),
                    PasswordFrom::File(p) => {
                        format!("the password from {} was refused", p.display())
                    }
                    PasswordFrom::Nowhere(_) => "the server refused the login".to_owned(),
                };
                return StoreError::AuthFailed {
                    user: self.user.clone(),
                    addr: self.addr.clone(),
                    detail,
                };
            }
            if *code == SqlState::INVALID_CATALOG_NAME {
                // The server's message says it all ("database \"x\" does not exist").
                return StoreError::Database {
                    what: format!(
                        "cannot use {}: {}; create it, or name another in the URL",
                        self.store,
                        db.message()
                    ),
                    source: None,
                };
            }
            return StoreError::Database {
                what: format!("PostgreSQL at {} refused the connection", self.addr),
                source: Some(Box::new(e)),
            };
        }
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(c) = cause {
            if c.to_string().contains("password missing") {
                let mut detail = "the server asks for a password and none was given: put it in the URL, set PGPASSWORD, or add a line host:port:database:user:password to ~/.pgpass (or the file PGPASSFILE names)".to_owned();
                if let PasswordFrom::Nowhere(Some(note)) = &self.password {
                    detail.push_str(&format!(" ({note})"));
                }
                return StoreError::AuthFailed {
                    user: self.user.clone(),
                    addr: self.addr.clone(),
                    detail,
                };
            }
            if let Some(io) = c.downcast_ref::<std::io::Error>() {
                return StoreError::Unreachable {
                    addr: self.addr.clone(),
                    reason: io.to_string(),
                };
            }
            cause = c.source();
        }
        if e.to_string().contains("timeout") {
            return StoreError::Unreachable {
                addr: self.addr.clone(),
                reason: "no answer in time".to_owned(),
            };
        }
        StoreError::Database {
            what: format!("cannot connect to {}", self.store),
            source: Some(Box::new(e)),
        }
    }
}

/// `host:port` of each host the config names, for messages.
pub(super) fn addr_of(config: &Config) -> String {
    let ports = config.get_ports();
    config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            // One port serves every host; none means the default.
            let port = ports
                .get(i)
                .or_else(|| ports.first().filter(|_| ports.len() == 1))
                .copied()
                .unwrap_or(5432);
            match host {
                Host::Tcp(h) if h.contains(':') => format!("[{h}]:{port}"),
                Host::Tcp(h) => format!("{h}:{port}"),
                #[cfg(unix)]
                Host::Unix(p) => format!("{}/.s.PGSQL.{port}", p.display()),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}
