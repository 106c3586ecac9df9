//! Step 3, fetch: every wheel of the plan as a verified file in the cache,
//! from a bundle (offline), a relocating index, or the lock's own URLs.

use anyhow::Result;

use super::bundle::import_bundle;
use super::plan::artifact;
use super::{say, InstallInput, Plan};
use crate::fetch::{self, Cache, Fetched, PinnedWheel};

/// The verified wheel files, in the plan's order.
pub(super) struct Fetch {
    pub wheels: Vec<Fetched>,
}

impl Fetch {
    /// How many came over the network (the rest were cached).
    pub fn downloaded(&self) -> usize {
        self.wheels
            .iter()
            .filter(|f| f.source == fetch::Source::Network)
            .count()
    }
}

/// Fetches (or imports) the plan's wheels. A wheel whose bytes differ from
/// the lock fails with [`fetch::MismatchedHash`] naming the lockfile line.
pub(super) fn fetch(plan: &Plan, input: &InstallInput, cache: &Cache) -> Result<Fetch> {
    let mut items: Vec<PinnedWheel> = plan.wheels.iter().map(artifact).collect();
    let mut fopts = input.fetch.clone();
    if let Some(dir) = &input.bundle {
        import_bundle(dir, cache, &items)?;
        fopts.offline = true;
    } else if let Some(idx) = &input.index_url {
        if !fopts.offline {
            let client = fetch::http::client(&fopts)?;
            fetch::index::relocate(&client, idx, &mut items, &fopts)?;
        }
    }
    let done = Fetch {
        wheels: fetch::fetch_all(cache, &items, &fopts)?,
    };
    let from_net = done.downloaded();
    say(
        input.verbose,
        format!(
            "{} wheels verified ({from_net} downloaded, {} from the cache)",
            done.wheels.len(),
            done.wheels.len() - from_net
        ),
    );
    Ok(done)
}
