//! A workspace's home as a file system of its own: an ext4 image of a fixed size in the
//! workspace's directory, loop-mounted on its `home`, so that what a tenant writes there fills
//! that image and never the disk the gateway's state, ownership records and audit log live on.
//!
//! The image is reserved whole when it is made (`fallocate`): a size promised to every
//! workspace is a size the disk really holds, however many tenants fill theirs at once.
//! Mounting needs root; [`HomeDisks::probe`] says why it cannot be done otherwise, and the
//! gateway then runs homes as plain directories and says so (`workspaces.limits.home_bytes`).
//!
//! The mount is the host's and outlives the gateway, as the sandbox does: a restarted gateway
//! finds it mounted. `muxgate workspace stop` and `delete` take it down.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use super::host::{Scratch, which};
use muxgate_tmux::RunAs;

/// The image file, in the workspace's directory.
pub const IMAGE_FILE: &str = "home.img";

/// Smallest image `mkfs.ext4` makes a usable file system of.
pub const MIN_HOME_BYTES: u64 = 4 << 20;

/// How long one of the tools may take (`mkfs` of a large image writes its inode tables).
const TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// The tools a sized home needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HomeDisks {
    mkfs: PathBuf,
    mount: PathBuf,
    umount: PathBuf,
}

/// What became of a workspace's home when it was made ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Home {
    /// Its image is mounted on it.
    Sized,
    /// A home from before sized homes, with files in it: left a plain directory (it would be
    /// hidden under a new image).
    Unsized,
}

impl HomeDisks {
    /// The tools, when this process can mount: it is root and finds `mkfs.ext4`, `mount` and
    /// `umount`. Otherwise why not.
    pub fn probe() -> Result<Self, String> {
        // SAFETY: geteuid(2) cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err("the gateway is not root, and mounting a file system needs root".into());
        }
        let find = |name: &str| {
            which(Path::new(name)).ok_or_else(|| {
                format!("`{name}` not found on PATH (Debian: apt-get install e2fsprogs mount)")
            })
        };
        Ok(Self {
            mkfs: find("mkfs.ext4")?,
            mount: find("mount")?,
            umount: find("umount")?,
        })
    }

    /// Makes `home` (in the workspace directory `dir`) the mounted image of `bytes` owned by
    /// `owner`: made on first use, mounted if it is not. A home that already holds files
    /// without an image is left as it is ([`Home::Unsized`]).
    pub async fn attach(
        &self,
        dir: &Path,
        home: &Path,
        bytes: u64,
        owner: RunAs,
    ) -> io::Result<Home> {
        if is_mounted(home)? {
            return Ok(Home::Sized);
        }
        let image = dir.join(IMAGE_FILE);
        let new = !image.exists();
        if new {
            if fs::read_dir(home)?.next().is_some() {
                return Ok(Home::Unsized);
            }
            self.make_image(&image, bytes, owner).await?;
        }
        let options = "loop,nosuid,nodev,noatime";
        run(
            &self.mount,
            &[
                "-t".as_ref(),
                "ext4".as_ref(),
                "-o".as_ref(),
                options.as_ref(),
                image.as_os_str(),
                home.as_os_str(),
            ],
        )
        .await?;
        // The file system's root is the home: only its owner enters it.
        fs::set_permissions(home, fs::Permissions::from_mode(0o700))?;
        if new {
            // A new home starts empty (fsck makes the directory again if it ever needs it).
            let _ = fs::remove_dir(home.join("lost+found"));
        }
        Ok(Home::Sized)
    }

    /// Reserves `bytes` for `image` and makes an ext4 file system in it whose root `owner`
    /// owns. A failure leaves no image behind.
    async fn make_image(&self, image: &Path, bytes: u64, owner: RunAs) -> io::Result<()> {
        let made = async {
            reserve(image, bytes)?;
            let owner_option = format!("nodiscard,root_owner={}:{}", owner.uid, owner.gid);
            // No reserved blocks: the whole size is the tenant's.
            run(
                &self.mkfs,
                &[
                    "-q".as_ref(),
                    "-F".as_ref(),
                    "-m".as_ref(),
                    "0".as_ref(),
                    "-E".as_ref(),
                    owner_option.as_ref(),
                    image.as_os_str(),
                ],
            )
            .await
        }
        .await;
        if made.is_err() {
            let _ = fs::remove_file(image);
        }
        made
    }

    /// Makes, mounts and unmounts a throwaway image of `bytes` in a scratch directory: loop
    /// devices and the ext4 driver are not a given (a container may have neither), and a
    /// gateway that cannot give homes their size should say so when it starts, not when a
    /// tenant first calls.
    pub async fn prove(&self, bytes: u64) -> io::Result<()> {
        let scratch = Scratch::create("muxgate-home-probe")?;
        let home = scratch.path().join("home");
        fs::create_dir(&home)?;
        let owner = RunAs { uid: 0, gid: 0 };
        let attached = self.attach(scratch.path(), &home, bytes, owner).await;
        let detached = detach_with(&self.umount, &home).await;
        attached?;
        detached
    }
}

/// Unmounts `home` if an image is mounted there, with `umount` from `PATH` (for the operator's
/// commands, which run without a probed [`HomeDisks`]).
pub async fn detach(home: &Path) -> io::Result<()> {
    match which(Path::new("umount")) {
        Some(umount) => detach_with(&umount, home).await,
        None if is_mounted(home)? => Err(io::Error::other("`umount` not found on PATH")),
        None => Ok(()),
    }
}

async fn detach_with(umount: &Path, home: &Path) -> io::Result<()> {
    if !is_mounted(home)? {
        return Ok(());
    }
    // Lazily: a shell of the operator's may still stand in it; the image is freed when it
    // leaves.
    run(umount, &["-l".as_ref(), home.as_os_str()]).await
}

/// Allocates `bytes` for a new file at `path` (refusing a file system that cannot reserve
/// space: a sparse image would promise what the disk may not hold).
fn reserve(path: &Path, bytes: u64) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    let file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
    let len = libc::off_t::try_from(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "home size too large"))?;
    // SAFETY: fallocate(2) on a descriptor `file` keeps open for the call.
    if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) } != 0 {
        let error = io::Error::last_os_error();
        return Err(io::Error::new(
            error.kind(),
            format!(
                "cannot reserve {bytes} bytes for {}: {error}",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// Whether a file system is mounted exactly at `path` (in this process's mount namespace).
pub fn is_mounted(path: &Path) -> io::Result<bool> {
    let path = match fs::canonicalize(path) {
        Ok(path) => path,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let table = fs::read_to_string("/proc/self/mountinfo")?;
    Ok(table
        .lines()
        .filter_map(mount_point)
        .any(|point| Path::new(&point) == path))
}

/// The mount point (field 5) of a `/proc/self/mountinfo` line, unescaped (the kernel writes
/// space, tab, newline and backslash as `\ooo`).
fn mount_point(line: &str) -> Option<String> {
    let field = line.split(' ').nth(4)?;
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Runs `program args`, failing with its standard error when it fails.
async fn run(program: &Path, args: &[&std::ffi::OsStr]) -> io::Result<()> {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(TOOL_TIMEOUT, command.output())
        .await
        .map_err(|_| io::Error::other(format!("{} did not finish", program.display())))??;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(io::Error::other(format!(
        "{} failed ({}): {}",
        program.display(),
        output.status,
        stderr.trim().chars().take(300).collect::<String>()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_read_unescaped() {
        let line = "36 35 98:0 /mnt1 /mnt/with\\040space rw,noatime master:1 - ext3 /dev/root rw";
        assert_eq!(mount_point(line).as_deref(), Some("/mnt/with space"));
        assert_eq!(
            mount_point("22 1 0:21 / /proc rw - proc proc rw").as_deref(),
            Some("/proc")
        );
        assert_eq!(mount_point("short line"), None);
        assert_eq!(
            mount_point("1 2 3 / /a\\\\b x").as_deref(),
            Some("/a\\\\b"),
            "a backslash without three octal digits stays"
        );
    }

    #[test]
    fn the_root_and_proc_are_mounted_and_a_plain_directory_is_not() {
        assert!(is_mounted(Path::new("/")).unwrap());
        assert!(is_mounted(Path::new("/proc")).unwrap());
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_mounted(dir.path()).unwrap());
        assert!(!is_mounted(&dir.path().join("missing")).unwrap());
    }
}
