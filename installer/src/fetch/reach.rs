//! Before any download: every server the missing wheels come from answers.
//! Downloads run side by side, so without this a dead or unreachable
//! server failed the fetch only after its retries, while gigabytes came
//! from the others for an install that could not finish. One request per
//! server (its root, `HEAD /`: the wheels' own paths are left to the
//! download and its retries), any HTTP answer at all counts as reachable;
//! only a transport failure (no route, refused, DNS, TLS, timeout) after
//! the same retries as a download is a dead server.

use anyhow::Result;
use reqwest::blocking::Client;
use reqwest::Url;
use std::collections::BTreeMap;
use std::time::Duration;

use super::{FetchOptions, PinnedWheel};
use greta_vocab::url_secrets::redact;

/// The way around a server this machine cannot reach, for every error
/// that says so.
pub const BUNDLE: &str = "make a bundle with `greta bundle` on a machine that reaches it and install here with `greta install --bundle DIR`";

/// `Err` naming each server of `wheels` that cannot be reached, how many
/// of the wheels it holds, and what to do instead.
pub fn check(client: &Client, wheels: &[&PinnedWheel], opts: &FetchOptions) -> Result<()> {
    let mut servers: BTreeMap<String, (Url, usize)> = BTreeMap::new();
    for w in wheels {
        let Ok(url) = Url::parse(&w.url) else {
            continue; // the download names a bad URL itself
        };
        let Some(host) = url.host_str() else { continue };
        let key = format!(
            "{}://{host}:{}",
            url.scheme(),
            url.port_or_known_default().unwrap_or(0)
        );
        let mut root = url.clone();
        root.set_path("/");
        root.set_query(None);
        root.set_fragment(None);
        servers.entry(key).or_insert((root, 0)).1 += 1;
    }
    // Side by side: a healthy install pays one round trip, not one per server.
    let dead: Vec<String> = std::thread::scope(|s| {
        let tries: Vec<_> = servers
            .values()
            .map(|(root, n)| s.spawn(move || reach(client, root, opts).err().map(|e| (root, n, e))))
            .collect();
        tries
            .into_iter()
            .filter_map(|t| t.join().ok().flatten())
            .map(|(root, n, why)| {
                format!(
                    "{} cannot be reached ({why}); {n} wheel{} to fetch come{} from it",
                    redact(root.as_str()).trim_end_matches('/'),
                    if *n == 1 { "" } else { "s" },
                    if *n == 1 { "s" } else { "" },
                )
            })
            .collect()
    });
    if dead.is_empty() {
        return Ok(());
    }
    Err(super::http::Failed {
        msg: format!(
            "nothing was downloaded: {}; fetch from a mirror that serves the same files with --index-url URL, or {BUNDLE}",
            dead.join("; ")
        ),
        // The network may come back: running again can help.
        rerun_helps: true,
        mismatched: vec![],
    }
    .into())
}

/// One server's root, retried with a download's backoff; the last
/// transport failure when it never answered.
fn reach(client: &Client, root: &Url, opts: &FetchOptions) -> Result<(), String> {
    let mut last = String::new();
    for attempt in 0..opts.attempts.max(1) {
        if attempt > 0 {
            let back = opts.backoff.saturating_mul(1 << (attempt - 1).min(6));
            std::thread::sleep(back.min(Duration::from_secs(10)));
        }
        match client.head(root.clone()).send() {
            Ok(_) => return Ok(()),
            Err(e) => {
                let (why, again) = super::http::transport_failure(&e);
                last = why;
                if !again {
                    return Err(last);
                }
            }
        }
    }
    Err(format!("{last}, {} attempts", opts.attempts.max(1)))
}
