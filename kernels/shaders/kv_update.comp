#version 450
// Writes n_new rows of K and V at position pos of the caches:
// cache[l][pos + j][e] = new[l][j][e], e < row = heads * head_dim.
// Everything else in the caches is left untouched. Grid-stride over the new elements.
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer KN { float kn[]; };
layout(set = 0, binding = 1) readonly buffer VN { float vn[]; };
layout(set = 0, binding = 2) buffer KC { float kc[]; };
layout(set = 0, binding = 3) buffer VC { float vc[]; };
layout(push_constant) uniform P { uint layers; uint max_seq; uint row; uint pos; uint n_new; } p;

void main() {
    uint total = p.layers * p.n_new * p.row;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += stride) {
        uint e = idx % p.row;
        uint lj = idx / p.row;
        uint j = lj % p.n_new;
        uint l = lj / p.n_new;
        uint dst = (l * p.max_seq + p.pos + j) * p.row + e;
        kc[dst] = kn[idx];
        vc[dst] = vn[idx];
    }
}
