//! A real CNCF distribution registry (Debian's `docker-registry`) on loopback, started
//! by the tests with a configuration of their own; stopped when dropped. Shared by the
//! crate's tests and the CLI's (`#[path]`).

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running registry.
pub struct Registry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// Its storage directory (the blobs are under docker/registry/v2/blobs).
    pub storage: PathBuf,
    _dir: tempfile::TempDir,
}

/// The registry binary, if installed (scripts/test.sh installs it with apt).
pub fn binary() -> Option<PathBuf> {
    ["/usr/bin/docker-registry", "/usr/sbin/docker-registry"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join("docker-registry"))
                    .find(|p| p.is_file())
            })
        })
}

/// `skopeo`, if installed.
pub fn skopeo() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("skopeo"))
            .find(|p| p.is_file())
    })
}

/// A port free on 127.0.0.1 now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Registry {
    /// Starts a registry. Fails the test when the binary is not installed: these tests
    /// need the real registry, and scripts/test.sh installs it.
    pub fn start() -> Registry {
        Registry::start_with_auth("")
    }

    /// Starts a registry whose configuration has `auth` as its `auth:` section (YAML
    /// lines indented by two spaces under `auth:`, e.g. `  htpasswd:\n    realm: r\n
    /// path: ...`), or no `auth:` section when it is empty. The registry's log (level
    /// info) is kept in the temporary directory: [`Registry::log`].
    pub fn start_with_auth(auth: &str) -> Registry {
        let bin = binary().expect(
            "the distribution registry (Debian package docker-registry) is not installed; \
             scripts/test.sh installs it (apt-get install -y docker-registry skopeo)",
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let storage = dir.path().join("storage");
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let config = dir.path().join("config.yml");
        let auth = if auth.is_empty() {
            String::new()
        } else {
            format!("auth:\n{auth}")
        };
        let level = if auth.is_empty() { "error" } else { "info" };
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: {level}\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n  cache:\n    blobdescriptor: inmemory\nhttp:\n  addr: {addr}\n{auth}",
                storage.display()
            ),
        )
        .expect("write config");
        let log = std::fs::File::create(dir.path().join("registry.log")).expect("log file");
        let child = Command::new(&bin)
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start docker-registry");
        let mut reg = Registry {
            child,
            addr,
            storage,
            _dir: dir,
        };
        reg.wait_ready();
        reg
    }

    /// What the registry logged so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("registry.log")).unwrap_or_default()
    }

    /// Waits until the registry listens; a registry that exited (its port taken between
    /// `free_port` and its start, a bad configuration) fails the test with its log.
    fn wait_ready(&mut self) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("docker-registry exited ({status}): {}", self.log());
            }
            if std::net::TcpStream::connect(&self.addr).is_ok() {
                // Listening; make sure it is this registry, not another process that
                // took the port first.
                std::thread::sleep(Duration::from_millis(50));
                if let Ok(Some(status)) = self.child.try_wait() {
                    panic!("docker-registry exited ({status}): {}", self.log());
                }
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "docker-registry did not listen on {} within 20 s: {}",
            self.addr,
            self.log()
        );
    }

    /// `oci://127.0.0.1:PORT/<path>`.
    pub fn oci(&self, path: &str) -> String {
        format!("oci://{}/{path}", self.addr)
    }

    /// The stored blob file of `digest` (`sha256:<hex>`).
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.storage
            .join("docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// Stops the registry (an unreachable registry from here on).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The storage directory.
    pub fn storage(&self) -> &Path {
        &self.storage
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}
