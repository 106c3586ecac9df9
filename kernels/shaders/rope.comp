#version 450
// Rotary embedding, rotate-half form, on x[tokens][heads][head_dim].
// cos/sin come from a [tokens][head_dim/2][2] table the runtime computes in
// f64 and rounds once, so accuracy does not depend on the GPU's trig.
// One invocation per rotated pair, grid-stride.
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(set = 0, binding = 2) readonly buffer T { vec2 cs[]; };
layout(push_constant) uniform P { uint tokens; uint heads; uint head_dim; } p;

void main() {
    uint h2 = p.head_dim >> 1;
    uint total = p.tokens * p.heads * h2;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += stride) {
        uint i = idx % h2;
        uint th = idx / h2;
        uint t = th / p.heads;
        uint base = th * p.head_dim;
        vec2 r = cs[t * h2 + i];
        float a = x[base + i];
        float b = x[base + i + h2];
        y[base + i] = a * r.x - b * r.y;
        y[base + i + h2] = a * r.y + b * r.x;
    }
}
