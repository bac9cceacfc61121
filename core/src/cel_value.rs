//! What rules see: the conversions of the evaluation's inputs into CEL values.
//!
//! `resource` is built field by field ([`resource`]) rather than through
//! cel-interpreter's serde serializer, which allocated every field name anew and hashed
//! every entry twice (it collects a map, then re-inserts it into another): that was a
//! sixth of a fresh evaluation of a Pod. The field names are made once per process (so
//! once per pre-initialised snapshot). The answer is the serializer's, which the tests
//! check on every JSON fixture.

use crate::compute::Resource;
use cel_interpreter::Value as Cel;
use cel_interpreter::objects::{FastHashMap, Key, Map};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// Any serializable value, through cel-interpreter's serializer.
pub(crate) fn to_cel<T: Serialize>(v: &T) -> Cel {
    cel_interpreter::to_value(v).unwrap_or(Cel::Null)
}

/// JSON to CEL. Whole numbers become `int` (CEL's default integer type, so
/// `settings.n * 2` works) unless they only fit in a `uint`.
pub(crate) fn json_to_cel(v: &Value) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Cel::Int(i),
            (None, Some(u)) => Cel::UInt(u),
            _ => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => text(s),
        Value::Array(a) => Cel::List(Arc::new(a.iter().map(json_to_cel).collect())),
        Value::Object(m) => map(m.iter().map(|(k, v)| (key(k), json_to_cel(v)))),
    }
}

pub(crate) fn text(s: &str) -> Cel {
    Cel::String(Arc::new(s.to_string()))
}

pub(crate) fn key(s: &str) -> Key {
    Key::String(Arc::new(s.to_string()))
}

pub(crate) fn map(entries: impl ExactSizeIterator<Item = (Key, Cel)>) -> Cel {
    let mut m = FastHashMap::with_capacity_and_hasher(entries.len(), Default::default());
    m.extend(entries);
    Cel::Map(Map { map: Arc::new(m) })
}

/// The field names of `resource`, the camelCase names serde gives [`Resource`]'s
/// serialized fields: those of [`ScalarField`] and [`CollectionField`] (a test holds the
/// three together), listed in the order the compiler names them to authors.
pub(crate) const FIELDS: [&str; 37] = [
    "kind",
    "sourceKind",
    "name",
    "namespace",
    "display",
    "sku",
    "region",
    "zones",
    "minNodes",
    "maxNodes",
    "autoscale",
    "priority",
    "workload",
    "instanceCount",
    "distributed",
    "images",
    "gpuRequests",
    "rdmaRequests",
    "labels",
    "osType",
    "kubernetesVersion",
    "gpuInstanceProfile",
    "poolMode",
    "osSku",
    "gpuDriver",
    "preset",
    "tolerations",
    "taints",
    "nodeSelection",
    "cuda",
    "cudaSource",
    "isolationRequired",
    "gpuOperator",
    "parentRegion",
    "parent",
    "unresolved",
    "azureId",
];

/// The keys of `resource`'s map, in the order of [`ScalarField::ALL`] then
/// [`CollectionField::ALL`], made once per process (so once per pre-initialised
/// snapshot).
fn field_keys() -> &'static [Key] {
    static KEYS: OnceLock<Vec<Key>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let scalars = ScalarField::ALL.iter().map(|f| f.name());
        let collections = CollectionField::ALL.iter().map(|f| f.name());
        scalars.chain(collections).map(key).collect()
    })
}

/// `resource` as rules see it: the same value as `to_cel(r)` (the tests compare the
/// two on every fixture), built from the two field tables below.
pub(crate) fn resource(r: &Resource) -> Cel {
    let scalars = ScalarField::ALL.iter().map(|f| f.read(r).to_cel());
    let collections = CollectionField::ALL.iter().map(|f| f.read(r).to_cel());
    let keys = field_keys();
    let mut m = FastHashMap::with_capacity_and_hasher(keys.len(), Default::default());
    m.extend(keys.iter().cloned().zip(scalars.chain(collections)));
    Cel::Map(Map { map: Arc::new(m) })
}

/// A scalar value as a rule sees it, borrowed from where it lives: what the typed
/// programs (`eval::typed`) compute with instead of building a [`Cel`] value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Scalar<'a> {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(&'a str),
}

impl<'a> Scalar<'a> {
    /// The scalar a CEL value holds; None for a list, map, bytes, function or time.
    pub(crate) fn of(v: &'a Cel) -> Option<Self> {
        Some(match v {
            Cel::Null => Scalar::Null,
            Cel::Bool(b) => Scalar::Bool(*b),
            Cel::Int(i) => Scalar::Int(*i),
            Cel::UInt(u) => Scalar::UInt(*u),
            Cel::Float(f) => Scalar::Float(*f),
            Cel::String(s) => Scalar::Str(s.as_str()),
            _ => return None,
        })
    }

    /// The CEL value of the scalar.
    pub(crate) fn to_cel(self) -> Cel {
        match self {
            Scalar::Null => Cel::Null,
            Scalar::Bool(b) => Cel::Bool(b),
            Scalar::Int(i) => Cel::Int(i),
            Scalar::UInt(u) => Cel::UInt(u),
            Scalar::Float(f) => Cel::Float(f),
            Scalar::Str(s) => text(s),
        }
    }

    fn opt(v: &'a Option<String>) -> Self {
        v.as_deref().map_or(Scalar::Null, Scalar::Str)
    }

    fn opt_int(v: Option<i64>) -> Self {
        v.map_or(Scalar::Null, Scalar::Int)
    }
}

/// Declares an enum of `resource`'s fields from one table: each field's variant, its
/// name in `resource`, and how it is read from a [`Resource`] as `$value`.
macro_rules! resource_fields {
    ($(#[$doc:meta])* $enum:ident -> $value:ident {
        $($variant:ident $name:literal |$r:ident| $read:expr,)*
    }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum $enum {
            $($variant,)*
        }

        impl $enum {
            pub(crate) const ALL: &'static [$enum] = &[$($enum::$variant,)*];

            /// The field's name in `resource`.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $($enum::$variant => $name,)*
                }
            }

            /// The field called `name`; None for a name this table does not have.
            pub(crate) fn named(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|f| f.name() == name)
            }

            /// The field's value in `r`, as `resource(r)` holds it.
            pub(crate) fn read(self, r: &Resource) -> $value<'_> {
                match self {
                    $($enum::$variant => {
                        let $r = r;
                        $read
                    })*
                }
            }
        }
    };
}

resource_fields! {
    /// The fields of `resource` that hold a scalar, read straight from the [`Resource`]
    /// with the value [`resource`] puts in its map (a test compares the two on every
    /// fixture).
    ScalarField -> Scalar {
        Kind "kind" |r| Scalar::Str(&r.kind),
        SourceKind "sourceKind" |r| Scalar::Str(&r.source_kind),
        Name "name" |r| Scalar::Str(&r.name),
        Namespace "namespace" |r| Scalar::opt(&r.namespace),
        Display "display" |r| Scalar::Str(&r.display),
        Sku "sku" |r| Scalar::opt(&r.sku),
        Region "region" |r| Scalar::opt(&r.region),
        MinNodes "minNodes" |r| Scalar::opt_int(r.min_nodes),
        MaxNodes "maxNodes" |r| Scalar::opt_int(r.max_nodes),
        Autoscale "autoscale" |r| r.autoscale.map_or(Scalar::Null, Scalar::Bool),
        Priority "priority" |r| Scalar::opt(&r.priority),
        Workload "workload" |r| Scalar::Str(&r.workload),
        InstanceCount "instanceCount" |r| Scalar::opt_int(r.instance_count),
        Distributed "distributed" |r| Scalar::Bool(r.distributed),
        GpuRequests "gpuRequests" |r| Scalar::Float(r.gpu_requests),
        RdmaRequests "rdmaRequests" |r| Scalar::Float(r.rdma_requests),
        OsType "osType" |r| Scalar::opt(&r.os_type),
        KubernetesVersion "kubernetesVersion" |r| Scalar::opt(&r.kubernetes_version),
        GpuInstanceProfile "gpuInstanceProfile" |r| Scalar::opt(&r.gpu_instance_profile),
        PoolMode "poolMode" |r| Scalar::opt(&r.pool_mode),
        OsSku "osSku" |r| Scalar::opt(&r.os_sku),
        GpuDriver "gpuDriver" |r| Scalar::opt(&r.gpu_driver),
        Preset "preset" |r| Scalar::opt(&r.preset),
        Cuda "cuda" |r| Scalar::opt(&r.cuda),
        CudaSource "cudaSource" |r| Scalar::opt(&r.cuda_source),
        IsolationRequired "isolationRequired" |r| Scalar::Bool(r.isolation_required),
        GpuOperator "gpuOperator" |r| Scalar::Bool(r.gpu_operator),
        ParentRegion "parentRegion" |r| Scalar::opt(&r.parent_region),
        Parent "parent" |r| Scalar::opt(&r.parent),
        AzureId "azureId" |r| Scalar::opt(&r.azure_id),
    }
}

/// A field of `resource` that holds a list or a map, borrowed from the [`Resource`]:
/// what the typed programs (`eval::typed`) iterate and count without converting it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Collection<'a> {
    /// A list of strings.
    Strings(&'a [String]),
    /// A map of strings to strings (in CEL, a map; iterated, its keys).
    Map(&'a BTreeMap<String, String>),
    /// A list of JSON values (each converted as [`to_cel`] converts it).
    Json(&'a [Value]),
}

impl Collection<'_> {
    /// The CEL value `resource` holds for the field.
    pub(crate) fn to_cel(self) -> Cel {
        match self {
            Collection::Strings(l) => Cel::List(Arc::new(l.iter().map(|s| text(s)).collect())),
            Collection::Map(m) => map(m.iter().map(|(k, v)| (key(k), text(v)))),
            // Through serde, as before: serde_json writes a positive integer as a `uint`,
            // where [`json_to_cel`] makes an `int`.
            Collection::Json(l) => Cel::List(Arc::new(l.iter().map(to_cel).collect())),
        }
    }

    pub(crate) fn len(self) -> usize {
        match self {
            Collection::Strings(l) => l.len(),
            Collection::Map(m) => m.len(),
            Collection::Json(l) => l.len(),
        }
    }
}

resource_fields! {
    /// The fields of `resource` that hold a list or a map (a test compares each,
    /// converted, with what [`resource`] holds on every fixture).
    CollectionField -> Collection {
        Zones "zones" |r| Collection::Strings(&r.zones),
        Images "images" |r| Collection::Strings(&r.images),
        Labels "labels" |r| Collection::Map(&r.labels),
        Tolerations "tolerations" |r| Collection::Json(&r.tolerations),
        Taints "taints" |r| Collection::Strings(&r.taints),
        NodeSelection "nodeSelection" |r| Collection::Map(&r.node_selection),
        Unresolved "unresolved" |r| Collection::Strings(&r.unresolved),
    }
}

/// A JSON scalar as [`to_cel`] converts it (serde writes a non-negative integer as a
/// `uint`); None for an array or an object.
pub(crate) fn json_scalar(v: &Value) -> Option<Scalar<'_>> {
    Some(match v {
        Value::Null => Scalar::Null,
        Value::Bool(b) => Scalar::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Scalar::UInt(u),
            (None, Some(i)) => Scalar::Int(i),
            _ => Scalar::Float(n.as_f64()?),
        },
        Value::String(s) => Scalar::Str(s),
        Value::Array(_) | Value::Object(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compute::Source;
    use std::path::Path;

    fn json_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                json_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "json") {
                out.push(path);
            }
        }
    }

    #[test]
    fn resource_has_exactly_the_fields_serde_gives_it() {
        let keys = |v: Cel| match v {
            Cel::Map(m) => m.map.keys().map(|k| format!("{k:?}")).collect::<Vec<_>>(),
            other => vec![format!("not a map: {other:?}")],
        };
        let (mut ours, mut serde) = (
            keys(resource(&Resource::default())),
            keys(to_cel(&Resource::default())),
        );
        ours.sort();
        serde.sort();
        assert_eq!(ours, serde);
        // The list the compiler checks fields against is the same set.
        let mut listed = FIELDS.map(str::to_string).to_vec();
        let mut tables: Vec<String> = ScalarField::ALL
            .iter()
            .map(|f| f.name())
            .chain(CollectionField::ALL.iter().map(|f| f.name()))
            .map(str::to_string)
            .collect();
        listed.sort();
        tables.sort();
        assert_eq!(listed, tables);
    }

    #[test]
    fn resource_equals_the_serde_conversion_on_every_json_fixture() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        for dir in ["tests/fixtures", "examples"] {
            json_files(&root.join(dir), &mut files);
        }
        let mut resources = 0;
        for file in &files {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            let Ok(doc) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            for source in [Source::Unknown, Source::AzureMl, Source::Terraform] {
                for r in crate::read::normalize(&doc, source) {
                    assert_eq!(resource(&r), to_cel(&r), "{}: {}", file.display(), r.name);
                    assert_scalar_fields_match(&r);
                    resources += 1;
                }
            }
        }
        assert!(
            resources > 100,
            "only {resources} resources read from {} files",
            files.len()
        );
        // Every optional field set, and a toleration with numbers of each kind.
        let full = Resource {
            namespace: Some("ns".into()),
            sku: Some("Standard_NC6".into()),
            region: Some("eastus".into()),
            zones: vec!["1".into(), "3".into()],
            min_nodes: Some(0),
            max_nodes: Some(-3),
            autoscale: Some(true),
            priority: Some("Spot".into()),
            instance_count: Some(2),
            distributed: true,
            images: vec!["a".into(), "b".into()],
            gpu_requests: 1.5,
            rdma_requests: 2.0,
            labels: [("k".to_string(), "v".to_string())].into(),
            os_type: Some("Linux".into()),
            kubernetes_version: Some("1.30".into()),
            gpu_instance_profile: Some("1g.10gb".into()),
            tolerations: [
                serde_json::json!({"seconds": 300, "neg": -1, "f": 1.5, "ok": null}),
                // Not what a reader writes, but what the conversions must agree on.
                serde_json::json!(300),
                serde_json::json!(-1),
                serde_json::json!(1.5),
                serde_json::json!("s"),
                serde_json::json!(null),
                serde_json::json!(true),
            ]
            .into(),
            taints: vec!["t".into()],
            node_selection: [("n".to_string(), "s".to_string())].into(),
            cuda: Some("12.2".into()),
            cuda_source: Some("label".into()),
            isolation_required: true,
            gpu_operator: true,
            parent_region: Some("westus".into()),
            parent: Some("p".into()),
            unresolved: vec!["u".into()],
            azure_id: Some("/subscriptions/x".into()),
            ..Resource::default()
        };
        assert_eq!(resource(&full), to_cel(&full));
        assert_scalar_fields_match(&full);
    }

    /// The two field tables read what `resource(r)` holds, a scalar field a scalar and a
    /// collection field a list or a map, and a JSON item's scalar is the one `to_cel`
    /// gives.
    fn assert_scalar_fields_match(r: &Resource) {
        let Cel::Map(m) = resource(r) else {
            panic!("resource is a map");
        };
        for f in ScalarField::ALL {
            let held = m.map.get(&key(f.name())).expect("a field of resource");
            assert_eq!(
                Scalar::of(held),
                Some(f.read(r)),
                "{} of {}",
                f.name(),
                r.name
            );
        }
        for f in CollectionField::ALL {
            let held = m.map.get(&key(f.name())).expect("a field of resource");
            let c = f.read(r);
            assert_eq!(&c.to_cel(), held, "{} of {}", f.name(), r.name);
            let len = match held {
                Cel::List(l) => l.len(),
                Cel::Map(m) => m.map.len(),
                other => panic!("{} of {} is {other:?}", f.name(), r.name),
            };
            assert_eq!(c.len(), len);
            if let (Collection::Json(l), Cel::List(items)) = (c, held) {
                for (item, json) in items.iter().zip(l) {
                    assert_eq!(
                        json_scalar(json),
                        Scalar::of(item),
                        "{} of {}",
                        f.name(),
                        r.name
                    );
                }
            }
        }
    }

    #[test]
    fn scalar_fields_are_exactly_the_fields_that_hold_scalars() {
        // Every field of a resource with every optional field unset or set: a field is
        // scalar (in `ScalarField::ALL`) exactly when neither value is a list or a map.
        let set = Resource {
            namespace: Some("ns".into()),
            sku: Some("s".into()),
            min_nodes: Some(1),
            autoscale: Some(true),
            ..Resource::default()
        };
        for r in [Resource::default(), set] {
            let Cel::Map(m) = resource(&r) else {
                panic!("resource is a map");
            };
            for (k, held) in m.map.iter() {
                let name = k.to_string();
                assert_eq!(
                    ScalarField::named(&name).is_some(),
                    Scalar::of(held).is_some(),
                    "{name}"
                );
                assert_eq!(
                    CollectionField::named(&name).is_some(),
                    Scalar::of(held).is_none(),
                    "{name}"
                );
            }
        }
    }
}
