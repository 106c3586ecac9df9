//! Who is asking (the `id` of the user doctor runs as) and the machine's
//! groups: what decides whether a device node opens.

use super::{read_capped, GroupTable, Root};
use std::collections::BTreeMap;
use std::path::Path;

/// Who is asking: what decides whether a device node opens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub user: Option<String>,
    pub gid: u32,
    /// Supplementary groups of the process (what the kernel checks), with
    /// the primary gid included.
    pub groups: Vec<u32>,
}

impl Identity {
    /// Parses the output of `id`: `uid=1000(ann) gid=1000(ann) groups=1000(ann),44(video)`.
    pub fn parse_id(text: &str) -> Option<Identity> {
        fn num(s: &str) -> Option<(u32, Option<String>)> {
            let (n, rest) = match s.find('(') {
                Some(i) => (&s[..i], Some(&s[i + 1..])),
                None => (s, None),
            };
            let name = rest.and_then(|r| r.strip_suffix(')')).map(str::to_string);
            Some((n.trim().parse().ok()?, name))
        }
        let mut id = Identity::default();
        let mut have_uid = false;
        for word in text.split_whitespace() {
            if let Some(v) = word.strip_prefix("uid=") {
                let (uid, name) = num(v)?;
                id.uid = uid;
                id.user = name;
                have_uid = true;
            } else if let Some(v) = word.strip_prefix("gid=") {
                id.gid = num(v)?.0;
            } else if let Some(v) = word.strip_prefix("groups=") {
                for g in v.split(',') {
                    if let Some((n, _)) = num(g) {
                        id.groups.push(n);
                    }
                }
            }
        }
        if !id.groups.contains(&id.gid) {
            id.groups.push(id.gid);
        }
        have_uid.then_some(id)
    }

    /// The `id` line for this identity, using `group_name` for the names.
    pub fn to_id_line(&self, group_name: impl Fn(u32) -> Option<String>) -> String {
        let n = |g: u32| match group_name(g) {
            Some(name) => format!("{g}({name})"),
            None => g.to_string(),
        };
        let user = match &self.user {
            Some(u) => format!("{}({u})", self.uid),
            None => self.uid.to_string(),
        };
        let groups: Vec<String> = self.groups.iter().map(|&g| n(g)).collect();
        format!("uid={user} gid={} groups={}", n(self.gid), groups.join(","))
    }
}

impl Root {
    /// Name of a group id from the root's `/etc/group`.
    pub fn group_name(&self, gid: u32) -> Option<String> {
        self.groups_of(gid).next().map(|g| g.name.clone())
    }

    /// Entries of the root's `/etc/group`.
    pub fn groups(&self) -> &[GroupEntry] {
        &self.group_table().0
    }

    /// The `/etc/group` entries of `gid` (usually one; the first names it).
    pub fn groups_of(&self, gid: u32) -> impl Iterator<Item = &GroupEntry> {
        let (all, by_gid) = self.group_table();
        by_gid.get(&gid).into_iter().flatten().map(|&i| &all[i])
    }

    fn group_table(&self) -> &GroupTable {
        self.groups.get_or_init(|| {
            let all: Vec<GroupEntry> = self
                .read("/etc/group")
                .map(|t| t.lines().filter_map(GroupEntry::parse).collect())
                .unwrap_or_default();
            let mut by_gid: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
            for (i, g) in all.iter().enumerate() {
                by_gid.entry(g.gid).or_default().push(i);
            }
            (all, by_gid)
        })
    }
}

/// One line of `/etc/group`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupEntry {
    pub name: String,
    pub gid: u32,
    pub members: Vec<String>,
}

impl GroupEntry {
    pub fn parse(line: &str) -> Option<GroupEntry> {
        let mut f = line.split(':');
        let name = f.next()?.trim().to_string();
        let _pw = f.next()?;
        let gid = f.next()?.trim().parse().ok()?;
        let members = f
            .next()
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_string)
            .collect();
        (!name.is_empty() && !name.starts_with('#')).then_some(GroupEntry { name, gid, members })
    }
}

pub(super) fn live_identity() -> Identity {
    // SAFETY: getuid/getgid take no arguments and never fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // SAFETY: getgroups(0, NULL) only returns the count; the second call gets
    // a buffer of exactly that many gid_t, and the count it returns (never
    // more than the size given) bounds what is kept.
    let mut groups = unsafe {
        let n = libc::getgroups(0, std::ptr::null_mut());
        let mut v: Vec<libc::gid_t> = vec![0; n.max(0) as usize];
        let got = libc::getgroups(n, v.as_mut_ptr());
        v.truncate(got.max(0) as usize);
        v
    };
    if !groups.contains(&gid) {
        groups.push(gid);
    }
    groups.sort_unstable();
    groups.dedup();
    let user = read_capped(Path::new("/etc/passwd")).ok().and_then(|t| {
        t.lines().find_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let uid_f = f.nth(1)?;
            (uid_f.parse::<u32>().ok()? == uid).then(|| name.to_string())
        })
    });
    Identity {
        uid,
        user,
        gid,
        groups,
    }
}
