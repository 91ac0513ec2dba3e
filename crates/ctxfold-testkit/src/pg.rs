//! A PostgreSQL database of one test's own, on the server that
//! `CTXFOLD_TEST_PG_URL` names (`scripts/postgres start DIR` prints one):
//! `ctxfold_test_<pid>_<n>`, created fresh and dropped (`WITH (FORCE)`) at
//! the end, so tests never see each other's tables nor advisory locks.

use std::sync::atomic::{AtomicUsize, Ordering};

use ctxfold_store::postgres::mask_url;
use postgres::NoTls;

/// The variable naming the test server.
pub const ENV: &str = "CTXFOLD_TEST_PG_URL";

/// A database of one test's own, dropped at the end.
pub struct TestDb {
    admin: String,
    /// Its name.
    pub name: String,
    /// Its URL (with the password).
    pub url: String,
}

impl TestDb {
    /// `None` (and a notice on stderr) when no server is configured.
    pub fn new(test: &str) -> Option<TestDb> {
        let admin = match std::env::var(ENV) {
            Ok(u) if !u.is_empty() => u,
            _ => {
                crate::needs::missing(
                    &format!("the PostgreSQL part of `{test}`"),
                    &format!("{ENV} is unset (scripts/postgres start DIR prints a URL for it)"),
                );
                return None;
            }
        };
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "ctxfold_suite_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let mut c = postgres::Client::connect(&admin, NoTls)
            .unwrap_or_else(|e| panic!("{ENV} ({}): {e:?}", mask_url(&admin)));
        // One statement each: neither may run inside a transaction block.
        c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .unwrap();
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        let url = with_database(&admin, &name);
        Some(TestDb { admin, name, url })
    }

    /// A plain client on the test database, to look behind the store.
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, NoTls).unwrap()
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin, NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// `url` naming database `db` instead.
pub fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let rest = base.find("://").expect("a URL") + 3;
    let authority_end = base[rest..].find('/').map_or(base.len(), |i| rest + i);
    format!("{}/{db}{query}", &base[..authority_end])
}
