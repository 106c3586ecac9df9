#version 450
// Empty kernel: measures per-dispatch overhead.
layout(local_size_x = 64) in;
void main() {}
