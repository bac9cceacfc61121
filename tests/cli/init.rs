//! `computeguard init`: the starter configuration loads, and its documented
//! defaults are the ones `docs/configuration.md` states.

use crate::*;
use std::collections::BTreeMap;

/// `key -> default` from the "Keys" table of docs/configuration.md, backticks removed.
fn documented_defaults() -> Result<BTreeMap<String, String>, Box<dyn std::error::Error>> {
    let doc = std::fs::read_to_string(root().join("docs/configuration.md"))?;
    let table = doc
        .split("| Key | Type | Default |")
        .nth(1)
        .ok_or("no Keys table in docs/configuration.md")?;
    let mut out = BTreeMap::new();
    for line in table.lines().skip(2) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let key = cells
            .get(1)
            .and_then(|c| c.split('`').nth(1))
            .ok_or(format!("no key in {line}"))?;
        let default = cells.get(3).ok_or(format!("no default in {line}"))?;
        out.insert(key.to_string(), default.replace('`', ""));
    }
    Ok(out)
}

#[test]
fn init_writes_a_config_that_loads_with_the_documented_defaults()
-> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let out = run_in(dir.path(), &["init"])?;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let path = dir.path().join("computeguard.yaml");
    let text = std::fs::read_to_string(&path)?;

    let config = computeguard::config::Config::load(&path)?;
    assert_eq!(config.as_of, None);
    assert!(config.rules.is_empty() && config.ignore.is_empty() && config.policies.is_empty());
    assert!(config.regions_allowed.is_empty() && config.allowed_geographies.is_empty());

    let docs = documented_defaults()?;
    let mut seen = 0;
    for line in text.lines() {
        if let Some(rest) = line.trim_start().strip_prefix("# default for ") {
            let (key, default) = rest.split_once(": ").ok_or(format!("bad line {line}"))?;
            assert_eq!(
                docs.get(key).map(String::as_str),
                Some(default),
                "`{key}` in the starter file vs docs/configuration.md"
            );
            seen += 1;
        }
    }
    assert_eq!(
        seen, 7,
        "asOf, regions (2), rules, policies, settings, ignore"
    );

    // The binary reads it: a check in that directory runs with it.
    std::fs::write(
        dir.path().join("c.yml"),
        "$schema: https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json\nname: c\ntype: amlcompute\nsize: Standard_NC4as_T4_v3\nmin_instances: 0\n",
    )?;
    let out = run_in(dir.path(), &["check", "c.yml"])?;
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    Ok(())
}

#[test]
fn init_refuses_to_overwrite_without_force() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("computeguard.yaml");
    std::fs::write(&path, "rules: {}\n")?;
    let out = run_in(dir.path(), &["init"])?;
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("already exists; pass --force"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&path)?, "rules: {}\n");
    let out = run_in(dir.path(), &["init", "--force"])?;
    assert_eq!(code(&out), 0);
    assert!(std::fs::read_to_string(&path)?.contains("# default for asOf: today (UTC)"));
    Ok(())
}
