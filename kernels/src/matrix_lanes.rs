//! Lane layouts of the matrix instructions `gemm_f16.hip` steps with, and
//! the tiling it wraps around them, written once: greta-kernels' build
//! script turns this table into `matrix_lanes.h` (the `#define`s the kernel
//! indexes with, compiled by hiprtc/NVRTC), and the tests below run a CPU
//! model of each instruction through the same table and the same tiling to
//! reproduce a reference GEMM. The AMD instructions cannot run where greta
//! is developed; this is how their indexing is tested.
//!
//! A layout says, for lane `l` of a wave and element `e` of that lane's
//! operand vector (halves for A and B, f32 for the accumulator C/D), which
//! matrix element it holds. Each coordinate is a sum of terms
//! `((x / div) % modulo) * mul` with `x` the lane or the element index.
//!
//! Sources, cited per instruction below:
//! - NVIDIA PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point
//!   type" (section 9.7.14.5.8 in PTX ISA 8.x): `groupID = laneid >> 2`,
//!   `threadID_in_group = laneid % 4`; A row `groupID` (+8 for a2,a3,a6,a7),
//!   column `threadID_in_group * 2 + (i & 1)` (+8 for i >= 4); B row
//!   `threadID_in_group * 2 + (i & 1)` (+8 for i >= 2), column `groupID`; C
//!   row `groupID` (+8 for c2,c3), column `threadID_in_group * 2 + (i & 1)`.
//! - AMD Instinct MI200 / MI300 ISA reference guides ("Dependent and
//!   independent MFMA operand layout") as tabulated by AMD's Matrix
//!   Instruction Calculator (github.com/ROCm/amd_matrix_instruction_calculator,
//!   `--architecture cdna2|cdna3 --instruction v_mfma_f32_16x16x16f16
//!   --detail-instruction`): `A[i][k]` in lane `16 * floor(k / 4) + i`,
//!   element `k % 4`; `B[k][j]` in lane `16 * floor(k / 4) + j`; `D[i][j]` in
//!   lane `16 * floor(i / 4) + j`, register `i % 4`. LLVM's
//!   `__builtin_amdgcn_mfma_f32_16x16x16f16(v4f16, v4f16, v4f32, cbsz, abid,
//!   blgp)` (clang BuiltinsAMDGPU.def, gfx908+, kept on gfx90a, gfx94x and
//!   gfx950).
//! - AMD RDNA3 ISA guide, section 7.9 "Wave Matrix Multiply Accumulate", and
//!   the calculator (`--architecture rdna3 --instruction
//!   v_wmma_f32_16x16x16_f16 --wavefront 32`): `A[i][k]` in lanes `i` and
//!   `i + 16` (both halves of the wave hold the same A and B), element `k`;
//!   `D[i][j]` in lane `16 * (i % 2) + j`, register `floor(i / 2)`. LLVM's
//!   `__builtin_amdgcn_wmma_f32_16x16x16_f16_w32(v16f16, v16f16, v8f32)`.
//! - AMD RDNA4 ISA guide (WMMA section) and the calculator (`--architecture
//!   rdna4 ... --wavefront 32`): `A[i][k]` in lane `16 * (floor(k / 4) % 2) +
//!   i`, element `4 * floor(k / 8) + k % 4`; `D[i][j]` in lane
//!   `16 * floor(i / 8) + j`, register `i % 8`. LLVM's
//!   `__builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(v8f16, v8f16, v8f32)`.
//!
//! This file is also compiled into the build script (`#[path]`), so it uses
//! nothing but `core`/`std`.

/// What a coordinate term reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Var {
    Lane,
    Elem,
}

/// `((x / div) % modulo) * mul`, `modulo == 0` meaning no modulo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Term {
    pub var: Var,
    pub div: u32,
    pub modulo: u32,
    pub mul: u32,
}

const fn lane(div: u32, modulo: u32, mul: u32) -> Term {
    Term {
        var: Var::Lane,
        div,
        modulo,
        mul,
    }
}

const fn elem(div: u32, modulo: u32, mul: u32) -> Term {
    Term {
        var: Var::Elem,
        div,
        modulo,
        mul,
    }
}

/// A matrix coordinate as a function of (lane, element).
#[derive(Clone, Copy, Debug)]
pub struct Coord(pub &'static [Term]);

impl Coord {
    pub fn eval(&self, lane: u32, elem: u32) -> u32 {
        self.0
            .iter()
            .map(|t| {
                let x = match t.var {
                    Var::Lane => lane,
                    Var::Elem => elem,
                } / t.div;
                let x = if t.modulo == 0 { x } else { x % t.modulo };
                x * t.mul
            })
            .sum()
    }

    /// The same function as a C expression of the macro parameters `l`, `e`.
    pub fn c_expr(&self) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|t| {
                let v = match t.var {
                    Var::Lane => "(l)",
                    Var::Elem => "(e)",
                };
                let mut s = if t.div == 1 {
                    v.to_string()
                } else {
                    format!("({v} / {}u)", t.div)
                };
                if t.modulo != 0 {
                    s = format!("({s} % {}u)", t.modulo);
                }
                if t.mul != 1 {
                    s = format!("{s} * {}u", t.mul);
                }
                s
            })
            .collect();
        if parts.is_empty() {
            "0u".into()
        } else {
            format!("({})", parts.join(" + "))
        }
    }
}

/// One matrix instruction: its shape, operand and result lane layouts, and
/// the tiling greta's gemm_f16 kernel puts around it.
#[derive(Clone, Copy, Debug)]
pub struct MatrixInstr {
    /// Macro prefix in `matrix_lanes.h` (`GRETA_<NAME>_...`).
    pub name: &'static str,
    /// The ISA instruction and the compiler builtin / PTX that issues it.
    pub instruction: &'static str,
    /// Which targets use it.
    pub targets: &'static str,
    /// Lanes per wave (warp).
    pub wave: u32,
    /// D (m x n) += A (m x k) * B (k x n).
    pub m: u32,
    pub n: u32,
    pub k: u32,
    /// Elements per lane of A, B (f16) and C/D (f32).
    pub a_elems: u32,
    pub b_elems: u32,
    pub c_elems: u32,
    pub a_row: Coord,
    pub a_k: Coord,
    pub b_col: Coord,
    pub b_k: Coord,
    pub c_row: Coord,
    pub c_col: Coord,
    /// Threads of a block, and its waves along m and n (their product is
    /// threads / wave).
    pub threads: u32,
    pub waves_m: u32,
    pub waves_n: u32,
    /// Shared-memory stages of the A and B tiles: 2 lets the next k step
    /// be stored while this one is read (one barrier per step); 1 halves
    /// the block's shared memory and needs a second barrier per step, after
    /// the reads, before the next store ([`crate::matrix_model`] checks
    /// either schedule for races).
    pub stages: u32,
}

/// Threads per block of gemm_f16 on HIP (every AMD path and the scalar
/// fallback); on CUDA a block has [`MMA_SYNC`]'s `threads`.
pub const HIP_THREADS: u32 = 256;
/// Block tile of C (BM x BN) and the k depth staged per step (BK halves).
pub const BM: u32 = 128;
pub const BN: u32 = 128;
pub const BK: u32 = 32;
/// Shared-memory row pitch in halves (GRETA_F16_PITCH): BK plus 8, so the
/// 8 rows a fragment read touches start 4 banks apart and the 32-bit pair
/// reads of mma.sync's layout hit 32 distinct banks.
pub const PITCH: u32 = BK + 8;

/// NVIDIA `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32` (sm_80+).
pub const MMA_SYNC: MatrixInstr = MatrixInstr {
    name: "MMA_SYNC",
    instruction: "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 (PTX, inline asm)",
    targets: "NVIDIA sm_80 and newer",
    wave: 32,
    m: 16,
    n: 8,
    k: 16,
    a_elems: 8,
    b_elems: 4,
    c_elems: 4,
    a_row: Coord(&[lane(4, 0, 1), elem(2, 2, 8)]),
    a_k: Coord(&[lane(1, 4, 2), elem(1, 2, 1), elem(4, 0, 8)]),
    b_col: Coord(&[lane(4, 0, 1)]),
    b_k: Coord(&[lane(1, 4, 2), elem(1, 2, 1), elem(2, 0, 8)]),
    c_row: Coord(&[lane(4, 0, 1), elem(2, 0, 8)]),
    c_col: Coord(&[lane(1, 4, 2), elem(1, 2, 1)]),
    // Four warps of 64 x 64 (32 m16n8k16 tiles each): fewer shared-memory
    // bytes per tensor-core operation than eight warps of 64 x 32, and two
    // blocks fit an SM.
    threads: 128,
    waves_m: 2,
    waves_n: 2,
    // The cp.async pipeline is written for two stages.
    stages: 2,
};

/// CDNA `v_mfma_f32_16x16x16f16` (wave64).
pub const MFMA16: MatrixInstr = MatrixInstr {
    name: "MFMA16",
    instruction: "v_mfma_f32_16x16x16f16 (__builtin_amdgcn_mfma_f32_16x16x16f16)",
    targets: "gfx90a, gfx940, gfx941, gfx942, gfx950",
    wave: 64,
    m: 16,
    n: 16,
    k: 16,
    a_elems: 4,
    b_elems: 4,
    c_elems: 4,
    a_row: Coord(&[lane(1, 16, 1)]),
    a_k: Coord(&[lane(16, 0, 4), elem(1, 0, 1)]),
    b_col: Coord(&[lane(1, 16, 1)]),
    b_k: Coord(&[lane(16, 0, 4), elem(1, 0, 1)]),
    c_row: Coord(&[lane(16, 0, 4), elem(1, 0, 1)]),
    c_col: Coord(&[lane(1, 16, 1)]),
    threads: HIP_THREADS,
    waves_m: 2,
    waves_n: 2,
    // One stage: 20 KiB of LDS per block instead of 40, so that three
    // blocks (the registers allow three waves per SIMD) share a CDNA 2/3
    // compute unit's 64 KiB, where two stages left one block, one wave per
    // SIMD, with nothing to hide a barrier or an LDS read behind.
    stages: 1,
};

/// RDNA3 `v_wmma_f32_16x16x16_f16` (wave32).
pub const WMMA11: MatrixInstr = MatrixInstr {
    name: "WMMA11",
    instruction: "v_wmma_f32_16x16x16_f16 (__builtin_amdgcn_wmma_f32_16x16x16_f16_w32)",
    targets: "gfx1100, gfx1101, gfx1102, gfx1103, gfx1150, gfx1151, gfx1152, gfx1153",
    wave: 32,
    m: 16,
    n: 16,
    k: 16,
    a_elems: 16,
    b_elems: 16,
    c_elems: 8,
    a_row: Coord(&[lane(1, 16, 1)]),
    a_k: Coord(&[elem(1, 0, 1)]),
    b_col: Coord(&[lane(1, 16, 1)]),
    b_k: Coord(&[elem(1, 0, 1)]),
    c_row: Coord(&[elem(1, 0, 2), lane(16, 0, 1)]),
    c_col: Coord(&[lane(1, 16, 1)]),
    threads: HIP_THREADS,
    waves_m: 2,
    waves_n: 4,
    stages: 2,
};

/// RDNA4 `v_wmma_f32_16x16x16_f16` (wave32, the gfx12 encoding and layout).
pub const WMMA12: MatrixInstr = MatrixInstr {
    name: "WMMA12",
    instruction: "v_wmma_f32_16x16x16_f16 (__builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12)",
    targets: "gfx1200, gfx1201",
    wave: 32,
    m: 16,
    n: 16,
    k: 16,
    a_elems: 8,
    b_elems: 8,
    c_elems: 8,
    a_row: Coord(&[lane(1, 16, 1)]),
    a_k: Coord(&[elem(4, 0, 8), lane(16, 0, 4), elem(1, 4, 1)]),
    b_col: Coord(&[lane(1, 16, 1)]),
    b_k: Coord(&[elem(4, 0, 8), lane(16, 0, 4), elem(1, 4, 1)]),
    c_row: Coord(&[lane(16, 0, 8), elem(1, 0, 1)]),
    c_col: Coord(&[lane(1, 16, 1)]),
    threads: HIP_THREADS,
    waves_m: 2,
    waves_n: 4,
    stages: 2,
};

/// Every instruction gemm_f16 can step with.
pub const INSTRS: &[MatrixInstr] = &[MMA_SYNC, MFMA16, WMMA11, WMMA12];

/// attn_prefill_f16's matrix-unit path on AMD around one of the
/// instructions above (kernels/hip/attn_prefill_f16.hip, the CPU model in
/// `attn_mfma_model.rs`): each wave owns `queries` query rows, the block
/// stages `keys` keys of K (key-major) and of V (transposed, dim-major) in
/// one shared-memory stage, and both products run with the queries along
/// n: S^T = K Q^T, then O^T = V^T P^T, where the accumulator of S^T is the
/// B operand of P^T lane for lane, so P never leaves registers.
#[derive(Clone, Copy, Debug)]
pub struct AttnTiling {
    /// Macro prefix in `matrix_lanes.h` (`GRETA_<NAME>_...`).
    pub name: &'static str,
    pub instr: MatrixInstr,
    /// Threads of a block (GRETA_PRE_THREADS, ATTN_THREADS of the launch).
    pub threads: u32,
    /// Keys per shared-memory tile.
    pub keys: u32,
    /// Query rows per wave.
    pub queries: u32,
    /// The head dimensions the path serves (one instantiation each); the
    /// others take the f32 FMA path.
    pub head_dims: &'static [u32],
}

/// CDNA: MFMA16, two waves of 64 per block, 32 query rows each (the
/// block's 64), 32 keys per tile.
pub const ATTN_MFMA16: AttnTiling = AttnTiling {
    name: "ATTN_MFMA16",
    instr: MFMA16,
    threads: 128,
    keys: 32,
    queries: 32,
    head_dims: &[64, 128],
};

/// Every attention tiling.
pub const ATTN_TILINGS: &[AttnTiling] = &[ATTN_MFMA16];

impl AttnTiling {
    /// Matrix instructions one wave issues per key tile at `head_dim`:
    /// S^T (keys x queries, head_dim deep) and O^T (head_dim x queries,
    /// keys deep).
    pub fn instrs_per_tile(&self, head_dim: u32) -> u32 {
        let i = &self.instr;
        let s = (self.keys / i.m) * (self.queries / i.n) * (head_dim / i.k);
        let o = (head_dim / i.m) * (self.queries / i.n) * (self.keys / i.k);
        s + o
    }

    /// Matrix instructions in the kernel's code: one key tile per head_dim
    /// instantiation (the key loop is not unrolled: its trip count is the
    /// causal length).
    pub fn instrs_in_code(&self) -> u32 {
        self.head_dims
            .iter()
            .map(|&hd| self.instrs_per_tile(hd))
            .sum()
    }
}

/// How many `name`'s instructions a kernel's code holds: one BK step of
/// gemm_f16's tiling for an instruction of [`INSTRS`], every key tile's
/// instructions for an attention tiling of [`ATTN_TILINGS`].
pub fn instrs_in_code(name: &str) -> Option<u32> {
    INSTRS
        .iter()
        .find(|i| i.name == name)
        .map(MatrixInstr::instrs_per_step)
        .or_else(|| {
            ATTN_TILINGS
                .iter()
                .find(|a| a.name == name)
                .map(AttnTiling::instrs_in_code)
        })
}

impl MatrixInstr {
    /// Rows (m) and columns (n) of C one wave computes.
    pub fn wave_tile(&self) -> (u32, u32) {
        (BM / self.waves_m, BN / self.waves_n)
    }

    /// Instruction tiles per wave along m and n.
    pub fn frags(&self) -> (u32, u32) {
        let (wm, wn) = self.wave_tile();
        (wm / self.m, wn / self.n)
    }

    /// Where wave `w` of a block starts in the block tile (row, column):
    /// waves are numbered along n first. `GRETA_<NAME>_WAVE_ROW/COL`.
    pub fn wave_origin(&self, w: u32) -> (u32, u32) {
        let (wm, wn) = self.wave_tile();
        ((w / self.waves_n) * wm, (w % self.waves_n) * wn)
    }

    /// Matrix instructions one wave issues per BK step: the count of them
    /// in the kernel's code, whose k loop is one BK step unrolled.
    pub fn instrs_per_step(&self) -> u32 {
        let (fm, fnn) = self.frags();
        fm * fnn * (BK / self.k)
    }
}

/// The text of `matrix_lanes.h`. The tiling constants are `#ifndef`-guarded
/// so a measurement build can try others with `-D` (the layouts are not);
/// the wave tiles and fragment counts follow from them.
pub fn header() -> String {
    let mut s = String::from(
        "// Generated by greta-kernels' build script from kernels/src/matrix_lanes.rs\n\
         // (lane layouts of the matrix instructions, with their sources, and the\n\
         // gemm_f16 tiling around them): edit that file, not this text.\n",
    );
    let guarded = |s: &mut String, name: &str, v: u32| {
        s.push_str(&format!("#ifndef {name}\n#define {name} {v}\n#endif\n"));
    };
    guarded(&mut s, "GRETA_F16_HIP_THREADS", HIP_THREADS);
    guarded(&mut s, "GRETA_F16_BM", BM);
    guarded(&mut s, "GRETA_F16_BN", BN);
    guarded(&mut s, "GRETA_F16_BK", BK);
    s.push_str("#ifndef GRETA_F16_PITCH\n#define GRETA_F16_PITCH (GRETA_F16_BK + 8)\n#endif\n");
    for i in INSTRS {
        let p = format!("GRETA_{}", i.name);
        s.push_str(&format!("// {}: {}\n", i.instruction, i.targets));
        for (name, v) in [
            ("WAVE", i.wave),
            ("M", i.m),
            ("N", i.n),
            ("K", i.k),
            ("A_ELEMS", i.a_elems),
            ("B_ELEMS", i.b_elems),
            ("C_ELEMS", i.c_elems),
        ] {
            s.push_str(&format!("#define {p}_{name} {v}\n"));
        }
        guarded(&mut s, &format!("{p}_THREADS"), i.threads);
        guarded(&mut s, &format!("{p}_WAVES_M"), i.waves_m);
        guarded(&mut s, &format!("{p}_WAVES_N"), i.waves_n);
        guarded(&mut s, &format!("{p}_STAGES"), i.stages);
        s.push_str(&format!(
            "#define {p}_WAVE_TILE_M (GRETA_F16_BM / {p}_WAVES_M)\n\
             #define {p}_WAVE_TILE_N (GRETA_F16_BN / {p}_WAVES_N)\n\
             #define {p}_FRAGS_M ({p}_WAVE_TILE_M / {p}_M)\n\
             #define {p}_FRAGS_N ({p}_WAVE_TILE_N / {p}_N)\n"
        ));
        for (name, c) in [
            ("A_ROW", i.a_row),
            ("A_K", i.a_k),
            ("B_COL", i.b_col),
            ("B_K", i.b_k),
            ("C_ROW", i.c_row),
            ("C_COL", i.c_col),
        ] {
            s.push_str(&format!("#define {p}_{name}(l, e) {}\n", c.c_expr()));
        }
        // Waves are numbered along n first (MatrixInstr::wave_origin).
        s.push_str(&format!(
            "#define {p}_WAVE_ROW(w) (((w) / {p}_WAVES_N) * {p}_WAVE_TILE_M)\n\
             #define {p}_WAVE_COL(w) (((w) % {p}_WAVES_N) * {p}_WAVE_TILE_N)\n"
        ));
    }
    for a in ATTN_TILINGS {
        let p = format!("GRETA_{}", a.name);
        s.push_str(&format!(
            "// attn_prefill_f16 on {}: the layouts of GRETA_{}\n",
            a.instr.targets, a.instr.name
        ));
        for (name, v) in [
            ("THREADS", a.threads),
            ("KEYS", a.keys),
            ("QUERIES", a.queries),
        ] {
            s.push_str(&format!("#define {p}_{name} {v}\n"));
        }
    }
    s
}
