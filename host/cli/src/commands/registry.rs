//! `computeguard push`, `pull`, `sign` and `verify`: policies and catalog overlays as OCI
//! artifacts (see `docs/distribution.md`).

use crate::Outcome;
use anyhow::{Context, bail};
use computeguard_oci::artifact::{Artifact, Kind};
use computeguard_oci::resolve::{Resolver, Source, Trust};
use computeguard_oci::sign::{PublicKey, SigningKey};
use computeguard_oci::{Cache, Client, ClientOptions, Reference, block_on};
use std::path::{Path, PathBuf};

/// What a file pushed holds.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArtifactKind {
    /// A policy component (`computeguard build` output).
    Component,
    /// A rule pack (YAML source; checked by compiling it before the push).
    Pack,
    /// A catalog overlay (YAML or JSON; checked as `catalog validate` checks it).
    Overlay,
}

#[derive(clap::Args, Debug)]
pub struct PushArgs {
    /// Where to push: oci://REGISTRY/REPOSITORY:TAG.
    pub reference: String,
    /// The policy component (.wasm), rule pack (.yaml) or catalog overlay (.yaml, .json).
    pub file: PathBuf,
    /// What the file is (default: a .wasm is a component; a YAML or JSON file with
    /// `rules:` is a pack, any other an overlay).
    #[arg(long, value_enum)]
    pub kind: Option<ArtifactKind>,
    /// Reach this registry over plain HTTP (loopback registries always are).
    #[arg(long)]
    pub insecure: bool,
}

#[derive(clap::Args, Debug)]
pub struct PullArgs {
    /// What to pull: oci://REGISTRY/REPOSITORY:TAG or ...@sha256:HEX.
    pub reference: String,
    /// A trusted public key (PEM): the artifact must carry a cosign signature by one of
    /// them. Repeatable.
    #[arg(long = "key", value_name = "PUBLIC_KEY")]
    pub keys: Vec<PathBuf>,
    /// Reach this registry over plain HTTP (loopback registries always are).
    #[arg(long)]
    pub insecure: bool,
}

#[derive(clap::Args, Debug)]
pub struct SignArgs {
    /// The private key: PKCS#8 EC P-256 PEM (`openssl genpkey -algorithm EC -pkeyopt
    /// ec_paramgen_curve:P-256`) or cosign's encrypted key (password in COSIGN_PASSWORD).
    #[arg(long, value_name = "KEY")]
    pub key: PathBuf,
    /// What to sign: oci://REGISTRY/REPOSITORY:TAG or ...@sha256:HEX.
    pub reference: String,
    /// Reach this registry over plain HTTP (loopback registries always are).
    #[arg(long)]
    pub insecure: bool,
}

fn client(r: &Reference, insecure: bool) -> anyhow::Result<Client> {
    Ok(Client::new(ClientOptions {
        insecure: if insecure {
            vec![r.registry.clone()]
        } else {
            Vec::new()
        },
        ..ClientOptions::default()
    })?)
}

fn has_rules(path: &Path) -> anyhow::Result<bool> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    let docs = computeguard_decode::decode_yaml(&text).map_err(|e| {
        anyhow::anyhow!("{}:{}:{}: {}", path.display(), e.line, e.column, e.message)
    })?;
    Ok(docs
        .first()
        .and_then(|d| d.value.as_object())
        .is_some_and(|m| m.contains_key("rules")))
}

pub fn push(args: PushArgs) -> anyhow::Result<Outcome> {
    let r = Reference::parse(&args.reference)?;
    if r.tag.is_none() {
        bail!("push needs a tag: oci://REGISTRY/REPOSITORY:TAG");
    }
    let path = &args.file;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let kind = match args.kind {
        Some(ArtifactKind::Component) => Kind::Component,
        Some(ArtifactKind::Pack) => Kind::Pack,
        Some(ArtifactKind::Overlay) => Kind::Overlay {
            json: ext == "json",
        },
        None if ext == "wasm" => Kind::Component,
        None if ext == "json" => Kind::Overlay { json: true },
        None if has_rules(path)? => Kind::Pack,
        None => Kind::Overlay { json: false },
    };
    // What is published is checked first: a pack must compile, an overlay must be valid.
    match kind {
        Kind::Pack => {
            computeguard_policyset::load::compile_pack(path)?;
        }
        Kind::Overlay { .. } => {
            computeguard_policyset::context::load(
                &computeguard_policyset::context::ContextFiles {
                    catalog: vec![path.clone()],
                    ..Default::default()
                },
            )?;
        }
        Kind::Component => {}
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read `{}`", path.display()))?;
    let title = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let artifact = Artifact::new(kind, bytes, &title)?;
    let client = client(&r, args.insecure)?;
    let digest = block_on(client.push_artifact(&r, &artifact))??;
    eprintln!(
        "pushed {} `{}` to {r}@{digest}",
        kind.describe(),
        path.display()
    );
    println!("{digest}");
    Ok(Outcome::Clean)
}

fn resolve(
    reference: &str,
    keys: &[PathBuf],
    insecure: bool,
) -> anyhow::Result<computeguard_oci::resolve::Resolved> {
    let r = Reference::parse(reference)?;
    let keys = keys
        .iter()
        .map(|k| PublicKey::read(k))
        .collect::<Result<Vec<_>, _>>()?;
    let resolver = Resolver {
        client: client(&r, insecure)?,
        cache: Cache::open_default(),
        trust: Trust::new(keys, &[])?,
    };
    let resolved = resolver.resolve(&r)?;
    if let Source::Cache { reason } = &resolved.source {
        eprintln!("warning: {reason}; using the cached verified copy");
    }
    Ok(resolved)
}

pub fn pull(args: PullArgs) -> anyhow::Result<Outcome> {
    let resolved = resolve(&args.reference, &args.keys, args.insecure)?;
    if let Some(k) = &resolved.signed_by {
        eprintln!("signature verified with `{k}`");
    }
    eprintln!(
        "{} {}@{} in the cache",
        resolved.kind.describe(),
        args.reference,
        resolved.digest
    );
    println!("{} {}", resolved.digest, resolved.path.display());
    Ok(Outcome::Clean)
}

pub fn sign(args: SignArgs) -> anyhow::Result<Outcome> {
    let r = Reference::parse(&args.reference)?;
    let password = std::env::var(computeguard_oci::sign::ENV_PASSWORD).ok();
    let key = SigningKey::read(&args.key, password.as_deref().map(str::as_bytes))?;
    let client = client(&r, args.insecure)?;
    let (digest, tag) = block_on(computeguard_oci::resolve::sign(&client, &r, &key))??;
    eprintln!(
        "signed oci://{}@{digest}; the signature is the tag {tag}",
        r.repository_name()
    );
    println!("{digest}");
    Ok(Outcome::Clean)
}
