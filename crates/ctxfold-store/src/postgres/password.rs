//! Where a connection's password comes from when the URL has none:
//! `PGPASSWORD`, else the password file (`PGPASSFILE` or `~/.pgpass`),
//! read and matched as libpq does.

use std::path::{Path, PathBuf};

use ::postgres::Config;
use ::postgres::config::Host;

/// Where the password came from, which an authentication error names.
#[derive(Clone, Debug)]
pub(super) enum PasswordFrom {
    Url,
    Env,
    File(PathBuf),
    /// None; with why a password file was not used, when one was there.
    Nowhere(Option<String>),
}

/// Put a password into `config` when the URL has none: `PGPASSWORD`,
/// else the password file. Says where it came from.
pub(super) fn supply_password(config: &mut Config) -> PasswordFrom {
    if config.get_password().is_some_and(|p| !p.is_empty()) {
        return PasswordFrom::Url;
    }
    if let Ok(p) = std::env::var("PGPASSWORD")
        && !p.is_empty()
    {
        config.password(p);
        return PasswordFrom::Env;
    }
    let named = std::env::var_os("PGPASSFILE").filter(|p| !p.is_empty());
    let explicit = named.is_some();
    let Some(path) = named
        .map(PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".pgpass")))
    else {
        return PasswordFrom::Nowhere(None);
    };
    let text = match read_password_file(&path) {
        Ok(Some(text)) => text,
        Ok(None) if !explicit => return PasswordFrom::Nowhere(None),
        Ok(None) => {
            return PasswordFrom::Nowhere(Some(format!(
                "PGPASSFILE names {}, which is not there",
                path.display()
            )));
        }
        Err(note) => return PasswordFrom::Nowhere(Some(note)),
    };
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        // libpq's rule: a socket connection matches `localhost`.
        _ => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or_default().to_owned();
    let user = config.get_user().unwrap_or_default().to_owned();
    match password_file_lookup(&text, &host, &port.to_string(), &db, &user) {
        Some(p) => {
            config.password(p);
            PasswordFrom::File(path)
        }
        None => PasswordFrom::Nowhere(None),
    }
}

/// The password file's text; `Ok(None)` when there is none. One that
/// others may read is not used (libpq's rule), and the note says why.
fn read_password_file(path: &Path) -> Result<Option<String>, String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("password file {} not read: {e}", path.display())),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "password file {} not used: group or others may read it (chmod 0600 it)",
                path.display()
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    std::fs::read_to_string(path)
        .map(Some)
        .map_err(|e| format!("password file {} not read: {e}", path.display()))
}

/// The password of the first line of a password file that matches:
/// `host:port:database:user:password`, `*` matching anything, `\:` and
/// `\\` for a colon and a backslash, `#` starting a comment line.
fn password_file_lookup(
    text: &str,
    host: &str,
    port: &str,
    db: &str,
    user: &str,
) -> Option<String> {
    text.lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .find_map(|line| {
            let fields = split_password_line(line)?;
            let want = [host, port, db, user];
            let matches = fields[..4]
                .iter()
                .zip(want)
                .all(|(pattern, value)| pattern == "*" || pattern == value);
            matches.then(|| fields[4].clone())
        })
}

/// The five fields of a password file line, unescaped; `None` when it has
/// fewer.
fn split_password_line(line: &str) -> Option<[String; 5]> {
    let mut fields: [String; 5] = Default::default();
    let mut i = 0;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields[i].push(next);
                }
            }
            // The password is the rest of the line, colons and all.
            ':' if i < 4 => i += 1,
            c => fields[i].push(c),
        }
    }
    (i == 4).then_some(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_file_lines_match_like_libpq() {
        let text = "# comment\n\
                    other:5432:*:u:nope\n\
                    h:5432:db:u:pa\\:ss:word\n\
                    *:*:*:*:fallback\n";
        assert_eq!(
            password_file_lookup(text, "h", "5432", "db", "u").as_deref(),
            Some("pa:ss:word")
        );
        assert_eq!(
            password_file_lookup(text, "x", "1", "y", "z").as_deref(),
            Some("fallback")
        );
        assert_eq!(password_file_lookup("h:1:d:u\n", "h", "1", "d", "u"), None);
        assert_eq!(password_file_lookup("", "h", "1", "d", "u"), None);
    }
}
