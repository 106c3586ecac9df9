//! One result's gates x devices, indexed once: each gate id in order of
//! first appearance, each device's first gate of each id, and that cell's
//! ratio to the node's median. The grid and every device's table read it,
//! so drawing a result costs time linear in its gates however many devices
//! it names (each table used to rescan every device for every gate: a
//! thousand devices took minutes).

use greta_smoke::results::{GateResult, Report};
use std::collections::HashMap;

/// A device's cell of one gate id: its first gate of that id (an index
/// into its `gates`) and the ratio to the node's median.
#[derive(Debug, Clone, Copy)]
pub struct Cell {
    pub gate: usize,
    pub ratio: Option<f64>,
}

pub struct Node<'a> {
    /// Gate ids in order of first appearance over the devices.
    pub ids: Vec<&'a str>,
    /// Per gate id, the devices that ran it, in device order, with the cell.
    pub rows: Vec<Vec<(usize, Cell)>>,
    /// Gate id to its place in `ids`.
    index: HashMap<&'a str, usize>,
    /// Per device, a gate id's place in `ids` to the device's cell.
    by_device: Vec<HashMap<usize, Cell>>,
}

impl<'a> Node<'a> {
    pub fn of(r: &'a Report) -> Node<'a> {
        let mut index: HashMap<&'a str, usize> = HashMap::new();
        let mut ids: Vec<&'a str> = Vec::new();
        let mut rows: Vec<Vec<(usize, Cell)>> = Vec::new();
        let mut by_device = Vec::with_capacity(r.devices.len());
        for (di, d) in r.devices.iter().enumerate() {
            let mut mine: HashMap<usize, Cell> = HashMap::new();
            for (gi, g) in d.gates.iter().enumerate() {
                let id = *index.entry(g.id.as_str()).or_insert_with(|| {
                    ids.push(g.id.as_str());
                    rows.push(Vec::new());
                    ids.len() - 1
                });
                mine.entry(id).or_insert_with(|| {
                    let c = Cell {
                        gate: gi,
                        ratio: None,
                    };
                    rows[id].push((di, c));
                    c
                });
            }
            by_device.push(mine);
        }
        for (id, row) in rows.iter_mut().enumerate() {
            ratios(r, row);
            for (di, c) in row.iter() {
                if let Some(mine) = by_device[*di].get_mut(&id) {
                    mine.ratio = c.ratio;
                }
            }
        }
        Node {
            ids,
            rows,
            index,
            by_device,
        }
    }

    /// The cell of gate `id` on device `di` (none when it did not run it).
    pub fn cell(&self, di: usize, id: &str) -> Option<Cell> {
        let g = self.index.get(id)?;
        self.by_device.get(di)?.get(g).copied()
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The ratios of one gate id's cells: greta's own peer comparison when the
/// run made one, else the rate over the median of the devices' rates (as a
/// speed: a time per dispatch is inverted), when two or more have one.
fn ratios(r: &Report, row: &mut [(usize, Cell)]) {
    let gate = |di: usize, c: &Cell| &r.devices[di].gates[c.gate];
    let rate = |g: &GateResult| {
        let m = g.metrics.as_ref()?;
        m.rate
            .filter(|v| v.is_finite() && *v > 0.0)
            .map(|v| (v, m.unit.higher_is_better()))
    };
    let rates: Vec<f64> = row
        .iter()
        .filter_map(|(di, c)| rate(gate(*di, c)).map(|(v, _)| v))
        .collect();
    let enough = rates.len() >= 2;
    let med = median(rates);
    for (di, c) in row.iter_mut() {
        let g = gate(*di, c);
        c.ratio = match &g.peer {
            Some(p) => Some(p.ratio),
            None => rate(g).and_then(|(v, hib)| {
                let med = med.filter(|_| enough)?;
                Some(if hib { v / med } else { med / v })
            }),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0, 10.0]), Some(2.5));
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![]), None);
    }
}
