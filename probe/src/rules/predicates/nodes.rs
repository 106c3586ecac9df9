//! Device nodes: `/dev/kfd` and the DRM render nodes.

use super::{about, node_line, when, Predicate, View};

pub struct KfdNodeAbsent;
impl Predicate for KfdNodeAbsent {
    about!(
        "kfd_node_absent",
        "/dev/kfd is known not to exist",
        ["device_nodes"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        when(v.kfd().is_some_and(|n| !n.exists), || {
            vec!["/dev/kfd: does not exist".into()]
        })
    }
}

#[cfg(test)]
fn node(path: &str, exists: bool, openable: Option<bool>) -> crate::facts::Facts {
    crate::facts::Facts {
        device_nodes: vec![crate::facts::DeviceNode {
            path: path.into(),
            exists,
            mode: Some("0660".into()),
            group: Some("render".into()),
            openable,
            missing_groups: vec!["render".into()],
            open_error: None,
        }],
        ..crate::facts::Facts::default()
    }
}

#[cfg(test)]
#[test]
fn kfd_node_absent() {
    use super::tests::*;
    assert!(holds(&KfdNodeAbsent, &node("/dev/kfd", false, None)));
    assert!(!holds(&KfdNodeAbsent, &node("/dev/kfd", true, None)));
    // Not inspected is not absent.
    assert!(!holds(&KfdNodeAbsent, &crate::facts::Facts::default()));
}

pub struct KfdNotOpenable;
impl Predicate for KfdNotOpenable {
    about!(
        "kfd_not_openable",
        "/dev/kfd exists but this user cannot open it",
        ["device_nodes"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let kfd = v.kfd();
        when(
            kfd.is_some_and(|n| n.exists && n.openable == Some(false)),
            || kfd.map(node_line).into_iter().collect(),
        )
    }
}

#[cfg(test)]
#[test]
fn kfd_not_openable() {
    use super::tests::*;
    assert_eq!(
        eval(&KfdNotOpenable, &node("/dev/kfd", true, Some(false))).unwrap(),
        ["/dev/kfd: mode 0660 group render, not openable by this user (not in: render)"]
    );
    assert!(!holds(&KfdNotOpenable, &node("/dev/kfd", true, Some(true))));
    // Unknown (a capture of another user) is not "cannot".
    assert!(!holds(&KfdNotOpenable, &node("/dev/kfd", true, None)));
}

pub struct RenderNodeNotOpenable;
impl Predicate for RenderNodeNotOpenable {
    about!(
        "render_node_not_openable",
        "a /dev/dri/renderD* node exists but this user cannot open it",
        ["device_nodes"]
    );
    fn eval(&self, v: &View) -> Option<Vec<String>> {
        let render: Vec<String> = v
            .facts
            .device_nodes
            .iter()
            .filter(|n| {
                n.path.starts_with("/dev/dri/renderD") && n.exists && n.openable == Some(false)
            })
            .map(node_line)
            .collect();
        when(!render.is_empty(), || render)
    }
}

#[cfg(test)]
#[test]
fn render_node_not_openable() {
    use super::tests::*;
    let f = node("/dev/dri/renderD128", true, Some(false));
    assert_eq!(eval(&RenderNodeNotOpenable, &f).unwrap().len(), 1);
    assert!(!holds(
        &RenderNodeNotOpenable,
        &node("/dev/kfd", true, Some(false))
    ));
}
