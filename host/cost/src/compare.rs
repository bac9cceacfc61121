//! What a change adds to the cost of its base: the two estimates' totals and each resource
//! that is new, gone or priced differently, matched by file and resource name.

use crate::estimate::{Estimate, ResourceCost, Totals};
use serde::Serialize;

/// One resource's cost in the base and in the change (`None`: not there).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// The file (as the change names it).
    pub file: String,
    /// The resource as messages name it.
    pub resource: String,
    /// Idle cost per month in the base; `None` when it is not in the base or unknown there.
    pub base_floor: Option<f64>,
    /// Idle cost per month in the change; `None` when it is gone or unknown.
    pub floor: Option<f64>,
    /// Full-scale cost per month in the base.
    pub base_ceiling: Option<f64>,
    /// Full-scale cost per month in the change.
    pub ceiling: Option<f64>,
    /// `added`, `removed` or `changed`.
    pub what: &'static str,
}

/// What the base of a comparison is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BaseKind {
    /// The same paths priced in a checkout of the base branch (`check --compare-to DIR`).
    #[default]
    Checkout,
    /// The cost a baseline file recorded when it was written (`check --baseline FILE`).
    Baseline,
}

/// The change's cost against its base.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// What the base is (a folder or a baseline file, as given).
    pub base: String,
    /// Whether the base is a checkout or a baseline's record.
    pub base_kind: BaseKind,
    /// The base's totals.
    pub base_total: Totals,
    /// The change's totals.
    pub total: Totals,
    /// Change minus base, idle per month (of the known amounts).
    pub floor_delta: f64,
    /// Change minus base, at full scale per month (of the known amounts).
    pub ceiling_delta: f64,
    /// The currency.
    pub currency: String,
    /// Each resource added, removed or priced differently.
    pub changes: Vec<Change>,
}

impl Comparison {
    /// `base` (whose files are named as the change names them) against `change`.
    ///
    /// # Example
    ///
    /// ```
    /// use computeguard_cost::{Comparison, Estimate};
    ///
    /// let c = Comparison::of("main", &Estimate::default(), &Estimate::default());
    /// assert_eq!(c.summary(), "+$0.00/month idle, +$0.00/month at full scale");
    /// ```
    pub fn of(base_name: &str, base: &Estimate, change: &Estimate) -> Comparison {
        let key = |c: &ResourceCost| (c.file.clone(), c.resource.clone());
        let mut changes = Vec::new();
        for c in &change.resources {
            match base.resources.iter().find(|b| key(b) == key(c)) {
                None => changes.push(Change {
                    file: c.file.clone(),
                    resource: c.resource.clone(),
                    base_floor: None,
                    floor: c.floor_monthly,
                    base_ceiling: None,
                    ceiling: c.ceiling_monthly,
                    what: "added",
                }),
                Some(b)
                    if b.floor_monthly != c.floor_monthly
                        || b.ceiling_monthly != c.ceiling_monthly =>
                {
                    changes.push(Change {
                        file: c.file.clone(),
                        resource: c.resource.clone(),
                        base_floor: b.floor_monthly,
                        floor: c.floor_monthly,
                        base_ceiling: b.ceiling_monthly,
                        ceiling: c.ceiling_monthly,
                        what: "changed",
                    });
                }
                Some(_) => {}
            }
        }
        for b in &base.resources {
            if !change.resources.iter().any(|c| key(c) == key(b)) {
                changes.push(Change {
                    file: b.file.clone(),
                    resource: b.resource.clone(),
                    base_floor: b.floor_monthly,
                    floor: None,
                    base_ceiling: b.ceiling_monthly,
                    ceiling: None,
                    what: "removed",
                });
            }
        }
        let cents = |x: f64| (x * 100.0).round() / 100.0;
        Comparison {
            base: base_name.to_string(),
            base_kind: BaseKind::Checkout,
            base_total: base.total.clone(),
            total: change.total.clone(),
            floor_delta: cents(change.total.floor_monthly - base.total.floor_monthly),
            ceiling_delta: cents(change.total.ceiling_monthly - base.total.ceiling_monthly),
            currency: if change.currency.is_empty() {
                "USD".into()
            } else {
                change.currency.clone()
            },
            changes,
        }
    }

    /// The same comparison, its base being what the baseline file `base` recorded.
    #[must_use]
    pub fn from_baseline(mut self) -> Comparison {
        self.base_kind = BaseKind::Baseline;
        self
    }

    /// What the text and Markdown reports call the base: `../base`, `the baseline b.json`.
    pub fn base_label(&self) -> String {
        match self.base_kind {
            BaseKind::Checkout => self.base.clone(),
            BaseKind::Baseline => format!("the baseline {}", self.base),
        }
    }

    /// `+$12,410.00/month idle, +$98,280.00/month at full scale`.
    pub fn summary(&self) -> String {
        format!(
            "{}/month idle, {}/month at full scale",
            signed(self.floor_delta, &self.currency),
            signed(self.ceiling_delta, &self.currency)
        )
    }
}

impl Comparison {
    /// What the sums leave out on either side, as a clause (`None` when nothing is).
    pub fn unknown_note(&self) -> Option<String> {
        let (base, change) = (self.base_total.unknown, self.total.unknown);
        (base + change > 0).then(|| {
            format!(
                "of the known prices: {change} resource(s) of the change and {base} of the base have an unknown price or count"
            )
        })
    }
}

/// An amount with its sign (`+$1.00`, `-$2.50`).
pub fn signed(x: f64, currency: &str) -> String {
    let m = crate::estimate::money(x, currency);
    if x < 0.0 { m } else { format!("+{m}") }
}
