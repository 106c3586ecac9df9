#version 450
// rope_kv_f16: RoPE ("rotate half") of a fused QKV projection. qkv is
// [tokens][3][heads][head_dim] f16; q (rotated) goes to q[tokens][heads][head_dim],
// k (rotated) and v (copied) to rows pos0 + t of the caches [max_seq][heads][head_dim].
// Nothing else of the caches is touched. f16 travels as 32-bit words of two
// halves (no 16-bit storage needed); arithmetic in f32; cos/sin come from a
// [tokens][head_dim/2] table the runtime computes in f64 and rounds once
// (as rope.comp), so accuracy does not depend on the GPU's trig.
// One invocation per pair of words (elements i, i+1 and i+h, i+h+1 with
// h = head_dim/2, i even) of one token and head, grid-stride.
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer QKV { uint qkv[]; };
layout(set = 0, binding = 1) writeonly buffer Qo { uint q[]; };
layout(set = 0, binding = 2) buffer KC { uint kc[]; };
layout(set = 0, binding = 3) buffer VC { uint vc[]; };
layout(set = 0, binding = 4) readonly buffer T { vec2 cs[]; };
layout(push_constant) uniform P { uint tokens; uint heads; uint head_dim; uint pos0; } p;

uvec2 rot(uint lo, uint hi, vec2 c0, vec2 c1) {
    vec2 a = unpackHalf2x16(lo);
    vec2 b = unpackHalf2x16(hi);
    vec2 ya = vec2(a.x * c0.x - b.x * c0.y, a.y * c1.x - b.y * c1.y);
    vec2 yb = vec2(a.x * c0.y + b.x * c0.x, a.y * c1.y + b.y * c1.x);
    return uvec2(packHalf2x16(ya), packHalf2x16(yb));
}

void main() {
    uint half_ = p.head_dim >> 1;
    uint hw = half_ >> 1;  // words per half-head
    uint d2 = p.heads * p.head_dim / 2;  // words per [heads][head_dim] row
    uint total = p.tokens * p.heads * hw;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += stride) {
        uint w = idx % hw;
        uint th = idx / hw;
        uint t = th / p.heads;
        uint h = th % p.heads;
        uint hoff = h * (p.head_dim / 2) + w;
        uint src = t * 3u * d2 + hoff;
        vec2 c0 = cs[t * half_ + 2u * w];
        vec2 c1 = cs[t * half_ + 2u * w + 1u];
        uvec2 yq = rot(qkv[src], qkv[src + hw], c0, c1);
        uvec2 yk = rot(qkv[src + d2], qkv[src + d2 + hw], c0, c1);
        uint dq = t * d2 + hoff;
        q[dq] = yq.x;
        q[dq + hw] = yq.y;
        uint dc = (p.pos0 + t) * d2 + hoff;
        kc[dc] = yk.x;
        kc[dc + hw] = yk.y;
        vc[dc] = qkv[src + 2u * d2];
        vc[dc + hw] = qkv[src + 2u * d2 + hw];
    }
}
