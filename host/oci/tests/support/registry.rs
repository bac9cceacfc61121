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
        let bin = binary().expect(
            "the distribution registry (Debian package docker-registry) is not installed; \
             scripts/test.sh installs it (apt-get install -y docker-registry skopeo)",
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let storage = dir.path().join("storage");
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n  cache:\n    blobdescriptor: inmemory\nhttp:\n  addr: {addr}\n",
                storage.display()
            ),
        )
        .expect("write config");
        let child = Command::new(&bin)
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start docker-registry");
        let reg = Registry {
            child,
            addr,
            storage,
            _dir: dir,
        };
        reg.wait_ready();
        reg
    }

    fn wait_ready(&self) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if std::net::TcpStream::connect(&self.addr).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "docker-registry did not listen on {} within 20 s",
            self.addr
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
