// Must compile: fp32 is implemented by the cpu backend.
#include <swinfer/swinfer.hpp>

int main() { return sizeof(swinfer::swin_unetr<swinfer::backend::cpu, swinfer::precision::fp32>) > 0 ? 0 : 1; }
