//! A zone's plan and what it sets for the provider: how many records one batch call may carry.
//!
//! Cloudflare's batch endpoint takes more operations per call on paid plans: "The number of records that
//! you can operate with in one action depends on your zone plan: Free: 200, Pro: 3,500, Business: 3,500,
//! Enterprise: 3,500" (<https://developers.cloudflare.com/dns/manage-dns-records/how-to/batch-record-changes/>,
//! "Availability and limits"). Writing a paid zone 200 at a time spends 17 times the calls of the same
//! account's 1,200-per-5-minutes budget, so the provider sizes each zone's batches from the `plan` every
//! zone object carries (`GET /zones`, `GET /zones/{id}`).

use serde::Deserialize;

/// Records one batch call carries on the Free plan.
pub const FREE_PLAN_BATCH_LIMIT: usize = 200;
/// Records one batch call carries on the Pro, Business and Enterprise plans.
pub const PAID_PLAN_BATCH_LIMIT: usize = 3500;

/// The part of a zone's `plan` object the provider reads.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ZonePlan {
    /// The plan's stable name (`free`, `pro`, `business`, `enterprise`); its display name and id change
    /// with Cloudflare's offer, this does not.
    #[serde(default)]
    pub legacy_id: Option<String>,
}

impl ZonePlan {
    /// The most records one batch call on a zone of this plan carries, or `None` for a plan this table does
    /// not know (a new one): the caller then keeps the Free plan's limit, which every plan takes.
    pub fn batch_limit(&self) -> Option<usize> {
        match self.legacy_id.as_deref()?.trim().to_ascii_lowercase().as_str() {
            "free" => Some(FREE_PLAN_BATCH_LIMIT),
            "pro" | "business" | "enterprise" => Some(PAID_PLAN_BATCH_LIMIT),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(json: &str) -> ZonePlan {
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn free_zones_take_200_paid_ones_3500_and_an_unknown_plan_nothing() {
        assert_eq!(
            plan(r#"{"legacy_id":"free","name":"Free Website"}"#).batch_limit(),
            Some(200)
        );
        for paid in ["pro", "business", "Enterprise"] {
            assert_eq!(
                plan(&format!(r#"{{"legacy_id":"{paid}"}}"#)).batch_limit(),
                Some(3500),
                "{paid}"
            );
        }
        assert_eq!(plan(r#"{"legacy_id":"partners_ent"}"#).batch_limit(), None);
        assert_eq!(plan("{}").batch_limit(), None);
    }
}
