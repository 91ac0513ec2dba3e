//! Real file-system faults for tests: a tiny tmpfs to fill up, a folder
//! made read-only. Both are undone on drop, even when the test fails.
//!
//! As root (as here and in CI) they are real mounts. Where mounting is not
//! permitted, a folder is made read-only with permission bits instead, and
//! a command that needs a full disk ([`SmallDisk`]) runs with a file-size
//! limit instead; when neither works (root without mount rights: root
//! ignores permission bits) the helpers panic rather than let a test pass
//! without its fault.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

fn run(cmd: &mut Command) -> bool {
    cmd.output().is_ok_and(|o| o.status.success())
}

/// A tmpfs of a given size mounted on a folder; unmounted on drop.
pub struct Tmpfs {
    path: PathBuf,
}

impl Tmpfs {
    /// Mount a tmpfs of `bytes` on `path` (created). `None` when mounting
    /// is not permitted here.
    pub fn mount(path: &Path, bytes: u64) -> Option<Tmpfs> {
        std::fs::create_dir_all(path).unwrap();
        let ok = run(Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(path));
        ok.then(|| Tmpfs {
            path: path.to_owned(),
        })
    }

    /// Fill it up: write a file until the disk is full. Returns the file.
    pub fn fill(&self) -> PathBuf {
        let filler = self.path.join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        let chunk = vec![b'x'; 4096];
        loop {
            if let Err(e) = f.write_all(&chunk) {
                assert_eq!(e.kind(), std::io::ErrorKind::StorageFull, "{e}");
                break;
            }
        }
        // And byte by byte, so not even a short write fits.
        while f.write_all(b"x").is_ok() {}
        filler
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = run(Command::new("umount").arg("-l").arg(&self.path));
    }
}

/// A folder where a command's writes run out of space: a tmpfs of the
/// given size where mounting is permitted, else a plain folder, with the
/// commands run through [`SmallDisk::command`] limited to files of that
/// size (`ulimit -f`, `SIGXFSZ` ignored, so a write past it fails with
/// "File too large" as one on a full disk fails with "No space left").
/// The limit is per file, not in total: tests write one large file.
pub struct SmallDisk {
    path: PathBuf,
    mount: Option<Tmpfs>,
    bytes: u64,
}

impl SmallDisk {
    /// A small disk of `bytes` at `path` (created).
    pub fn new(path: &Path, bytes: u64) -> SmallDisk {
        let mount = Tmpfs::mount(path, bytes);
        SmallDisk {
            path: path.to_owned(),
            mount,
            bytes,
        }
    }

    /// Its folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether it is a real tmpfs.
    pub fn is_tmpfs(&self) -> bool {
        self.mount.is_some()
    }

    /// `cmd`, as it must run to meet the limit: unchanged on a tmpfs, else
    /// through `sh` with the file-size limit set.
    pub fn command(&self, cmd: Command) -> Command {
        if self.is_tmpfs() {
            return cmd;
        }
        let blocks = self.bytes.div_ceil(512);
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(format!(
                "trap '' XFSZ; ulimit -f {blocks} && exec \"$0\" \"$@\""
            ))
            .arg(cmd.get_program())
            .args(cmd.get_args());
        if let Some(dir) = cmd.get_current_dir() {
            sh.current_dir(dir);
        }
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => sh.env(k, v),
                None => sh.env_remove(k),
            };
        }
        sh
    }
}

/// What a write that ran out of room says: on a full disk, or past a
/// file-size limit.
pub fn out_of_space(message: &str) -> bool {
    message.contains("No space left") || message.contains("File too large")
}

/// A folder made read-only; writable again on drop.
pub struct ReadOnly {
    path: PathBuf,
    /// Permission bits taken away, to give back (the fallback).
    chmodded: Option<Vec<(PathBuf, std::fs::Permissions)>>,
}

impl ReadOnly {
    /// Make `path` read-only: a read-only bind mount of itself, or where
    /// mounting is not permitted, every folder and file in it without write
    /// permission. Panics when neither stops a write.
    pub fn new(path: &Path) -> ReadOnly {
        let mounted = run(Command::new("mount").arg("--bind").arg(path).arg(path));
        let ro = if mounted {
            let guard = ReadOnly {
                path: path.to_owned(),
                chmodded: None,
            };
            assert!(
                run(Command::new("mount")
                    .args(["-o", "remount,bind,ro"])
                    .arg(path)),
                "bind-mounted {} but could not make it read-only",
                path.display()
            );
            guard
        } else {
            let mut saved = Vec::new();
            chmod_all(path, &mut saved);
            ReadOnly {
                path: path.to_owned(),
                chmodded: Some(saved),
            }
        };
        let probe = path.join(".write-probe");
        assert!(
            std::fs::write(&probe, b"x").is_err(),
            "cannot make {} read-only here (no mount rights, and permission bits do not stop this user)",
            path.display()
        );
        ro
    }
}

fn chmod_all(path: &Path, saved: &mut Vec<(PathBuf, std::fs::Permissions)>) {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(path).unwrap();
    if meta.is_dir() {
        for e in std::fs::read_dir(path).unwrap() {
            chmod_all(&e.unwrap().path(), saved);
        }
    }
    if !meta.file_type().is_symlink() {
        let perms = meta.permissions();
        saved.push((path.to_owned(), perms.clone()));
        let ro = std::fs::Permissions::from_mode(perms.mode() & !0o222);
        std::fs::set_permissions(path, ro).unwrap();
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        match self.chmodded.take() {
            None => {
                let _ = run(Command::new("umount").arg("-l").arg(&self.path));
            }
            Some(saved) => {
                for (p, perms) in saved.into_iter().rev() {
                    let _ = std::fs::set_permissions(p, perms);
                }
            }
        }
    }
}
