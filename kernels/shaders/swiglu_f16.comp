#version 450
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
//! variant swiglu_f16
//! variant swiglu_f16_v8 V8
// a[r][c] = silu(gu[r][c]) * gu[r][cols + c], silu(z) = z / (1 + exp(-z));
// f16 in and out, f32 arithmetic, a rounded once. Grid-stride over the
// output; the _v8 variant (cols % 8 == 0) moves 16-byte vectors of 8
// halves (one of gate, one of up, one of a per step).
//
// Specialization constants: 0 workgroup size.
layout(local_size_x_id = 0) in;
#ifdef V8
layout(set = 0, binding = 0) readonly buffer GU { uvec4 gu[]; };
layout(set = 0, binding = 1) writeonly buffer A { uvec4 a[]; };
#else
layout(set = 0, binding = 0) readonly buffer GU { float16_t gu[]; };
layout(set = 0, binding = 1) writeonly buffer A { float16_t a[]; };
#endif
layout(push_constant) uniform P { uint rows; uint cols; } p;

vec2 silu_mul(vec2 g, vec2 u) { return g / (1.0 + exp(-g)) * u; }

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
#ifdef V8
    uint c8 = p.cols >> 3;
    uint n = p.rows * c8;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
        uint r = i / c8;
        uint c = i - r * c8;
        uvec4 gv = gu[r * 2u * c8 + c];
        uvec4 uv = gu[r * 2u * c8 + c8 + c];
        a[i] = uvec4(packHalf2x16(silu_mul(unpackHalf2x16(gv.x), unpackHalf2x16(uv.x))),
                     packHalf2x16(silu_mul(unpackHalf2x16(gv.y), unpackHalf2x16(uv.y))),
                     packHalf2x16(silu_mul(unpackHalf2x16(gv.z), unpackHalf2x16(uv.z))),
                     packHalf2x16(silu_mul(unpackHalf2x16(gv.w), unpackHalf2x16(uv.w))));
    }
#else
    uint n = p.rows * p.cols;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
        uint r = i / p.cols;
        uint c = i - r * p.cols;
        float g = float(gu[r * 2u * p.cols + c]);
        float u = float(gu[r * 2u * p.cols + p.cols + c]);
        a[i] = float16_t(g / (1.0 + exp(-g)) * u);
    }
#endif
}
