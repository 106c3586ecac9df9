//! A fixed sequence of ops over shared buffers (a "graph"): what a
//! transformer layer is to the device. The backends record it
//! once and replay it (`greta-runtime`'s `Backend::run_graph`);
//! [`Graph::reference`] runs the same steps through each op's f64 reference
//! on the host, storing each result in its slot's element type as a device
//! does.

use crate::{reference, DType, HostBuf, Op};
use serde::{Deserialize, Serialize};

/// One device buffer of a graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Slot {
    /// What it holds (errors and reports name it).
    pub name: String,
    pub dtype: DType,
    pub len: usize,
}

/// One op of a graph: `bind[i]` is the slot bound to the op's buffer `i`
/// (its inputs, then its outputs, in the op's binding order).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub op: Op,
    pub bind: Vec<usize>,
}

/// The buffers and the ops, in the order they run (each step sees every
/// earlier step's writes).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct Graph {
    pub slots: Vec<Slot>,
    pub steps: Vec<Step>,
}

impl Graph {
    /// Adds a slot and returns its index.
    pub fn slot(&mut self, name: &str, dtype: DType, len: usize) -> usize {
        self.slots.push(Slot {
            name: name.to_string(),
            dtype,
            len,
        });
        self.slots.len() - 1
    }

    /// Appends a step.
    pub fn step(&mut self, op: Op, bind: &[usize]) {
        self.steps.push(Step {
            op,
            bind: bind.to_vec(),
        });
    }

    /// Checks every step against its op's buffer contract: shape rules, one
    /// slot per buffer, each slot of the buffer's type and length, and no
    /// slot bound twice in one step (a kernel that reads what it writes
    /// elsewhere races; a read-write output is one binding).
    pub fn validate(&self) -> Result<(), String> {
        if self.steps.is_empty() {
            return Err("a graph needs at least one step".into());
        }
        for (i, st) in self.steps.iter().enumerate() {
            let at = |m: String| format!("step {i} ({}): {m}", st.op);
            st.op.validate().map_err(|e| at(e.to_string()))?;
            let specs: Vec<_> = st.op.inputs().into_iter().chain(st.op.outputs()).collect();
            if specs.len() != st.bind.len() {
                return Err(at(format!(
                    "binds {} slots, the op has {} buffers",
                    st.bind.len(),
                    specs.len()
                )));
            }
            for (k, (spec, &s)) in specs.iter().zip(&st.bind).enumerate() {
                let slot = self.slots.get(s).ok_or_else(|| {
                    at(format!(
                        "buffer {} names slot {s}, which does not exist",
                        spec.name
                    ))
                })?;
                if slot.dtype != spec.dtype || slot.len != spec.len {
                    return Err(at(format!(
                        "buffer {} must be {} x {}, slot {} is {} x {}",
                        spec.name, spec.len, spec.dtype, slot.name, slot.len, slot.dtype
                    )));
                }
                if st.bind[..k].contains(&s) {
                    return Err(at(format!("slot {} is bound twice", slot.name)));
                }
            }
        }
        Ok(())
    }

    /// Bytes of every slot (what the device must hold).
    pub fn bytes(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| (s.len as u64).saturating_mul(s.dtype.size() as u64))
            .fold(0, u64::saturating_add)
    }
}

impl Graph {
    /// Runs every step through its op's f64 reference on `buffers` (one per
    /// slot), each output rounded to its slot's type as the device stores
    /// it: what the device's replay must reproduce, step by step.
    pub fn reference(&self, buffers: &mut [HostBuf]) -> Result<(), String> {
        self.validate()?;
        if buffers.len() != self.slots.len() {
            return Err(format!(
                "the graph has {} slots, {} buffers were given",
                self.slots.len(),
                buffers.len()
            ));
        }
        for (i, st) in self.steps.iter().enumerate() {
            let n_in = st.op.inputs().len();
            let ins: Vec<HostBuf> = st.bind[..n_in]
                .iter()
                .map(|&s| buffers[s].clone())
                .collect();
            let prior: Vec<HostBuf> = st.bind[n_in..]
                .iter()
                .map(|&s| buffers[s].clone())
                .collect();
            let outs = reference(&st.op, &ins, &prior)
                .map_err(|e| format!("step {i} ({}): {e}", st.op))?;
            for (&s, v) in st.bind[n_in..].iter().zip(outs) {
                buffers[s] = HostBuf::from_f64(buffers[s].dtype(), &v);
            }
        }
        Ok(())
    }
}

/// A composite op's graph and where its buffers live in it: for each of
/// the op's buffers (inputs, then outputs), the slot and the element offset
/// of its range there (the cached K/V rows are the first rows of a cache
/// slot, the new rows the last).
#[derive(Clone, Debug, PartialEq)]
pub struct Composite {
    pub graph: Graph,
    pub bind: Vec<(usize, usize)>,
    /// Tokens one call processes (a layer's unit of work: what a tokens/s
    /// estimate counts).
    pub tokens: usize,
}

impl Composite {
    /// The slots' initial content: each op input copied into its range,
    /// everything else poisoned (an element no step writes fails a check).
    /// `None` when an input does not fit its range.
    pub fn slot_buffers(&self, inputs: &[HostBuf]) -> Result<Vec<HostBuf>, String> {
        let mut bufs: Vec<HostBuf> = self
            .graph
            .slots
            .iter()
            .map(|s| HostBuf::poisoned(s.dtype, s.len))
            .collect();
        for (i, (b, &(slot, off))) in inputs.iter().zip(&self.bind).enumerate() {
            let dst = bufs
                .get_mut(slot)
                .ok_or_else(|| format!("buffer {i} names slot {slot}, which does not exist"))?;
            if dst.dtype() != b.dtype()
                || off.checked_add(b.len()).is_none_or(|end| end > dst.len())
            {
                return Err(format!(
                    "buffer {i} ({} x {}) does not fit slot {slot} at {off}",
                    b.len(),
                    b.dtype()
                ));
            }
            let at = off * b.dtype().size();
            let src = b.as_bytes();
            dst.as_bytes_mut()[at..at + src.len()].copy_from_slice(src);
        }
        Ok(bufs)
    }

    /// Copies each op output's range out of the slots (`n_in` inputs come
    /// before the outputs in [`Composite::bind`]).
    pub fn take_outputs(
        &self,
        n_in: usize,
        slots: &[HostBuf],
        outputs: &mut [HostBuf],
    ) -> Result<(), String> {
        for (i, (o, &(slot, off))) in outputs
            .iter_mut()
            .zip(&self.bind[n_in.min(self.bind.len())..])
            .enumerate()
        {
            let s = slots
                .get(slot)
                .ok_or_else(|| format!("output {i}: no slot {slot}"))?;
            if s.dtype() != o.dtype() || off.checked_add(o.len()).is_none_or(|end| end > s.len()) {
                return Err(format!("output {i} does not fit slot {slot} at {off}"));
            }
            let at = off * o.dtype().size();
            let len = o.byte_len();
            o.as_bytes_mut()
                .copy_from_slice(&s.as_bytes()[at..at + len]);
        }
        Ok(())
    }

    /// The slots the op's outputs live in (what a backend reads back).
    pub fn output_slots(&self, n_in: usize) -> Vec<usize> {
        let mut v: Vec<usize> = self.bind[n_in.min(self.bind.len())..]
            .iter()
            .map(|&(s, _)| s)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

#[cfg(test)]
mod tests;
