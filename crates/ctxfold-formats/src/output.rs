//! Writing exports safely.
//!
//! - An output is never written in place: the bytes go to a new file beside
//!   it, named `.NAME.ctxfold-tmp-XXXXXX`, which is synced and renamed over
//!   the destination. A JP folder is staged whole in a folder of that name
//!   and swapped in with one rename (`RENAME_EXCHANGE` where the system has
//!   it), so a failure leaves the old folder as it was.
//! - A destination that is a symbolic link is replaced by the new file (or
//!   folder): the link's target is never written. Devices, pipes and
//!   sockets (`/dev/null`, a terminal, `/dev/stdout` piped) are written
//!   through, as are paths under `/dev` and `/proc`, which name open
//!   descriptors.
//! - [`Protect`] refuses an output that is the input, compared by device
//!   and inode after following links, or that holds a link to one of its
//!   files, or lies inside its folder or inside a protected folder (a
//!   workspace).
//! - A replaced file keeps its mode (and owner, where allowed); a new one
//!   gets `0666` less the umask (`0777` for a folder).
//! - Temporary files are removed on every error path; one left by a killed
//!   run is removed at the next write to the same destination, unless a
//!   live writer still holds its lock. Where the folder swap falls back to
//!   two renames, the old folder waits under a temporary name; if the run
//!   is killed between them, the next write puts it back first.

use std::collections::HashSet;
use std::fs::{self, File, Metadata, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::{Format, FormatError};

/// The files a JP conversation folder may hold; a JP export replaces a
/// folder only when it holds nothing else.
pub const JP_FILES: [&str; 3] = ["events.json", "metadata.json", "base_config.json"];

/// What names a temporary file of ours beside `name`.
fn temp_prefix(name: &std::ffi::OsStr) -> String {
    format!(".{}.ctxfold-tmp-", name.to_string_lossy())
}

type Id = (u64, u64);

fn id_of(m: &Metadata) -> Id {
    (m.dev(), m.ino())
}

/// What an export must not overwrite: the files a transcript was read
/// from, by device and inode, and folders no output may go into (a
/// workspace folder, where an output could replace a conversation's log).
#[derive(Debug, Clone, Default)]
pub struct Protect {
    input: Option<PathBuf>,
    files: HashSet<Id>,
    dir: Option<Id>,
    /// Folders guarded whole: (folder, what to call it, its id).
    folders: Vec<(PathBuf, String, Id)>,
}

impl Protect {
    /// Nothing to protect.
    pub fn none() -> Protect {
        Protect::default()
    }

    /// The transcript at `input`: the file, or the folder and every file in
    /// it (a JP folder, a ctxfold conversation folder, or the folder of a
    /// JP `events.json`).
    pub fn input(input: &Path) -> Protect {
        let mut p = Protect {
            input: Some(input.to_owned()),
            ..Protect::default()
        };
        let Ok(meta) = fs::metadata(input) else {
            return p;
        };
        let folder = if meta.is_dir() {
            Some(input.to_owned())
        } else {
            p.files.insert(id_of(&meta));
            input
                .file_name()
                .filter(|n| *n == "events.json")
                .map(|_| parent_of(input).to_owned())
        };
        if let Some(folder) = folder
            && let Ok(m) = fs::metadata(&folder)
        {
            p.dir = Some(id_of(&m));
            for e in fs::read_dir(&folder).into_iter().flatten().flatten() {
                if let Ok(m) = fs::metadata(e.path()) {
                    p.files.insert(id_of(&m));
                }
            }
        }
        p
    }

    /// Also refuse any output at or inside `folder`, calling it `what` in
    /// the refusal ("the workspace folder"). A folder that does not exist
    /// holds nothing to protect and is ignored.
    pub fn and_folder(mut self, folder: &Path, what: &str) -> Protect {
        if let Ok(m) = fs::metadata(folder) {
            self.folders
                .push((folder.to_owned(), what.to_owned(), id_of(&m)));
        }
        self
    }

    /// Also refuse any output at or inside each workspace folder of
    /// `roots` (`ctxfold_store::Workspace::known_roots`): an output there
    /// could replace a conversation's log, `active` or `meta.json`.
    pub fn and_workspaces(self, roots: &[PathBuf]) -> Protect {
        roots
            .iter()
            .fold(self, |p, root| p.and_folder(root, WORKSPACE))
    }

    /// Also refuse any output at or inside the workspace folder `root`.
    pub fn and_workspace(self, root: &Path) -> Protect {
        self.and_folder(root, WORKSPACE)
    }

    fn refuse(&self, dest: &Path, what: &str, rule: &str) -> FormatError {
        FormatError::Refused {
            path: dest.to_owned(),
            reason: format!("{what}; name another path with -o ({rule})"),
        }
    }

    fn refuse_input(&self, dest: &Path, what: &str) -> FormatError {
        self.refuse(dest, what, "ctxfold never writes over its input")
    }

    fn input_shown(&self) -> String {
        self.input
            .as_deref()
            .map_or(String::new(), |i| i.display().to_string())
    }

    /// Refuse `dest` when it is the input (after following links), holds a
    /// link to one of the input's files, or lies inside the input's folder
    /// or a protected folder.
    pub fn check(&self, dest: &Path) -> Result<(), FormatError> {
        if self.input.is_none() && self.folders.is_empty() {
            return Ok(());
        }
        let dest_meta = fs::metadata(dest).ok();
        if let Some(m) = &dest_meta {
            let id = id_of(m);
            if self.files.contains(&id) || self.dir == Some(id) {
                let what = format!(
                    "is the input ({}), the same file after following links",
                    self.input_shown()
                );
                return Err(self.refuse_input(dest, &what));
            }
            if let Some((folder, name, _)) = self.folders.iter().find(|f| f.2 == id) {
                let what = format!("is {name} ({})", folder.display());
                return Err(self.refuse(dest, &what, "outputs never go there"));
            }
            if m.is_dir() && !self.files.is_empty() {
                for e in fs::read_dir(dest).into_iter().flatten().flatten() {
                    if fs::metadata(e.path()).is_ok_and(|m| self.files.contains(&id_of(&m))) {
                        let what = format!(
                            "holds {}, which is the input's file after following links: the output is the input ({})",
                            e.file_name().to_string_lossy(),
                            self.input_shown()
                        );
                        return Err(self.refuse_input(dest, &what));
                    }
                }
            }
        }
        // The folders the output would be created in, from the nearest
        // one that exists (the rest would be created inside it).
        let existing = dest
            .ancestors()
            .skip(1)
            .map(|a| {
                if a.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    a
                }
            })
            .find_map(|a| a.canonicalize().ok());
        let Some(parent) = existing else {
            return Ok(());
        };
        let inside = |id: Id| {
            parent
                .ancestors()
                .any(|a| fs::metadata(a).is_ok_and(|m| id_of(&m) == id))
        };
        if let Some(dir) = self.dir
            && inside(dir)
        {
            let what = format!("lies inside the input folder ({})", self.input_shown());
            return Err(self.refuse_input(dest, &what));
        }
        if let Some((folder, name, _)) = self.folders.iter().find(|f| inside(f.2)) {
            let what = format!("lies inside {name} ({})", folder.display());
            return Err(self.refuse(dest, &what, "outputs never go there"));
        }
        Ok(())
    }
}

/// What a refusal calls a workspace folder.
const WORKSPACE: &str = "a ctxfold workspace folder";

/// The default output of a transcript compacted from `input`:
/// `<name>.compacted<.ext>` beside it (a folder for JP), the extension the
/// input's when the format stays, else the output format's.
pub fn default_output(input: &Path, in_format: Format, out_format: Format) -> PathBuf {
    let base = if in_format == Format::Jp && input.is_file() {
        input.parent().unwrap_or(Path::new(".")).to_owned()
    } else {
        input.to_owned()
    };
    let base = base.components().as_path().to_owned();
    let name = base
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "transcript".into());
    let (stem, ext) = match (out_format, name.rsplit_once('.')) {
        (Format::Jp, _) => (name.clone(), String::new()),
        (_, Some((stem, ext))) if !base.is_dir() && out_format == in_format => {
            (stem.to_owned(), format!(".{ext}"))
        }
        (Format::Ctxfold, _) => (name.clone(), ".jsonl".into()),
        _ => (name.clone(), ".json".into()),
    };
    base.with_file_name(format!("{stem}.compacted{ext}"))
}

/// The bytes of an output: a file, or every file in a folder (JP); 0 where
/// it cannot be read, since the size is only reported.
pub fn size_of(path: &Path) -> u64 {
    if path.is_dir() {
        fs::read_dir(path)
            .map(|d| d.flatten().map(|e| size_of(&e.path())).sum())
            .unwrap_or(0)
    } else {
        fs::metadata(path).map_or(0, |m| m.len())
    }
}

/// The folder `path` is in (`.` for a bare name).
fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// `path` names a folder by its spelling: it ends with `/`, `/.` or `..`.
fn names_folder(path: &Path) -> bool {
    let b = path.as_os_str().as_bytes();
    b.ends_with(b"/") || path.file_name().is_none()
}

/// A path of an open descriptor or a device, written through.
fn is_descriptor_path(path: &Path) -> bool {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    abs.starts_with("/dev") || abs.starts_with("/proc")
}

fn is_special(m: &Metadata) -> bool {
    let t = m.file_type();
    !t.is_file() && !t.is_dir() && !t.is_symlink()
}

/// Write `bytes` to the file `path` (see the module docs), refusing what
/// `protect` protects.
pub fn write_file(path: &Path, bytes: &[u8], protect: &Protect) -> Result<(), FormatError> {
    write_file_with(path, protect, &mut |w| w.write_all(bytes))
}

/// [`write_file`] with the bytes written by `write` as they are made (to a
/// buffered writer), so a long output is never whole in memory.
pub fn write_file_with(
    path: &Path,
    protect: &Protect,
    write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
) -> Result<(), FormatError> {
    protect.check(path)?;
    let folder = || {
        FormatError::Refused {
        path: path.to_owned(),
        reason: "is a folder, but this format is written as one file: give a file name (FOLDER/NAME.json)".into(),
    }
    };
    let like = match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => return Err(folder()),
        Ok(m) if is_special(&m) => return write_through(path, write),
        Ok(m) if m.file_type().is_symlink() => match fs::metadata(path) {
            Ok(t) if is_special(&t) || is_descriptor_path(path) => {
                return write_through(path, write);
            }
            Ok(t) if t.is_dir() => return Err(folder()),
            // The link is replaced; the new file looks like its target.
            Ok(t) => Some(t),
            Err(_) => None,
        },
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if names_folder(path) {
                return Err(FormatError::Refused {
                    path: path.to_owned(),
                    reason: "names a folder, but this format is written as one file: give a file name (FOLDER/NAME.json)".into(),
                });
            }
            None
        }
        Err(e) => return Err(FormatError::io(path, e)),
    };
    if names_folder(path) {
        return Err(folder());
    }
    let dir = parent_of(path);
    fs::create_dir_all(dir).map_err(|e| FormatError::io(dir, e))?;
    let name = path.file_name().unwrap_or_default();
    clean_stale(dir, name);
    let mut tmp = tempfile::Builder::new()
        .prefix(&temp_prefix(name))
        .rand_bytes(6)
        .permissions(Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(|e| FormatError::io(path, e))?;
    let io = |e| FormatError::io(path, e);
    // Held until the rename: a later run's cleanup leaves a live file be.
    tmp.as_file().lock().map_err(io)?;
    {
        let mut w = io::BufWriter::with_capacity(1 << 16, tmp.as_file_mut());
        write(&mut w).map_err(io)?;
        w.flush().map_err(io)?;
    }
    if let Some(m) = &like {
        copy_owner_and_mode(tmp.as_file(), m).map_err(io)?;
    }
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path)
        .map_err(|e| FormatError::io(path, e.error))?;
    sync_dir(dir);
    Ok(())
}

/// Write to a device, pipe or descriptor path as it is. Appending keeps
/// what a shell's `>>` put before, and is the same as writing for `>`.
fn write_through(
    path: &Path,
    write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
) -> Result<(), FormatError> {
    let f = OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| FormatError::io(path, e))?;
    let mut w = io::BufWriter::with_capacity(1 << 16, f);
    write(&mut w)
        .and_then(|()| w.flush())
        .map_err(|e| FormatError::io(path, e))
}

/// Give `f` the owner (where allowed) and mode of `m`.
fn copy_owner_and_mode(f: &File, m: &Metadata) -> io::Result<()> {
    // Only root may give a file away; anyone else keeps their own.
    let _ = std::os::unix::fs::fchown(f, Some(m.uid()), Some(m.gid()));
    f.set_permissions(Permissions::from_mode(m.mode() & 0o7777))
}

/// Make a rename durable; a failure here loses nothing already written.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Remove temporary files and staging folders of ours for `name` in `dir`
/// that no live writer holds (a killed run's). An old output a killed swap
/// left aside goes back to `name` when nothing took its place, so a write
/// that then fails leaves it as it was. Best effort.
fn clean_stale(dir: &Path, name: &std::ffi::OsStr) {
    let prefix = temp_prefix(name);
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let Some(rest) = e
            .file_name()
            .as_bytes()
            .strip_prefix(prefix.as_bytes())
            .map(<[u8]>::to_vec)
        else {
            continue;
        };
        let path = e.path();
        // Only what we create: opening a pipe of that name would block.
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let aside = rest.starts_with(ASIDE_MARK.as_bytes());
        if aside && meta.file_type().is_symlink() {
            // A link set aside (it cannot be locked): put it back.
            restore_or_remove(&path, &dir.join(name));
            continue;
        }
        if !meta.is_file() && !meta.is_dir() {
            continue;
        }
        let Ok(f) = File::open(&path) else { continue };
        if f.try_lock().is_err() {
            continue;
        }
        if aside {
            restore_or_remove(&path, &dir.join(name));
        } else if meta.is_dir() {
            remove_staged(&path);
        } else if meta.is_file() {
            let _ = fs::remove_file(&path);
        }
    }
}

/// Put the old output set aside at `aside` back at `dest` if nothing is
/// there, else remove it (what replaced it is newer).
fn restore_or_remove(aside: &Path, dest: &Path) {
    match fs::symlink_metadata(dest) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let _ = fs::rename(aside, dest);
        }
        _ => remove_replaced(aside),
    }
}

/// Remove a staging folder: only the files a JP export writes, then the
/// folder if that left it empty. Never a recursive removal.
fn remove_staged(dir: &Path) {
    // A replaced folder keeps its mode; a read-only one (0555) must become
    // writable for its files to go. Ours alone: it has our temp name.
    if let Ok(m) = fs::symlink_metadata(dir)
        && m.is_dir()
        && m.mode() & 0o300 != 0o300
    {
        let _ = fs::set_permissions(dir, Permissions::from_mode(m.mode() & 0o7777 | 0o700));
    }
    for f in JP_FILES {
        let _ = fs::remove_file(dir.join(f));
    }
    let _ = fs::remove_dir(dir);
}

/// A staging folder removed on drop unless it was swapped in.
struct Staged {
    path: PathBuf,
    armed: bool,
}

impl Drop for Staged {
    fn drop(&mut self) {
        if self.armed {
            remove_staged(&self.path);
        }
    }
}

/// Write the folder `path` holding `files` (names from [`JP_FILES`]) as a
/// unit: staged beside it, then swapped in. An existing folder is replaced
/// only when it holds nothing but such files (or links).
pub fn write_folder(
    path: &Path,
    files: &[(&str, Vec<u8>)],
    protect: &Protect,
) -> Result<(), FormatError> {
    protect.check(path)?;
    let refused = |reason: String| FormatError::Refused {
        path: path.to_owned(),
        reason,
    };
    let path_clean = path.components().as_path();
    let dir = parent_of(path_clean);
    // First, so that an old folder a killed run left aside is back in
    // place before it is looked at.
    if let Some(name) = path_clean.file_name()
        && dir.is_dir()
    {
        clean_stale(dir, name);
    }
    let existing = match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            let mut others = Vec::new();
            let mut modes = Vec::new();
            for e in fs::read_dir(path).map_err(|e| FormatError::io(path, e))? {
                let e = e.map_err(|e| FormatError::io(path, e))?;
                let name = e.file_name().to_string_lossy().into_owned();
                let lm = fs::symlink_metadata(e.path())
                    .map_err(|err| FormatError::io(&e.path(), err))?;
                let ours = JP_FILES.contains(&name.as_str())
                    && (lm.is_file() || lm.file_type().is_symlink());
                if ours {
                    if lm.is_file() {
                        modes.push((name, lm));
                    }
                } else {
                    others.push(name);
                }
            }
            if !others.is_empty() {
                others.sort();
                return Err(refused(format!(
                    "holds {} besides a JP conversation's files; a JP export replaces the whole folder, so name a new folder or one holding only events.json, metadata.json and base_config.json",
                    others.join(", ")
                )));
            }
            Some((m, modes))
        }
        Ok(m) if m.file_type().is_symlink() => Some((m, Vec::new())),
        Ok(_) => {
            return Err(refused(
                "is a file, but a JP conversation is a folder: name a folder".into(),
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(FormatError::io(path, e)),
    };
    let Some(name) = path_clean.file_name() else {
        return Err(refused("cannot be replaced: name the folder itself".into()));
    };
    fs::create_dir_all(dir).map_err(|e| FormatError::io(dir, e))?;
    let stage_dir = tempfile::Builder::new()
        .prefix(&temp_prefix(name))
        .rand_bytes(6)
        .permissions(Permissions::from_mode(0o777))
        .tempdir_in(dir)
        .map_err(|e| FormatError::io(path, e))?;
    let stage = Staged {
        path: stage_dir.keep(),
        armed: true,
    };
    let io = |e| FormatError::io(path, e);
    let lock = File::open(&stage.path).map_err(io)?;
    lock.lock().map_err(io)?;
    for (file, bytes) in files {
        let target = path.join(file);
        let io = |e| FormatError::io(&target, e);
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .open(stage.path.join(file))
            .map_err(io)?;
        f.write_all(bytes).map_err(io)?;
        let old = existing
            .as_ref()
            .and_then(|(_, modes)| modes.iter().find(|(n, _)| n == file));
        if let Some((_, m)) = old {
            copy_owner_and_mode(&f, m).map_err(io)?;
        }
        f.sync_all().map_err(io)?;
    }
    // The old folder's mode only now: a read-only one (0555) would stop
    // the files above from being created in it.
    if let Some((m, _)) = existing.as_ref().filter(|(m, _)| m.is_dir()) {
        copy_owner_and_mode(&lock, m).map_err(io)?;
    }
    lock.sync_all().map_err(io)?;
    swap_in(&stage, path_clean, existing.is_some()).map_err(io)?;
    let mut stage = stage;
    stage.armed = false;
    sync_dir(dir);
    Ok(())
}

/// Put the staged folder at `dest`; what was there ends up at the staging
/// path and is removed (the files of a JP folder, or a link).
fn swap_in(stage: &Staged, dest: &Path, exists: bool) -> io::Result<()> {
    if !exists {
        return fs::rename(&stage.path, dest);
    }
    match exchange(&stage.path, dest) {
        Ok(()) => {
            remove_replaced(&stage.path);
            Ok(())
        }
        Err(e)
            if matches!(e.raw_os_error(), Some(22 | 38 | 95))
                || e.kind() == io::ErrorKind::Unsupported =>
        {
            // No atomic exchange here (EINVAL, ENOSYS, EOPNOTSUPP): move
            // the old folder aside, then put the new one in place. The
            // aside is locked meanwhile; if this run is killed between
            // the two renames, the next write puts it back (clean_stale).
            let aside = aside_path(dest);
            let held = File::open(dest).and_then(|f| f.lock().map(|()| f));
            fs::rename(dest, &aside)?;
            if let Err(e) = fs::rename(&stage.path, dest) {
                let _ = fs::rename(&aside, dest);
                return Err(e);
            }
            remove_replaced(&aside);
            drop(held);
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// What follows [`temp_prefix`] in the name of an old folder set aside.
const ASIDE_MARK: &str = "old-";

/// Where the fallback swap moves the old folder while the new one goes in:
/// a temporary name of ours, so a killed run's is found by `clean_stale`.
fn aside_path(dest: &Path) -> PathBuf {
    let name = dest.file_name().unwrap_or_default();
    parent_of(dest).join(format!(
        "{}{ASIDE_MARK}{}",
        temp_prefix(name),
        std::process::id()
    ))
}

/// Remove what a swap replaced: a folder of JP files, or a link.
fn remove_replaced(path: &Path) {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => remove_staged(path),
        Ok(_) => {
            let _ = fs::remove_file(path);
        }
        Err(_) => {}
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(io::Error::from)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn exchange(_: &Path, _: &Path) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_temp_file_is_not_cleaned_but_a_stale_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join(".out.json.ctxfold-tmp-live01");
        let stale = dir.path().join(".out.json.ctxfold-tmp-dead01");
        let other = dir.path().join(".other.json.ctxfold-tmp-dead02");
        for p in [&live, &stale, &other] {
            fs::write(p, "x").unwrap();
        }
        let held = File::open(&live).unwrap();
        held.lock().unwrap();
        write_file(&dir.path().join("out.json"), b"{}\n", &Protect::none()).unwrap();
        assert!(live.exists(), "a live writer's file was removed");
        assert!(!stale.exists());
        assert!(other.exists(), "another destination's file was removed");
    }

    /// The state a run killed between the fallback's two renames leaves:
    /// the previous export aside, none at its name.
    fn killed_between_renames(dir: &Path) -> PathBuf {
        let dest = dir.join("conv");
        let aside = aside_path(&dest);
        fs::create_dir(&aside).unwrap();
        fs::write(aside.join("events.json"), "[1]").unwrap();
        dest
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn what_a_killed_fallback_swap_left_aside_is_cleaned_by_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let dest = killed_between_renames(dir.path());
        let files = vec![("events.json", b"[2]".to_vec())];
        write_folder(&dest, &files, &Protect::none()).unwrap();
        assert_eq!(fs::read_to_string(dest.join("events.json")).unwrap(), "[2]");
        assert_eq!(names(dir.path()), ["conv"]);
    }

    #[test]
    fn a_write_that_fails_after_a_killed_fallback_swap_leaves_the_previous_export() {
        let dir = tempfile::tempdir().unwrap();
        let dest = killed_between_renames(dir.path());
        // The same file twice: the second cannot be created in the stage.
        let files = vec![
            ("events.json", b"[2]".to_vec()),
            ("events.json", b"[3]".to_vec()),
        ];
        assert!(write_folder(&dest, &files, &Protect::none()).is_err());
        assert_eq!(fs::read_to_string(dest.join("events.json")).unwrap(), "[1]");
        assert_eq!(names(dir.path()), ["conv"]);
    }

    #[test]
    fn the_aside_fallback_and_the_exchange_leave_only_the_new_folder() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("conv");
        let files = |s: &str| vec![("events.json", format!("[{s}]").into_bytes())];
        write_folder(&dest, &files("1"), &Protect::none()).unwrap();
        write_folder(&dest, &files("2"), &Protect::none()).unwrap();
        assert_eq!(fs::read_to_string(dest.join("events.json")).unwrap(), "[2]");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["conv"]);
    }
}
