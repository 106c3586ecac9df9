//! `/dev/kfd` and `/dev/dri/renderD*`: present, mode, owning group, whether
//! *this* user can open them and which group is missing; container hints.

use super::{scanned, signal};
use crate::facts::{DeviceNode, Facts};
use crate::root::{Identity, NodeMeta, NodeState, Root};

/// Whether the permission bits let `id` open the node read-write.
pub fn mode_allows_rw(meta: &NodeMeta, id: &Identity) -> bool {
    if id.uid == 0 {
        return true;
    }
    let bits = if meta.uid == id.uid {
        (meta.mode >> 6) & 0o7
    } else if id.groups.contains(&meta.gid) {
        (meta.mode >> 3) & 0o7
    } else {
        meta.mode & 0o7
    };
    bits & 0o6 == 0o6
}

/// The node's fact, or Err(why) when its state is unknown (a capture
/// whose `dev-nodes` could not be read): no fact then, since "absent"
/// would be a false `kfd.missing`.
fn node_fact(root: &Root, path: &str, f: &mut Facts) -> Result<DeviceNode, String> {
    let meta = match root.node_state(path) {
        NodeState::Present(m) => m,
        NodeState::Absent => {
            return Ok(DeviceNode {
                path: path.into(),
                exists: false,
                ..DeviceNode::default()
            })
        }
        NodeState::Unknown(why) => return Err(why),
    };
    let group = root.group_name(meta.gid);
    let id = root.identity();
    let openable = match (&meta.open, id) {
        (Some(r), _) => Some(r.is_ok()),
        (None, Some(id)) => Some(mode_allows_rw(&meta, id)),
        (None, None) => None,
    };
    let open_error = meta.open.as_ref().and_then(|r| r.as_ref().err().cloned());
    let mut missing_groups = Vec::new();
    if openable == Some(false) {
        if let Some(id) = id {
            let group_grants = (meta.mode >> 3) & 0o6 == 0o6;
            if group_grants && !id.groups.contains(&meta.gid) {
                let gname = group.clone().unwrap_or_else(|| meta.gid.to_string());
                missing_groups.push(gname.clone());
                // Listed in /etc/group but not in this process: joined the
                // group without logging in again.
                if let Some(user) = &id.user {
                    if root
                        .groups_of(meta.gid)
                        .any(|g| g.members.iter().any(|m| m == user))
                    {
                        signal(
                            f,
                            "device-group-stale-login",
                            path,
                            &format!("{user} is in group {gname} in /etc/group, but this login session does not have it (log out and in, or `newgrp {gname}`)"),
                        );
                    }
                }
            } else if mode_allows_rw(&meta, id) && open_error.as_deref() == Some("EPERM") {
                // Bits allow it, the kernel still says no: device cgroup / LSM.
                signal(
                    f,
                    "device-open-eperm",
                    path,
                    &format!("open({path}) failed with EPERM although its mode allows it (container device cgroup or security module)"),
                );
            }
        }
    }
    Ok(DeviceNode {
        path: path.into(),
        exists: true,
        mode: Some(format!("{:04o}", meta.mode)),
        group,
        openable,
        missing_groups,
        open_error,
    })
}

/// Names a container runtime if there are signs of one.
pub fn container_hint(root: &Root) -> Option<String> {
    if root.exists("/.dockerenv") {
        return Some("docker (/.dockerenv)".into());
    }
    if root.exists("/run/.containerenv") {
        return Some("podman (/run/.containerenv)".into());
    }
    let cg = root.read("/proc/1/cgroup").unwrap_or_default();
    for (needle, name) in [
        ("kubepods", "kubernetes"),
        ("docker", "docker"),
        ("libpod", "podman"),
        ("containerd", "containerd"),
        ("lxc", "lxc"),
    ] {
        if cg.contains(needle) {
            return Some(format!("{name} (/proc/1/cgroup)"));
        }
    }
    None
}

pub fn collect(root: &Root, f: &mut Facts) -> String {
    let mut paths = vec!["/dev/kfd".to_string()];
    paths.extend(root.list_nodes("/dev/dri", "renderD"));
    let mut nodes = Vec::new();
    let mut unknown = Vec::new();
    for p in &paths {
        match node_fact(root, p, f) {
            Ok(n) => nodes.push(n),
            Err(why) => unknown.push(format!("{p} unknown ({why})")),
        }
    }
    f.device_nodes = nodes;
    f.container = container_hint(root);
    // Only a table read whole makes an absent node a fact.
    if unknown.is_empty() {
        scanned(f, "device-nodes");
    }
    let id_unknown = root.identity_unknown();
    let mut parts: Vec<String> = f
        .device_nodes
        .iter()
        .map(|n| {
            let state = match (n.exists, n.openable) {
                (false, _) => "missing".to_string(),
                (true, Some(true)) => "ok".to_string(),
                (true, Some(false)) if !n.missing_groups.is_empty() => {
                    format!("not openable, need group {}", n.missing_groups.join("/"))
                }
                (true, Some(false)) => format!(
                    "not openable{}",
                    n.open_error
                        .as_ref()
                        .map(|e| format!(" ({e})"))
                        .unwrap_or_default()
                ),
                (true, None) => match &id_unknown {
                    Some(u) => format!("present, openable unknown ({u})"),
                    None => "present".to_string(),
                },
            };
            format!("{} {state}", n.path)
        })
        .collect();
    parts.extend(unknown);
    let mut s = parts.join(", ");
    if let Some(c) = &f.container {
        s.push_str(&format!("; container: {c}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(mode: u32, uid: u32, gid: u32) -> NodeMeta {
        NodeMeta {
            path: "/dev/kfd".into(),
            kind: 'c',
            mode,
            uid,
            gid,
            open: None,
        }
    }

    #[test]
    fn permission_bits_follow_owner_group_other() {
        let user = Identity {
            uid: 1000,
            user: Some("ann".into()),
            gid: 1000,
            groups: vec![1000, 44],
        };
        assert!(!mode_allows_rw(&meta(0o660, 0, 109), &user));
        assert!(mode_allows_rw(&meta(0o660, 0, 44), &user));
        assert!(mode_allows_rw(&meta(0o666, 0, 109), &user));
        assert!(mode_allows_rw(&meta(0o600, 1000, 109), &user));
        assert!(!mode_allows_rw(&meta(0o640, 0, 44), &user));
        let root = Identity::default();
        assert!(mode_allows_rw(&meta(0o000, 5, 5), &root));
    }
}
